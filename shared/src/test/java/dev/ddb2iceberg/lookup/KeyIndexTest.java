package dev.ddb2iceberg.lookup;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.export.ExportLocation;
import dev.ddb2iceberg.function.MergerSettings;
import dev.ddb2iceberg.index.DiskCache;
import dev.ddb2iceberg.index.IndexCache;
import dev.ddb2iceberg.index.IndexEntries;
import dev.ddb2iceberg.index.IndexKeys;
import dev.ddb2iceberg.index.IndexManifest;
import dev.ddb2iceberg.index.KeyIndex;
import dev.ddb2iceberg.load.ExportLoader;
import dev.ddb2iceberg.maintenance.Maintenance;
import dev.ddb2iceberg.maintenance.MaintenanceOptions;
import dev.ddb2iceberg.maintenance.MaintenanceTask;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.merge.MergeResult;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.status.TableStatus;
import dev.ddb2iceberg.table.DerivedFiles;
import dev.ddb2iceberg.table.TableLayout;
import dev.ddb2iceberg.testkit.DynamoDbExportFiles;
import dev.ddb2iceberg.testkit.ExpectedTable;
import dev.ddb2iceberg.testkit.KeyedWorkload;
import dev.ddb2iceberg.testkit.LiveRows;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.LogCapture;
import dev.ddb2iceberg.testkit.TableAssertions;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.PartitionKey;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericFileWriterFactory;
import org.apache.iceberg.data.InternalRecordWrapper;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.FanoutDataWriter;
import org.apache.iceberg.io.OutputFileFactory;
import org.apache.iceberg.io.SupportsPrefixOperations;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The key index against the scan it replaces, on the embedded S3 server and a real catalog:
 * across merges, export loads and compactions, for keys the table holds and keys it never held,
 * the index must name exactly the rows (file, position, sequence number) the scan of the key
 * columns finds. A wrong position from the index (say, MergeWriter's positions off by one) fails
 * {@link #theIndexFindsExactlyTheRowsTheScanFinds}.
 */
@ExtendWith(S3ServerExtension.class)
class KeyIndexTest {
    @TempDir
    Path dir;

    private EmbeddedS3Server server;
    private MergerSettings settings;
    private Catalog catalog;
    private StagingStore store;
    private final ExpectedTable model = new ExpectedTable();
    private final Map<String, String> env = new HashMap<>();
    private final ExecutorService pool = Executors.newFixedThreadPool(4);

    @BeforeEach
    void setUp(EmbeddedS3Server server) {
        this.server = server;
        env.putAll(new LocalStack(server, S3ServerExtension.newBucket(server), dir).environment("orders"));
        env.put("KEY_INDEX", "on");
        env.put("KEY_INDEX_PARTS", "8");
        configure();
    }

    private void configure() {
        settings = MergerSettings.from(new Environment(env));
        catalog = settings.catalog().load();
        store = new StagingStore(server.newClient(), settings.staging());
    }

    @AfterEach
    void stopPool() {
        pool.shutdownNow();
    }

    private void stage(List<Change> changes) {
        TableAssertions.stage(store, changes);
        model.apply(changes);
    }

    private MergeResult merge() {
        return new Merger(catalog, settings.table(), store, settings.options()).run();
    }

    /** Merges with these options and returns the messages logged meanwhile. */
    private List<String> mergeLogging(MergeOptions options) {
        try (LogCapture logs = LogCapture.json()) {
            new Merger(catalog, settings.table(), store, options).run();
            return logs.all().stream().map(l -> l.path("message").asText()).toList();
        }
    }

    private Table table() {
        return catalog.loadTable(TableIdentifier.of(
                settings.table().namespace(), settings.table().name()));
    }

    private void assertTableEqualsModel() {
        TableAssertions.assertHolds(table(), model);
    }

    /** Each key's rows as "file@position#sequence", sorted, for comparing two answers. */
    private static Map<List<Object>, Set<String>> rows(List<List<Object>> keys, LiveRowLookup.Found found) {
        return LiveRows.described(keys, found);
    }

    /** Asks both lookups for the keys 0..keySpace-1 (held, removed, never held) and compares. */
    private LiveRowLookup.Found assertIndexAgreesWithScan(KeyedWorkload w, int keySpace) {
        return assertIndexAgreesWithScan(w, keySpace, new IndexLookup(pool, new IndexCache(64L << 20), 8, 64L << 20));
    }

    private LiveRowLookup.Found assertIndexAgreesWithScan(KeyedWorkload w, int keySpace, IndexLookup lookup) {
        Table table = table();
        TableLayout layout = TableLayout.of(table);
        List<List<Object>> keys = new ArrayList<>();
        for (int i = 0; i < keySpace; i++) {
            Map<String, DdbValue> key = w.key(i);
            keys.add(layout.keyOf(new Change(key, Operation.REMOVE, null, "1", 0, false)));
        }
        long snapshot = table.currentSnapshot().snapshotId();
        LiveRowLookup.Found scan = new ScanLookup(pool).find(table, layout, snapshot, keys);
        LiveRowLookup.Found index = lookup.find(table, layout, snapshot, keys);
        Map<List<Object>, Set<String>> expected = rows(keys, scan);
        Map<List<Object>, Set<String>> actual = rows(keys, index);
        List<String> differences = new ArrayList<>();
        for (List<Object> key : keys) {
            Set<String> e = expected.getOrDefault(key, Set.of());
            Set<String> a = actual.getOrDefault(key, Set.of());
            if (!e.equals(a)) {
                differences.add(key + ": scan " + e + ", index " + a);
            }
        }
        assertTrue(
                differences.isEmpty(),
                () -> differences.size() + " keys where the index and the scan of the key" + " columns differ, e.g. "
                        + differences.subList(0, Math.min(3, differences.size())));
        return index;
    }

    @Test
    void theIndexFindsExactlyTheRowsTheScanFinds() {
        KeyedWorkload w = new KeyedWorkload(11, 300);
        for (int run = 0; run < 6; run++) {
            stage(w.next(250));
            merge();
            LiveRowLookup.Found index = assertIndexAgreesWithScan(w, 320);
            assertEquals(0, index.filesRead(), "after merge " + run + " the index answered without reading data files");
            assertNotNull(KeyIndex.manifestOf(table().currentSnapshot()), "each merge names its index");
        }
        assertTableEqualsModel();
        TableStatus.KeyIndexStatus status = TableStatus.of("orders", table(), store, 128L << 20, Clock.systemUTC())
                .keyIndex();
        assertNotNull(status, "status shows the index");
        assertNull(status.damaged());
        assertEquals(8, status.parts(), "KEY_INDEX_PARTS");
        assertEquals(5, status.deltas(), "one delta per merge after the first, which built the parts");
        assertTrue(status.entries() > 0 && status.deltaEntries() > 0 && status.bytes() > 0, status::toString);
    }

    @ParameterizedTest(name = "format v{0}")
    @ValueSource(ints = {2, 3})
    void compactionRecordsWhereItMovedRowsSoTheNextMergeNeedsNoRebuild(int formatVersion) {
        env.put("TABLE_FORMAT_VERSION", Integer.toString(formatVersion));
        env.put("REWRITE_FILES_BELOW_BYTES", "0"); // merges leave their small files and deletes for compaction
        configure();
        KeyedWorkload w = new KeyedWorkload(12, 200);
        for (int run = 0; run < 3; run++) {
            stage(w.next(200));
            merge();
        }
        var compaction = new Maintenance(
                        table(), MaintenanceOptions.DEFAULTS, "s3://unused/staging/", Clock.systemUTC())
                .run(EnumSet.of(MaintenanceTask.COMPACT), false)
                .compaction();
        assertTrue(compaction.filesRewritten() > 0, "compaction rewrote files: " + compaction);
        assertNotNull(
                table().currentSnapshot().summary().get(PipelineProperties.KEY_INDEX_MOVES),
                "compaction names its moves");
        assertIndexAgreesWithScan(w, 220); // the parent's index plus the moves, before any merge
        stage(w.next(200));
        List<String> messages = mergeLogging(settings.options());
        assertTrue(
                messages.stream().noneMatch(m -> m.startsWith("Rebuilding")),
                () -> "no rebuild after a compaction: " + messages);
        assertIndexAgreesWithScan(w, 220);
        assertTableEqualsModel();
    }

    @Test
    void aRebuildTooBigForItsMemoryBudgetSortsThroughRunsInStorageAndFindsWhatTheScanFinds() {
        env.put("KEY_INDEX", "off"); // a table written without the index, as before an upgrade
        configure();
        KeyedWorkload w = new KeyedWorkload(18, 300);
        for (int run = 0; run < 3; run++) {
            stage(w.next(250));
            merge();
        }
        try (LogCapture log = LogCapture.json()) {
            // A budget of one byte: every data file's entries are written out as a sorted run, and
            // each part is merged from the runs of all of them.
            LiveRowLookup.Found found =
                    assertIndexAgreesWithScan(w, 320, new IndexLookup(pool, new IndexCache(0), 8, 1));
            assertEquals(found.filesInTable(), found.filesRead(), "the rebuild read the data files");
            List<String> messages =
                    log.all().stream().map(l -> l.path("message").asText()).toList();
            assertTrue(
                    messages.stream().anyMatch(m -> m.contains("one pass over the key columns")),
                    () -> "the rebuild reads the key columns once: " + messages);
            assertTrue(
                    messages.stream()
                            .anyMatch(m -> m.matches("Key index rebuild: merging the ([2-9]|\\d\\d+) runs .*")),
                    () -> "each part is merged from several runs: " + messages);
        }
        String folder = DerivedFiles.location(table()) + "key-index/";
        List<String> left = new ArrayList<>();
        ((SupportsPrefixOperations) table().io()).listPrefix(folder).forEach(f -> {
            if (f.location().contains("/rebuild-")) {
                left.add(f.location());
            }
        });
        assertEquals(List.of(), left, "the rebuild deletes its sorted runs once the parts are written");
    }

    /**
     * Another writer's compaction, as S3 Tables' or Spark's would be: every data file rewritten, its
     * deletes applied, rows in a new order (so old positions are wrong), committed as a plain
     * {@code replace} that says nothing of the key index.
     */
    private void rewriteEverythingAsAnotherWriter() throws IOException {
        Table table = table();
        Set<DataFile> old = new HashSet<>();
        Set<DeleteFile> oldDeletes = new HashSet<>();
        List<Record> rows = new ArrayList<>();
        try (var tasks = table.newScan().planFiles()) {
            for (FileScanTask task : tasks) {
                old.add(task.file());
                oldDeletes.addAll(task.deletes());
                try (var read = dev.ddb2iceberg.table.TaskRows.read(table, task, table.schema())) {
                    read.forEach(r -> rows.add(r.copy()));
                }
            }
        }
        Collections.shuffle(rows, new Random(7));
        var writers = new GenericFileWriterFactory.Builder(table)
                .dataFileFormat(FileFormat.PARQUET)
                .build();
        var files = OutputFileFactory.builderFor(table, 9, 9)
                .format(FileFormat.PARQUET)
                .build();
        var writer = new FanoutDataWriter<Record>(writers, files, table.io(), 128L << 20);
        var partition = new PartitionKey(table.spec(), table.schema());
        var wrapper = new InternalRecordWrapper(table.schema().asStruct());
        try (writer) {
            for (Record row : rows) {
                partition.partition(wrapper.wrap(row));
                writer.write(row, table.spec(), partition);
            }
        }
        table.newRewrite()
                .validateFromSnapshot(table.currentSnapshot().snapshotId())
                .rewriteFiles(old, oldDeletes, Set.copyOf(writer.result().dataFiles()), Set.of())
                .commit();
    }

    @Test
    void aRewriteByAnotherWriterIsFollowedByReadingOnlyTheFilesItWroteNotRebuilt() throws Exception {
        KeyedWorkload w = new KeyedWorkload(19, 200);
        for (int run = 0; run < 3; run++) {
            stage(w.next(200));
            merge();
        }
        rewriteEverythingAsAnotherWriter();
        assertNull(
                table().currentSnapshot().summary().get(PipelineProperties.KEY_INDEX_MOVES),
                "the rewrite says nothing of the index");
        // The lookup follows the rewrite: the answer equals the scan's, row for row (new files, new positions).
        LiveRowLookup.Found found = assertIndexAgreesWithScan(w, 220);
        assertTrue(
                found.filesRead() > 0 && found.filesRead() <= found.filesInTable(),
                "it read the rewrite's new files: " + found.filesRead() + " of " + found.filesInTable());
        stage(w.next(200));
        List<String> messages = mergeLogging(settings.options());
        assertTrue(messages.stream().noneMatch(m -> m.startsWith("Rebuilding")), () -> "no rebuild: " + messages);
        assertTrue(
                messages.stream().anyMatch(m -> m.contains("by another writer rewrote data files")),
                messages::toString);
        assertIndexAgreesWithScan(w, 220);
        assertTableEqualsModel();
    }

    @Test
    void aCommitByAnotherWriterMakesTheNextMergeRebuildTheIndex() {
        KeyedWorkload w = new KeyedWorkload(17, 200);
        stage(w.next(200));
        merge();
        table().newAppend().commit(); // another writer: its snapshot says nothing of the key index
        stage(w.next(200));
        List<String> messages = mergeLogging(settings.options());
        assertTrue(
                messages.stream()
                        .anyMatch(m -> m.startsWith("Rebuilding the key index") && m.contains("names no key index")),
                () -> "a log line says why the index is rebuilt: " + messages);
        assertIndexAgreesWithScan(w, 220);
        assertTableEqualsModel();
    }

    @Test
    void aLostOrTruncatedIndexFileIsRebuiltAndNeverGivesAWrongRow() throws Exception {
        KeyedWorkload w = new KeyedWorkload(13, 200);
        stage(w.next(300));
        merge();
        stage(w.next(100));
        merge();
        var files = KeyIndex.filesOf(table(), table().currentSnapshot());
        String delta =
                files.stream().filter(f -> f.endsWith("-delta.bin")).findFirst().orElseThrow();
        String part =
                files.stream().filter(f -> f.contains("-part-")).findFirst().orElseThrow();
        // Truncate the delta (keep its first bytes) and lose a part.
        byte[] bytes = table().io().newInputFile(delta).newStream().readAllBytes();
        try (var out = table().io().newOutputFile(delta).createOrOverwrite()) {
            out.write(bytes, 0, bytes.length / 2);
        }
        table().io().deleteFile(part);
        // A warm cache would still hold the good copies: a fresh container's lookup reads storage.
        TableLayout layout = TableLayout.of(table());
        List<Object> key = layout.keyOf(new Change(w.key(1), Operation.REMOVE, null, "1", 0, false));
        LiveRowLookup.Found damaged = new IndexLookup(pool, new IndexCache(64L << 20), 8, 64L << 20)
                .find(table(), layout, table().currentSnapshot().snapshotId(), List.of(key));
        assertEquals(damaged.filesInTable(), damaged.filesRead(), "a damaged index is rebuilt from every data file");
        stage(w.next(150));
        settings = MergerSettings.from(new Environment(env));
        merge();
        assertIndexAgreesWithScan(w, 220);
        assertTableEqualsModel();
    }

    @Test
    void anExportLoadAddsItsRowsToTheIndex() {
        KeyedWorkload w = new KeyedWorkload(14, 200);
        List<Map<String, DdbValue>> exported = new ArrayList<>();
        ExpectedTable atExport = new ExpectedTable();
        List<Change> inserts = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            inserts.add(w.upsert(i, Operation.INSERT));
        }
        atExport.apply(inserts);
        exported.addAll(atExport.items().values());
        model.apply(inserts);
        String location = new DynamoDbExportFiles(
                        server.newClient(), settings.staging().bucket(), "exports/")
                .writeFull("01764000000000-index", Instant.now().minusSeconds(60), exported, 3);
        new ExportLoader(catalog, settings.table(), store, settings.options().withMaxChanges(70), server.newClient())
                .run(
                        new ExportLoader.Request(
                                ExportLocation.parse(location), List.of("pk", "sk"), Duration.ofMinutes(5), true),
                        Instant.now().plus(Duration.ofMinutes(10)));
        assertNotNull(KeyIndex.manifestOf(table().currentSnapshot()), "each load chunk names the index");
        assertIndexAgreesWithScan(w, 220);
        stage(w.next(200));
        merge();
        assertIndexAgreesWithScan(w, 220);
        assertTableEqualsModel();
    }

    @Test
    void eachMergeFoldsOnePartSoNoMergeRewritesTheWholeIndexAndDeltasStayFew() {
        // Merges that fold no small files: each delta then holds exactly the merge's changes.
        env.put("REWRITE_FILES_BELOW_BYTES", "0");
        configure();
        KeyedWorkload w = new KeyedWorkload(15, 3000);
        stage(w.next(3000));
        merge();
        IndexManifest previous = currentManifest();
        assertTrue(previous.deltas().isEmpty(), "the first merge built the parts: " + previous);
        int parts = previous.parts();
        int perMerge = (parts + KeyIndex.FOLD_WINDOW - 1) / KeyIndex.FOLD_WINDOW;
        for (int run = 1; run <= parts + 3; run++) {
            stage(w.next(40));
            merge();
            IndexManifest now = currentManifest();
            int rewritten = 0;
            for (int p = 0; p < parts; p++) {
                if (!Objects.equals(
                        previous.base().get(p).path(), now.base().get(p).path())) {
                    rewritten++;
                }
            }
            assertTrue(rewritten <= perMerge, "merge " + run + " rewrote " + rewritten + " of " + parts + " parts");
            assertTrue(
                    now.deltas().size() <= parts,
                    "every part absorbs the deltas within " + parts + " merges, so no more are kept: " + now);
            long oldest = now.base().stream()
                    .mapToLong(IndexManifest.Part::absorbed)
                    .min()
                    .orElseThrow();
            assertTrue(
                    now.deltas().stream().allMatch(d -> d.generation() > oldest),
                    "a delta every part absorbed is dropped: " + now);
            previous = now;
        }
        assertIndexAgreesWithScan(w, 3100);
        assertIndexAgreesWithScan(w, 3100, new IndexLookup(pool, new IndexCache(0), 8, 64L << 20));
        assertTableEqualsModel();
    }

    @Test
    void blockReadsAgreeWithWholePartReadsAndTheScanWithACacheFarSmallerThanTheIndex() {
        KeyedWorkload w = new KeyedWorkload(24, 20_000);
        stage(w.next(20_000));
        merge();
        for (int run = 0; run < 4; run++) {
            stage(w.next(2_000));
            merge();
            if (run == 1) {
                new Maintenance(table(), MaintenanceOptions.DEFAULTS, "s3://unused/staging/", Clock.systemUTC())
                        .run(EnumSet.of(MaintenanceTask.COMPACT, MaintenanceTask.EXPIRE), false);
            }
            // 4 KB of cache for an index of hundreds of KB: nearly every block comes from storage.
            assertIndexAgreesWithScan(w, 20_500, new IndexLookup(pool, new IndexCache(4 << 10), 8, 64L << 20));
        }
        IndexCache small = new IndexCache(4 << 10);
        KeyIndex index = KeyIndex.open(table(), KeyIndex.manifestOf(table().currentSnapshot()), small);
        List<byte[]> keys = encodedKeys(w, 20_500);
        Map<IndexEntries.ByteKey, IndexEntries.Entry> byBlocks = index.lookup(keys, pool);
        // The same answer from each part read whole, under the deltas its part has not absorbed.
        IndexManifest m = index.manifest();
        List<IndexEntries> parts = new ArrayList<>();
        for (int p = 0; p < m.parts(); p++) {
            parts.add(index.readPart(p));
        }
        List<IndexEntries> deltas = new ArrayList<>();
        for (IndexManifest.Delta d : m.deltas()) {
            deltas.add(KeyIndex.readFile(table(), d.path()));
        }
        List<String> differences = new ArrayList<>();
        for (byte[] key : keys) {
            int p = IndexKeys.part(key, m.parts());
            IndexEntries.Entry whole = null;
            for (int d = m.deltas().size() - 1; d >= 0 && whole == null; d--) {
                if (m.deltas().get(d).generation() > m.base().get(p).absorbed()) {
                    whole = deltas.get(d).find(key);
                }
            }
            if (whole == null) {
                whole = parts.get(p).find(key);
            }
            IndexEntries.Entry block = byBlocks.get(new IndexEntries.ByteKey(key));
            String expected = whole == null || whole.isTombstone() ? "none" : whole.file() + "@" + whole.position();
            String actual = block == null ? "none" : block.file() + "@" + block.position();
            if (!expected.equals(actual)) {
                differences.add(expected + " vs " + actual);
            }
        }
        assertTrue(
                differences.isEmpty(),
                () -> differences.size() + " keys differ (whole part vs blocks), e.g. "
                        + differences.subList(0, Math.min(3, differences.size())));
        assertTableEqualsModel();
    }

    @Test
    void aLookupReadsOnlyTheBlocksOfItsKeysAndASecondReadsNothingFromStorage() throws IOException {
        KeyedWorkload w = new KeyedWorkload(19, 20_000);
        stage(w.next(20_000));
        merge();
        TableLayout layout = TableLayout.of(table());
        List<byte[]> tenKeys = encodedKeys(w, 10);
        IndexCache cache = new IndexCache(Long.MAX_VALUE);
        KeyIndex index = KeyIndex.open(table(), KeyIndex.manifestOf(table().currentSnapshot()), cache);
        List<List<Object>> held = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            held.add(layout.keyOf(new Change(w.key(i), Operation.REMOVE, null, "1", 0, false)));
        }
        long inTable = new ScanLookup(pool)
                .find(table(), layout, table().currentSnapshot().snapshotId(), held).rows().stream()
                        .filter(live -> !live.isEmpty())
                        .count();
        assertTrue(inTable > 0, "the workload left some of the ten keys in the table");
        assertEquals(inTable, index.lookup(tenKeys, pool).size(), "every key the table holds is found");
        long read = cache.bytesRead();
        assertTrue(
                read > 0 && read < index.manifest().bytes() / 2,
                "ten keys read their blocks and the footers, not the parts: " + read + " of "
                        + index.manifest().bytes() + " bytes");
        index.lookup(tenKeys, pool);
        assertEquals(read, cache.bytesRead(), "a second lookup reads nothing more");

        // A merger that wrote the parts keeps them on disk: its lookups then read nothing from storage.
        IndexCache withDisk = new IndexCache(0, new DiskCache(dir.resolve("disk-cache"), 1L << 30));
        KeyIndex.Build build = KeyIndex.newBuild(table(), index.manifest().parts(), withDisk);
        for (int p = 0; p < index.manifest().parts(); p++) {
            build.writePart(p, index.readPart(p));
        }
        KeyIndex written = build.finish();
        assertEquals(
                index.lookup(tenKeys, pool).keySet(),
                written.lookup(tenKeys, pool).keySet());
        assertEquals(0, withDisk.bytesRead(), "footers and blocks came from the disk cache, not storage");
        assertTrue(withDisk.diskBytesRead() > 0, "the disk cache was read");
        // A damaged local copy is noticed by its checks and read again from storage, not believed.
        for (java.nio.file.Path f :
                java.nio.file.Files.list(dir.resolve("disk-cache")).toList()) {
            byte[] b = java.nio.file.Files.readAllBytes(f);
            for (int i = 0; i < b.length; i += 7) {
                b[i] ^= 0x5A;
            }
            java.nio.file.Files.write(f, b);
        }
        assertEquals(
                described(index.lookup(tenKeys, pool)),
                described(written.lookup(tenKeys, pool)),
                "the same entries, from storage");
        assertTrue(withDisk.bytesRead() > 0, "read from storage once the local copies failed their checks");
        assertTrue(withDisk.diskBytesRead() > 0, "the disk cache was read");
    }

    @Test
    void aCacheWithRoomKeepsBlocksDecompressedAndTheyAnswerAsStoredBlocksDo() {
        KeyedWorkload w = new KeyedWorkload(31, 20_000);
        stage(w.next(20_000));
        merge();
        stage(w.next(2_000));
        merge();
        List<byte[]> keys = encodedKeys(w, 20_500);
        String manifest = KeyIndex.manifestOf(table().currentSnapshot());

        IndexCache roomy = new IndexCache(Long.MAX_VALUE);
        Map<IndexEntries.ByteKey, String> first =
                described(KeyIndex.open(table(), manifest, roomy).lookup(keys, pool));
        assertTrue(
                roomy.decompressedBlocks() > 0, "a cache with room for the whole index keeps its blocks decompressed");
        long read = roomy.bytesRead();
        Map<IndexEntries.ByteKey, String> second =
                described(KeyIndex.open(table(), manifest, roomy).lookup(keys, pool));
        assertEquals(read, roomy.bytesRead(), "the second lookup reads nothing from storage");

        // A budget under what the index takes decompressed keeps the blocks as stored.
        long indexBytes =
                KeyIndex.open(table(), manifest, new IndexCache(0)).manifest().bytes();
        IndexCache tight = new IndexCache(2 * indexBytes);
        Map<IndexEntries.ByteKey, String> stored =
                described(KeyIndex.open(table(), manifest, tight).lookup(keys, pool));
        assertEquals(
                0, tight.decompressedBlocks(), "a budget of twice the index's stored bytes keeps blocks as stored");
        assertTrue(stored.size() > 1_000, "thousands of the keys are in the table: " + stored.size());
        assertEquals(stored, first, "decompressed blocks, first read, answer as stored ones");
        assertEquals(stored, second, "decompressed blocks, from the cache, answer as stored ones");
    }

    @Test
    void filesANewIndexVersionDropsLeaveTheCacheAndTheFilesItKeepsStay() {
        KeyedWorkload w = new KeyedWorkload(32, 5_000);
        stage(w.next(5_000));
        merge();
        KeyIndex table = KeyIndex.open(table(), KeyIndex.manifestOf(table().currentSnapshot()), new IndexCache(0));
        // A merger that wrote the parts holds them on disk, and in memory once it looked keys up.
        IndexCache cache = new IndexCache(Long.MAX_VALUE, new DiskCache(dir.resolve("forget-cache"), 1L << 30));
        KeyIndex.Build build = KeyIndex.newBuild(table(), table.manifest().parts(), cache);
        for (int p = 0; p < table.manifest().parts(); p++) {
            build.writePart(p, table.readPart(p));
        }
        KeyIndex index = build.finish();
        index.lookup(encodedKeys(w, 5_000), pool);
        IndexManifest before = index.manifest();
        for (String file : before.files()) {
            assertTrue(cache.heldBytes(file) > 0 && cache.onDisk(file), file + " is held in memory and on disk");
        }

        // Changes to more than an eighth of the part folded, so the fold rewrites it (fewer would go
        // into its overlay, replacing nothing).
        IndexEntries.Builder changes = new IndexEntries.Builder();
        for (byte[] key : encodedKeys(w, 1_000)) {
            changes.add(key, "s3://bucket/data/new.parquet", 7, new byte[] {1});
        }
        KeyIndex.Written next = index.withChanges(table(), changes.build(), pool);
        IndexManifest after =
                KeyIndex.open(table(), next.manifest(), new IndexCache(0)).manifest();

        Set<String> dropped = new HashSet<>(before.files());
        dropped.removeAll(after.files());
        assertTrue(!dropped.isEmpty(), "the new version folds a part, replacing it: " + after.files());
        for (String file : dropped) {
            assertEquals(0, cache.heldBytes(file), "memory still held for " + file + ", which the new version dropped");
            assertTrue(!cache.onDisk(file), "the disk cache still holds " + file + ", which the new version dropped");
        }
        Set<String> kept = new HashSet<>(before.files());
        kept.retainAll(after.files());
        assertTrue(!kept.isEmpty(), "the new version keeps most parts");
        for (String file : kept) {
            assertTrue(cache.heldBytes(file) > 0, "the cache let go of " + file + ", which the new version keeps");
            assertTrue(cache.onDisk(file), "the disk cache let go of " + file + ", which the new version keeps");
        }
        List<byte[]> keys = encodedKeys(w, 300);
        assertEquals(
                described(KeyIndex.open(table(), next.manifest(), new IndexCache(0))
                        .lookup(keys, pool)),
                described(KeyIndex.open(table(), next.manifest(), cache).lookup(keys, pool)),
                "lookups through the cache that let go answer as a fresh one does");
    }

    @Test
    void aFoldHandsACacheWithRoomTheBlocksItWroteSoTheNextLookupReadsOnlyTheirFooters() {
        KeyedWorkload w = new KeyedWorkload(33, 5_000);
        stage(w.next(5_000));
        merge();
        String manifest = KeyIndex.manifestOf(table().currentSnapshot());
        IndexEntries.Builder changes = new IndexEntries.Builder();
        for (byte[] key : encodedKeys(w, 40)) {
            changes.add(key, "s3://bucket/data/new.parquet", 7, new byte[] {1});
        }
        IndexEntries delta = changes.build();
        List<byte[]> keys = encodedKeys(w, 5_000);

        // A warm merger: every block of the index held decompressed, then a commit folds a part.
        IndexCache roomy = new IndexCache(Long.MAX_VALUE);
        KeyIndex index = KeyIndex.open(table(), manifest, roomy);
        index.lookup(keys, pool);
        KeyIndex.Written next = index.withChanges(table(), delta, pool);
        IndexManifest after =
                KeyIndex.open(table(), next.manifest(), new IndexCache(0)).manifest();
        // Fewer changes than an eighth of a part: the fold writes the part's overlay, not the part.
        List<IndexManifest.Part> newParts = java.util.stream.Stream.concat(
                        after.base().stream(), after.overlays().stream())
                .filter(p -> p.path() != null && next.files().contains(p.path()))
                .toList();
        assertTrue(!newParts.isEmpty(), "the commit folds a part: " + next.files());
        assertTrue(!after.overlays().isEmpty(), "into its overlay: " + after);
        long footers = newParts.stream().mapToLong(IndexManifest.Part::footer).sum();

        long read = roomy.bytesRead();
        Map<IndexEntries.ByteKey, String> throughTheFold =
                described(KeyIndex.open(table(), next.manifest(), roomy).lookup(keys, pool));
        assertTrue(
                roomy.bytesRead() - read <= footers,
                "the next lookup read " + (roomy.bytesRead() - read) + " bytes; the new parts' footers are " + footers
                        + ", their blocks should have come from the fold");
        assertEquals(
                described(KeyIndex.open(table(), next.manifest(), new IndexCache(0))
                        .lookup(keys, pool)),
                throughTheFold,
                "the blocks the fold handed over answer as the stored part does");

        // A cache whose budget keeps blocks as stored gets nothing from the fold.
        IndexCache tight = new IndexCache(2
                * KeyIndex.open(table(), manifest, new IndexCache(0)).manifest().bytes());
        KeyIndex.Written tighter = KeyIndex.open(table(), manifest, tight).withChanges(table(), delta, pool);
        for (String file : tighter.files()) {
            if (file.contains("-part-")) {
                assertEquals(0, tight.heldBytes(file), "a cache that keeps blocks as stored holds none of " + file);
            }
        }
    }

    /** The encoded keys of the workload's first {@code n} items, as a merge looks them up. */
    private List<byte[]> encodedKeys(KeyedWorkload w, int n) {
        TableLayout layout = TableLayout.of(table());
        List<byte[]> keys = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            keys.add(IndexKeys.encode(layout.keyOf(new Change(w.key(i), Operation.REMOVE, null, "1", 0, false))));
        }
        return keys;
    }

    /** Entries as "file@position#sequence" by key (entries hold arrays, which compare by identity). */
    private static Map<IndexEntries.ByteKey, String> described(Map<IndexEntries.ByteKey, IndexEntries.Entry> found) {
        Map<IndexEntries.ByteKey, String> out = new HashMap<>();
        found.forEach((k, e) -> out.put(k, e.file() + "@" + e.position() + "#" + e.sequence()));
        return out;
    }

    private IndexManifest currentManifest() {
        return KeyIndex.open(table(), KeyIndex.manifestOf(table().currentSnapshot()), new IndexCache(0))
                .manifest();
    }

    private static final com.fasterxml.jackson.databind.ObjectMapper JSON =
            new com.fasterxml.jackson.databind.ObjectMapper();

    /** A manifest's JSON, to change as a test needs. */
    private static com.fasterxml.jackson.databind.node.ObjectNode readJson(Table table, String location) {
        try (var in = table.io().newInputFile(location).newStream()) {
            return (com.fasterxml.jackson.databind.node.ObjectNode) JSON.readTree(in);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static void writeJson(Table table, String location, com.fasterxml.jackson.databind.JsonNode tree) {
        try (var out = table.io().newOutputFile(location).createOrOverwrite()) {
            JSON.writeValue(out, tree);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** A key of the overlay tests' index: its encoding, as a merge looks it up. */
    private static byte[] overlayKey(int n) {
        return IndexKeys.encode(List.of("item-" + n, (long) n));
    }

    private static String described(IndexEntries.Entry e) {
        return e == null ? "none" : e.file() + "@" + e.position() + "#" + e.sequence();
    }

    /** Looks every key up in the index the manifest names and compares each answer with the model's. */
    private static void assertLookupsAgree(
            Table table,
            String manifest,
            IndexCache cache,
            Map<Integer, String> model,
            int keys,
            ExecutorService pool,
            String when) {
        List<byte[]> all = new ArrayList<>();
        for (int n = 0; n < keys; n++) {
            all.add(overlayKey(n));
        }
        IndexEntries.Entry[] found = KeyIndex.open(table, manifest, cache).lookupEach(all, pool);
        List<String> differences = new ArrayList<>();
        for (int n = 0; n < keys; n++) {
            String expected = model.getOrDefault(n, "none");
            if (!expected.equals(described(found[n]))) {
                differences.add("key " + n + ": expected " + expected + ", found " + described(found[n]));
            }
        }
        assertTrue(
                differences.isEmpty(),
                () -> when + ": " + differences.size() + " keys the index answers wrongly, e.g. "
                        + differences.subList(0, Math.min(3, differences.size())));
    }

    @Test
    void aLargePartTakesSmallFoldsIntoItsOverlayAndEveryLookupAgreesWithTheModel() {
        stage(new KeyedWorkload(40, 10).next(10));
        merge(); // a table, for its storage: the index below is written and read directly
        Table table = table();
        IndexCache cache = new IndexCache(64L << 20);
        int parts = 4;
        int built = 8_000;
        Map<Integer, String> model = new HashMap<>();
        KeyIndex.Build build = KeyIndex.newBuild(table, parts, cache);
        IndexEntries.Builder[] byPart = new IndexEntries.Builder[parts];
        for (int p = 0; p < parts; p++) {
            byPart[p] = new IndexEntries.Builder();
        }
        for (int n = 0; n < built; n++) {
            IndexEntries.Entry e =
                    new IndexEntries.Entry(overlayKey(n), "built-" + (n % 5), n, java.math.BigInteger.valueOf(n));
            byPart[IndexKeys.part(e.key(), parts)].add(e);
            model.put(n, described(e));
        }
        for (int p = 0; p < parts; p++) {
            build.writePart(p, byPart[p].build());
        }
        String manifest = build.finish()
                .withChanges(table, new IndexEntries.Builder().build(), pool)
                .manifest();

        Random random = new Random(12);
        int keys = built;
        int overlayFolds = 0;
        int overlaysFoldedIntoTheirParts = 0;
        for (int commit = 1; commit <= 40; commit++) {
            // A merge's delta: keys updated, removed (some of them removed already), and new.
            IndexEntries.Builder delta = new IndexEntries.Builder();
            Set<Integer> touched = new HashSet<>();
            for (int j = 0; j < 120; j++) {
                int n = j < 100 ? random.nextInt(keys) : keys++;
                if (!touched.add(n)) {
                    continue;
                }
                IndexEntries.Entry e = j % 4 == 0 && j < 100
                        ? new IndexEntries.Entry(overlayKey(n), null, 0, java.math.BigInteger.ZERO)
                        : new IndexEntries.Entry(
                                overlayKey(n),
                                "commit-" + commit,
                                j,
                                java.math.BigInteger.valueOf(100_000L * commit + j));
                delta.add(e);
                if (e.isTombstone()) {
                    model.remove(n);
                } else {
                    model.put(n, described(e));
                }
            }
            KeyIndex before = KeyIndex.open(table, manifest, cache);
            if (commit % 2 == 0) {
                before.foldAhead(table); // as a merge does; on odd commits withChanges folds itself
            }
            manifest = before.withChanges(table, delta.build(), pool).manifest();
            IndexManifest was = before.manifest();
            IndexManifest now = KeyIndex.open(table, manifest, cache).manifest();
            for (int p = 0; p < parts; p++) {
                boolean baseRewritten = !Objects.equals(
                        was.base().get(p).path(), now.base().get(p).path());
                boolean overlayRewritten =
                        !Objects.equals(was.overlay(p).path(), now.overlay(p).path());
                if (overlayRewritten && !baseRewritten) {
                    overlayFolds++;
                    assertTrue(
                            now.overlay(p).entries() <= now.base().get(p).entries() * KeyIndex.overlayShare(p),
                            "an overlay stays within its share of its part: " + now);
                }
                if (now.overlay(p).path() != null) {
                    assertTrue(
                            now.files().contains(now.overlay(p).path()) && now.format() == IndexManifest.FORMAT,
                            "a version with overlays lists them among its files (orphan cleanup keeps them), in"
                                    + " the format that has them: " + now);
                }
                if (baseRewritten && was.overlay(p).path() != null) {
                    overlaysFoldedIntoTheirParts++;
                    assertNull(now.overlay(p).path(), "a part rewritten takes its overlay in: " + now);
                }
            }
            assertLookupsAgree(table, manifest, cache, model, keys, pool, "after commit " + commit);
            if (commit % 10 == 0) {
                assertLookupsAgree(
                        table, manifest, new IndexCache(0), model, keys, pool, "cold, after commit " + commit);
            }
        }
        assertTrue(overlayFolds > 10, "most folds went into the parts' overlays: " + overlayFolds);
        assertTrue(overlaysFoldedIntoTheirParts > 0, "an overlay past its share went into its part");

        // Commits with no changes until every part has absorbed every delta: then each part read
        // whole, its overlay laid over it, holds exactly the model's live entries of it.
        for (int commit = 0; commit <= parts; commit++) {
            manifest = KeyIndex.open(table, manifest, cache)
                    .withChanges(table, new IndexEntries.Builder().build(), pool)
                    .manifest();
        }
        KeyIndex last = KeyIndex.open(table, manifest, cache);
        assertEquals(0, last.manifest().deltaEntries(), "every delta with entries absorbed: " + last.manifest());
        assertTrue(!last.manifest().overlays().isEmpty(), "with overlays left to read: " + last.manifest());
        Map<IndexEntries.ByteKey, Integer> numbers = new HashMap<>();
        for (int n = 0; n < keys; n++) {
            numbers.put(new IndexEntries.ByteKey(overlayKey(n)), n);
        }
        Map<Integer, String> read = new HashMap<>();
        for (int p = 0; p < parts; p++) {
            IndexEntries entries = last.readPart(p);
            for (int i = 0; i < entries.size(); i++) {
                IndexEntries.Entry e = entries.entry(i);
                read.put(numbers.get(new IndexEntries.ByteKey(e.key())), described(e));
            }
        }
        // A manifest that names an overlay as a part (damage) is refused, never answered with its tombstones.
        int withOverlay = 0;
        while (last.manifest().overlay(withOverlay).path() == null) {
            withOverlay++;
        }
        com.fasterxml.jackson.databind.node.ObjectNode tree = readJson(table, manifest);
        ((com.fasterxml.jackson.databind.node.ArrayNode) tree.get("base"))
                .set(withOverlay, tree.get("overlays").get(withOverlay).deepCopy());
        String mixedUp = manifest.replace("-manifest.json", "-mixed-up-manifest.json");
        writeJson(table, mixedUp, tree);
        List<byte[]> everyKey = new ArrayList<>();
        for (int n = 0; n < keys; n++) {
            everyKey.add(overlayKey(n));
        }
        KeyIndex damaged = KeyIndex.open(table, mixedUp, new IndexCache(0));
        dev.ddb2iceberg.index.DamagedIndexException refused = org.junit.jupiter.api.Assertions.assertThrows(
                dev.ddb2iceberg.index.DamagedIndexException.class, () -> damaged.lookupEach(everyKey, pool));
        assertTrue(
                refused.getMessage().contains("is a part's overlay, but the manifest names it as a part"),
                refused.getMessage());

        List<String> differences = new ArrayList<>();
        for (int n = 0; n < keys; n++) {
            if (!Objects.equals(model.get(n), read.get(n))) {
                differences.add("key " + n + ": expected " + model.get(n) + ", read " + read.get(n));
            }
        }
        assertTrue(
                differences.isEmpty(),
                () -> differences.size() + " keys where the parts read whole, overlays laid over them, differ from"
                        + " the model, e.g. " + differences.subList(0, Math.min(3, differences.size())));
    }

    @Test
    void aVersionWithoutOverlaysIsWrittenAsBeforeThemAndSuchAManifestReadsBack() {
        KeyedWorkload w = new KeyedWorkload(41, 300);
        stage(w.next(300));
        merge();
        stage(w.next(30));
        merge();
        Table table = table();
        String manifest = KeyIndex.manifestOf(table.currentSnapshot());
        com.fasterxml.jackson.databind.node.ObjectNode tree = readJson(table, manifest);
        // A release from before overlays reads format 2 with exactly these fields, and no others.
        List<String> fields = new ArrayList<>();
        tree.fieldNames().forEachRemaining(fields::add);
        assertEquals(
                List.of("format", "parts", "base", "deltas", "generation", "baseEntries", "deltaEntries", "bytes"),
                fields,
                "a version without overlays has the fields it had before them");
        assertEquals(IndexManifest.FORMAT_WITHOUT_OVERLAYS, tree.get("format").asInt(), "and their format");
        String older = manifest.replace("-manifest.json", "-copy-manifest.json");
        writeJson(table, older, tree);
        IndexManifest read = KeyIndex.open(table, older, new IndexCache(0)).manifest();
        assertTrue(read.overlays().isEmpty(), "read back with no overlays: " + read);
        assertEquals(
                KeyIndex.open(table, manifest, new IndexCache(0)).manifest().base(), read.base(), "and the same parts");
    }

    @Test
    void aDamagedPartMetOnlyWhenFoldingDeltasIsRebuiltNotAFailedRunForever() {
        KeyedWorkload w = new KeyedWorkload(18, 150);
        stage(w.next(150));
        merge();
        for (int run = 1; run <= 3; run++) {
            stage(w.next(20));
            merge();
        }
        // The next merge folds the part that absorbed the fewest deltas; its one change reads another part.
        IndexManifest manifest = currentManifest();
        int victim = 0;
        for (int p = 1; p < manifest.parts(); p++) {
            if (manifest.base().get(p).absorbed() < manifest.base().get(victim).absorbed()) {
                victim = p;
            }
        }
        TableLayout layout = TableLayout.of(table());
        Change next = null;
        for (int i = 0; next == null; i++) {
            Change c = w.upsert(i, Operation.MODIFY);
            if (IndexKeys.part(IndexKeys.encode(layout.keyOf(c)), manifest.parts()) != victim) {
                next = c;
            }
        }
        String lost = manifest.base().get(victim).path();
        table().io().deleteFile(lost);
        stage(List.of(next));
        String missing = lost;
        List<String> messages = mergeLogging(settings.options().withoutKeyIndexCache());
        assertTrue(
                messages.stream().anyMatch(m -> m.startsWith("Rebuilding the key index") && m.contains(missing)),
                () -> "the run commits, and a log line names the lost part: " + messages);
        assertTrue(messages.stream().anyMatch(m -> m.equals("Merge run committed a snapshot")), messages::toString);
        assertIndexAgreesWithScan(w, 160);
        assertTableEqualsModel();
    }

    @Test
    void withTheIndexOffNoIndexIsWrittenAndAStaleOneIsNeverUsedAgain() {
        KeyedWorkload w = new KeyedWorkload(16, 100);
        stage(w.next(100));
        merge();
        assertNotNull(KeyIndex.manifestOf(table().currentSnapshot()));
        env.put("KEY_INDEX", "off");
        configure();
        stage(w.next(100));
        merge();
        assertNull(KeyIndex.manifestOf(table().currentSnapshot()), "a merge without the index names none");
        env.put("KEY_INDEX", "on");
        configure();
        stage(w.next(100));
        assertTrue(
                mergeLogging(settings.options()).stream().anyMatch(m -> m.startsWith("Rebuilding")),
                "the index of two merges ago is not trusted: it is rebuilt");
        assertIndexAgreesWithScan(w, 110);
        assertTableEqualsModel();
    }
}
