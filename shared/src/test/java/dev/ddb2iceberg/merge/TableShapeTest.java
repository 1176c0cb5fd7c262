package dev.ddb2iceberg.merge;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.FaultInjectingBlobStore;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.function.MaintenanceSettings;
import dev.ddb2iceberg.function.MergerSettings;
import dev.ddb2iceberg.lookup.LiveRow;
import dev.ddb2iceberg.maintenance.Maintenance;
import dev.ddb2iceberg.maintenance.MaintenanceResult;
import dev.ddb2iceberg.maintenance.MaintenanceTask;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.table.TableLayout;
import dev.ddb2iceberg.table.TaskRows;
import dev.ddb2iceberg.testkit.CommitHookCatalog;
import dev.ddb2iceberg.testkit.Compaction;
import dev.ddb2iceberg.testkit.ExpectedTable;
import dev.ddb2iceberg.testkit.KeyedWorkload;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.MergerFixture;
import dev.ddb2iceberg.testkit.RowLineageByKey;
import dev.ddb2iceberg.testkit.StreamEvents;
import dev.ddb2iceberg.testkit.TableItems;
import dev.ddb2iceberg.write.MergeWriter;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericFileWriterFactory;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.deletes.EqualityDeleteWriter;
import org.apache.iceberg.encryption.EncryptedFiles;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.DataWriter;
import org.apache.iceberg.io.OutputFile;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The table's shape between compactions: a data file carries at most one delete file however many
 * merges touch it (its old positions carried into the new one), and the small files of the
 * partitions a merge writes to are folded into its new file, touched or not, within the merge's
 * budget. Against the real parts (embedded S3 over HTTP, the SQLite catalog); after every merge
 * the table equals the model.
 */
@ExtendWith(S3ServerExtension.class)
class TableShapeTest {
    @TempDir
    Path dir;

    private final Map<String, String> env = new HashMap<>();
    private final ExpectedTable model = new ExpectedTable();
    private EmbeddedS3Server server;
    private MergerSettings settings;
    private Catalog catalog;
    private StagingStore store;

    @BeforeEach
    void setUp(EmbeddedS3Server server) {
        this.server = server;
        env.putAll(new LocalStack(server, S3ServerExtension.newBucket(server), dir).environment("orders"));
    }

    private void configure() {
        settings = MergerSettings.from(new Environment(env));
        catalog = settings.catalog().load();
        store = new StagingStore(server.newClient(), settings.staging());
    }

    private Table table() {
        return catalog.loadTable(TableIdentifier.of(
                settings.table().namespace(), settings.table().name()));
    }

    private MergeResult merge(List<Change> batch, MergeOptions options) {
        return merge(batch, options, t -> {});
    }

    private MergeResult merge(List<Change> batch, MergeOptions options, Consumer<Table> beforeCommit) {
        assertTrue(new BatchStager(store)
                .stage(StreamEvents.batch(batch).getRecords())
                .complete());
        model.apply(batch);
        Catalog hooked = CommitHookCatalog.beforeEachSnapshot(
                catalog,
                TableIdentifier.of(
                        settings.table().namespace(), settings.table().name()),
                beforeCommit);
        MergeResult r = new Merger(hooked, settings.table(), store, options).run();
        var actual = TableItems.read(table());
        assertTrue(
                model.items().equals(actual),
                () -> "the table differs from the model after " + r + ": " + ExpectedTable.diff(model.items(), actual));
        return r;
    }

    /** Merges items 0 to 299 of {@code w} into an empty unpartitioned table: its one data file. */
    private DataFile oneFileOf300Items(KeyedWorkload w) {
        List<Change> inserts = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            inserts.add(w.upsert(i, Operation.INSERT));
        }
        merge(inserts, settings.options());
        List<DataFile> files = new ArrayList<>();
        table().newScan().planFiles().forEach(t -> files.add(t.file()));
        assertEquals(1, files.size(), "300 new items in one file: " + files);
        return files.get(0);
    }

    /** The live data files, each with its delete files. */
    private Map<String, List<DeleteFile>> files() {
        return MergerFixture.dataFilesWithDeletes(table());
    }

    private static long deletedPositions(List<DeleteFile> deletes) {
        return deletes.stream().mapToLong(DeleteFile::recordCount).sum();
    }

    @ParameterizedTest(name = "format v{0}")
    @ValueSource(ints = {2, 3})
    void aDataFileKeepsOneDeleteFileHoweverManyMergesTouchIt(int formatVersion) {
        env.put("PARTITION_SPEC", "none");
        env.put("TABLE_FORMAT_VERSION", Integer.toString(formatVersion));
        configure();
        MergeOptions noFolding = settings.options().withRewriteFilesBelow(0); // every touched file gets deletes
        KeyedWorkload w = new KeyedWorkload(5, 1000);
        List<Change> inserts = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            inserts.add(w.upsert(i, Operation.INSERT));
        }
        merge(inserts, noFolding);
        String loaded = files().keySet().iterator().next();

        long deleted = 0;
        for (int round = 0; round < 6; round++) {
            // Three rows of the first file a round, each once: two updated, one removed.
            merge(
                    List.of(
                            w.upsert(round * 3, Operation.MODIFY),
                            w.upsert(round * 3 + 1, Operation.MODIFY),
                            w.remove(round * 3 + 2, false)),
                    noFolding);
            deleted += 3;
            Map<String, List<DeleteFile>> files = files();
            for (Map.Entry<String, List<DeleteFile>> f : files.entrySet()) {
                assertTrue(
                        f.getValue().size() <= 1,
                        "after round " + round + ", data file " + f.getKey() + " carries "
                                + f.getValue().size() + " delete files: " + f.getValue());
            }
            assertEquals(1, files.get(loaded).size(), "the first file has its one delete file after round " + round);
            assertEquals(
                    deleted,
                    deletedPositions(files.get(loaded)),
                    "the first file's one delete file holds every position deleted so far (round " + round + ")");
        }
    }

    @Test
    void aMergeRacingACompactionThatRemovedTheOldDeleteFileReplansAndLosesNothing() {
        env.put("PARTITION_SPEC", "none");
        configure();
        MergeOptions noFolding = settings.options().withRewriteFilesBelow(0);
        KeyedWorkload w = new KeyedWorkload(6, 1000);
        List<Change> inserts = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            inserts.add(w.upsert(i, Operation.INSERT));
        }
        merge(inserts, noFolding);
        merge(List.of(w.upsert(1, Operation.MODIFY), w.remove(2, false)), noFolding);
        String touched = files().entrySet().stream()
                .filter(e -> !e.getValue().isEmpty())
                .findFirst()
                .orElseThrow()
                .getKey();

        // The next merge plans against the file and its delete file; a compaction commits first,
        // replacing both. The merge's commit must fail and re-plan against the compacted table.
        AtomicBoolean raced = new AtomicBoolean();
        MergeResult r = merge(
                List.of(w.upsert(3, Operation.MODIFY), w.remove(4, false), w.upsert(5, Operation.MODIFY)),
                noFolding,
                t -> {
                    if (raced.compareAndSet(false, true)) {
                        Compaction.rewriteAll(t);
                    }
                });
        assertTrue(raced.get());
        assertEquals(2, r.commitAttempts(), "the merge lost the race once and re-planned: " + r);
        Map<String, List<DeleteFile>> files = files();
        assertTrue(!files.containsKey(touched), "the compaction replaced the touched file: " + files.keySet());
        for (Map.Entry<String, List<DeleteFile>> f : files.entrySet()) {
            assertTrue(f.getValue().size() <= 1, "data file " + f.getKey() + " carries " + f.getValue());
        }
    }

    @Test
    void theSmallFilesOfEveryPartitionAMergeWritesToAreFoldedIntoItsNewFileTouchedOrNot() {
        env.put("PARTITION_SPEC", "bucket(2, pk)");
        configure();
        MergeOptions folding = settings.options();
        assertTrue(folding.rewriteFilesBelowBytes() > 0, "merges fold small files by default");
        KeyedWorkload w = new KeyedWorkload(7, 100_000);
        int next = 0;
        for (int m = 0; m < 8; m++) {
            // New items only: no merge touches an existing file, yet each partition keeps one file.
            List<Change> inserts = new ArrayList<>();
            for (int i = 0; i < 40; i++) {
                inserts.add(w.upsert(next++, Operation.INSERT));
            }
            merge(inserts, folding);
            Map<String, List<DeleteFile>> files = files();
            assertTrue(
                    files.size() <= 2, "after merge " + m + ", one file per partition (2 buckets): " + files.keySet());
            assertEquals(0, files.values().stream().mapToInt(List::size).sum(), "no delete files after merge " + m);
        }

        // A budget too small for any file: files pile up, one per partition a merge ...
        MergeOptions noBudget = folding.withRewriteBytesPerMerge(1);
        for (int m = 0; m < 3; m++) {
            List<Change> inserts = new ArrayList<>();
            for (int i = 0; i < 40; i++) {
                inserts.add(w.upsert(next++, Operation.INSERT));
            }
            merge(inserts, noBudget);
        }
        int piled = files().size();
        assertTrue(piled >= 6, "without a budget, each merge adds a file per partition: " + piled);
        // ... and the next merge with a budget, writing to both partitions, folds them all back in.
        List<Change> inserts = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            inserts.add(w.upsert(next++, Operation.INSERT));
        }
        MergeResult r = merge(inserts, folding);
        assertTrue(
                files().size() <= 2, "folded back to one file per partition written (" + r + "): " + files().keySet());
    }

    @Test
    void aFileThatGrewPastTheThresholdIsLeftAloneAndGetsOneDeleteFile() {
        env.put("PARTITION_SPEC", "none");
        configure();
        KeyedWorkload w = new KeyedWorkload(8, 100_000);
        DataFile first = oneFileOf300Items(w);
        String big = first.location();
        long size = first.fileSizeInBytes();
        MergeOptions threshold = settings.options().withRewriteFilesBelow(size); // the file is not below it
        for (int round = 0; round < 3; round++) {
            merge(List.of(w.upsert(round, Operation.MODIFY), w.upsert(1000 + round, Operation.INSERT)), threshold);
            Map<String, List<DeleteFile>> files = files();
            assertTrue(
                    files.containsKey(big), "the file at the threshold stays (round " + round + "): " + files.keySet());
            assertEquals(1, files.get(big).size(), "it has one delete file (round " + round + "): " + files.get(big));
            assertEquals(
                    2,
                    files.size(),
                    "it and one small file that takes the new rows (round " + round + "): " + files.keySet());
        }
    }

    @Test
    void aFoldThatWouldTakeThePartitionsNewFilePastTheThresholdIsLeftAndTheFileKeepsItsRows() {
        env.put("PARTITION_SPEC", "none");
        configure();
        KeyedWorkload w = new KeyedWorkload(9, 100_000);
        DataFile first = oneFileOf300Items(w);
        String small = first.location();
        long size = first.fileSizeInBytes();
        // The file is below the threshold, but it and another 300 new rows are not.
        MergeOptions threshold = settings.options().withRewriteFilesBelow(size + size / 2);

        // 300 new rows and a change to one of the file's: the file is touched, yet not folded.
        List<Change> second = new ArrayList<>();
        for (int i = 300; i < 600; i++) {
            second.add(w.upsert(i, Operation.INSERT));
        }
        second.add(w.upsert(7, Operation.MODIFY));
        merge(second, threshold);
        Map<String, List<DeleteFile>> files = files();
        assertEquals(2, files.size(), "the small file and the merge's new one: " + files.keySet());
        assertTrue(files.containsKey(small), "the small file stays: " + files.keySet());
        assertEquals(1, files.get(small).size(), "with one delete file for the changed row: " + files.get(small));

        // Two new rows: one of the two files now fits beside them, the other does not.
        merge(List.of(w.upsert(600, Operation.INSERT), w.upsert(601, Operation.INSERT)), threshold);
        Map<String, List<DeleteFile>> after = files();
        assertEquals(2, after.size(), "one file folded into the new one, one left: " + after.keySet());
        long kept = files.keySet().stream().filter(after::containsKey).count();
        assertEquals(
                1,
                kept,
                "exactly one of the two files was folded: before " + files.keySet() + ", after " + after.keySet());
    }

    @ParameterizedTest(name = "key index {0}")
    @ValueSource(booleans = {true, false})
    void aSmallFileAMergeTouchesIsFoldedWithoutADeleteFileAndItsMovedRowsAreFoundByTheNextMerge(boolean keyIndex) {
        env.put("PARTITION_SPEC", "bucket(2, pk)");
        configure();
        MergeOptions folding = settings.options().withKeyIndex(keyIndex);
        KeyedWorkload w = new KeyedWorkload(11, 1000);
        List<Change> inserts = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            inserts.add(w.upsert(i, Operation.INSERT));
        }
        merge(inserts, folding);
        Set<String> first = files().keySet();

        // Update a few items and remove one: each touched file is folded, none gets deletes.
        List<Change> touch = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            touch.add(w.upsert(i, Operation.MODIFY)); // ten keys: both buckets
        }
        touch.add(w.remove(77, false));
        merge(touch, folding);
        Map<String, List<DeleteFile>> second = files();
        assertEquals(0, second.values().stream().mapToInt(List::size).sum(), "delete files after folding: " + second);
        assertTrue(
                second.keySet().stream().noneMatch(first::contains),
                "every file the merge touched was replaced: before " + first + ", after " + second.keySet());

        // The next merges change rows that moved: found at their new place (no duplicate, no stale row).
        for (int round = 0; round < 3; round++) {
            List<Change> more = new ArrayList<>();
            for (int i = round; i < 200; i += 7) {
                more.add(i % 5 == 0 ? w.remove(i, false) : w.upsert(i, Operation.MODIFY));
            }
            more.add(w.upsert(300 + round, Operation.INSERT));
            merge(more, folding);
        }
        assertEquals(0, files().values().stream().mapToInt(List::size).sum(), "no delete file ever");
        assertTrue(files().size() <= 2, "one small file per partition (2 buckets): " + files().keySet());

        // With folding off (REWRITE_FILES_BELOW_BYTES=0), the same kind of merge leaves delete files.
        merge(
                List.of(w.upsert(5, Operation.MODIFY), w.upsert(151, Operation.MODIFY)),
                folding.withRewriteFilesBelow(0));
        assertTrue(
                files().values().stream().mapToInt(List::size).sum() > 0,
                "with folding off, updates leave delete files");
    }

    private long seq = 700_000_000_000_000_000L;

    /** An item of fixed attribute types (no float columns: its folded rows can be copied), {@code address} a struct. */
    private Change item(int i, Operation op, Map<String, DdbValue> address) {
        Map<String, DdbValue> keys = new LinkedHashMap<>();
        keys.put("pk", new DdbValue.S("user-" + i % 13));
        keys.put("sk", new DdbValue.N(Integer.toString(i)));
        Map<String, DdbValue> image = new LinkedHashMap<>(keys);
        image.put("name", new DdbValue.S("name-" + i + "-" + seq % 1000));
        image.put("count", new DdbValue.N(Long.toString(seq % 100_000)));
        image.put("active", new DdbValue.Bool(i % 2 == 0));
        image.put("payload", new DdbValue.B(new byte[] {(byte) i, 7, (byte) (seq % 100)}));
        image.put("tags", new DdbValue.L(List.of(new DdbValue.S("t" + i), new DdbValue.N(Integer.toString(i % 5)))));
        image.put("address", new DdbValue.M(address));
        return new Change(keys, op, image, Long.toString(seq++), 1_764_460_800_000L, false);
    }

    private static Map<String, DdbValue> city(int i) {
        return Map.of("city", new DdbValue.S("city-" + i % 7));
    }

    /** Fails naming the file when a data file's rows are not in key order. */
    private void assertEveryFileInKeyOrder(Table table) throws IOException {
        TableLayout layout = TableLayout.of(table);
        Schema keys = MergeWriter.MovedRows.projection(table.schema(), layout);
        Comparator<Record> order = layout.keyOrder(keys);
        try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
            for (FileScanTask task : tasks) {
                Record previous = null;
                try (CloseableIterable<Record> rows = TaskRows.read(table, task, keys)) {
                    for (Record row : rows) {
                        Record before = previous;
                        assertTrue(
                                before == null || order.compare(before, row) < 0,
                                () -> task.file().location() + " is not in key order: " + before + " before " + row);
                        previous = row.copy();
                    }
                }
            }
        }
    }

    /** What a merge that folded every current data file (deleting nothing) would move, and how. */
    private SmallFileRewrite.Moved movedIfFolded(Table table) throws IOException {
        List<Map.Entry<FileScanTask, List<LiveRow>>> all = new ArrayList<>();
        try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
            tasks.forEach(t -> all.add(Map.entry(t, List.of())));
        }
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            return SmallFileRewrite.moved(table, TableLayout.of(table), all, pool);
        } finally {
            pool.shutdownNow();
        }
    }

    @ParameterizedTest(name = "key index {0}")
    @ValueSource(booleans = {true, false})
    void foldedRowsAreCopiedColumnByColumnIntoANewFileInKeyOrder(boolean keyIndex) throws IOException {
        env.put("PARTITION_SPEC", "bucket(2, pk)");
        configure();
        MergeOptions folding = settings.options().withKeyIndex(keyIndex);
        List<Change> inserts = new ArrayList<>();
        for (int i = 0; i < 300; i += 2) {
            inserts.add(item(i, Operation.INSERT, city(i)));
        }
        merge(inserts, folding);
        SmallFileRewrite.Moved before = movedIfFolded(table());
        assertEquals(0, before.rows().size(), "no row of a merge's sorted files is read whole: " + before.rows());
        assertEquals(inserts.size(), before.count(), "every live row would move");

        // Updates and removals of rows in both files, and new rows between the old keys: the new
        // files take both, in key order, with the moved rows' values as they were.
        for (int round = 0; round < 3; round++) {
            List<Change> changes = new ArrayList<>();
            for (int i = round; i < 300; i += 9) {
                changes.add(
                        i % 2 == 1
                                ? item(i, Operation.INSERT, city(i))
                                : i % 4 == 0 ? item(i, Operation.MODIFY, city(i + 1)) : remove(i));
            }
            MergeResult r = merge(changes, folding);
            assertEquals(0, files().values().stream().mapToInt(List::size).sum(), "no delete files: " + r);
            assertTrue(files().size() <= 2, "one file per partition (2 buckets): " + files().keySet());
            assertEveryFileInKeyOrder(table());
        }
    }

    private Change remove(int i) {
        Map<String, DdbValue> keys = new LinkedHashMap<>();
        keys.put("pk", new DdbValue.S("user-" + i % 13));
        keys.put("sk", new DdbValue.N(Integer.toString(i)));
        return new Change(keys, Operation.REMOVE, null, Long.toString(seq++), 1_764_460_800_000L, false);
    }

    @Test
    void aFoldedFileNotInKeyOrderIsReadWholeAndItsRowsAreSortedWithTheNewOnes() throws IOException {
        env.put("PARTITION_SPEC", "none");
        configure();
        MergeOptions folding = settings.options().withKeyIndex(false); // the file is replaced behind the index
        List<Change> inserts = new ArrayList<>();
        for (int i = 0; i < 120; i += 2) {
            inserts.add(item(i, Operation.INSERT, city(i)));
        }
        merge(inserts, folding);

        // The same rows, written by another writer in reverse key order.
        Table table = table();
        DataFile sorted = table.newScan().planFiles().iterator().next().file();
        List<Record> rows = new ArrayList<>();
        try (CloseableIterable<Record> all = IcebergGenerics.read(table).build()) {
            all.forEach(r -> rows.add(r.copy()));
        }
        Collections.reverse(rows);
        OutputFile out = table.io().newOutputFile(table.locationProvider().newDataLocation("reversed.parquet"));
        DataWriter<Record> writer = new GenericFileWriterFactory.Builder(table)
                .dataFileFormat(FileFormat.PARQUET)
                .build()
                .newDataWriter(EncryptedFiles.plainAsEncryptedOutput(out), table.spec(), null);
        try (writer) {
            rows.forEach(writer::write);
        }
        table.newRewrite().deleteFile(sorted).addFile(writer.toDataFile()).commit();
        SmallFileRewrite.Moved moved = movedIfFolded(table());
        assertEquals(rows.size(), moved.rows().size(), "the reversed file is read whole, not copied");

        merge(List.of(item(1, Operation.INSERT, city(1)), item(61, Operation.INSERT, city(61))), folding);
        assertEquals(1, files().size(), "the reversed file was folded: " + files().keySet());
        assertEveryFileInKeyOrder(table());
    }

    @Test
    void aFoldedFileOfAnOlderStructIsCopiedThroughRecords() throws IOException {
        env.put("PARTITION_SPEC", "none");
        configure();
        MergeOptions folding = settings.options();
        List<Change> inserts = new ArrayList<>();
        for (int i = 0; i < 80; i++) {
            inserts.add(item(i, Operation.INSERT, city(i)));
        }
        merge(inserts, folding);

        // A new key in the address struct: the struct gains a field the old file's rows lack, so
        // those rows cannot be copied column by column; the merge still folds them, through records.
        Map<String, DdbValue> withZip = Map.of("city", new DdbValue.S("Lyon"), "zip", new DdbValue.S("69001"));
        MergeResult r =
                merge(List.of(item(100, Operation.INSERT, withZip), item(3, Operation.MODIFY, withZip)), folding);
        assertTrue(table().schema().findField("address.zip") != null, "the struct gained a field: " + table().schema());
        assertEquals(1, files().size(), "the old file was folded (" + r + "): " + files().keySet());
        assertEquals(0, files().values().stream().mapToInt(List::size).sum(), "no delete files");
        assertEveryFileInKeyOrder(table());
        merge(List.of(item(5, Operation.MODIFY, city(5))), folding); // moved rows are found again
    }

    /** An unpartitioned v3 table holding the even items below {@code end}, merged once; the default (folding) options. */
    private MergeOptions unpartitionedV3WithEvenItemsBelow(int end) {
        env.put("PARTITION_SPEC", "none");
        env.put("TABLE_FORMAT_VERSION", "3");
        configure();
        MergeOptions folding = settings.options();
        List<Change> inserts = new ArrayList<>();
        for (int i = 0; i < end; i += 2) {
            inserts.add(item(i, Operation.INSERT, city(i)));
        }
        merge(inserts, folding);
        return folding;
    }

    /** The maintenance function's compaction, with the table's settings. */
    private MaintenanceResult compact() {
        MaintenanceSettings maintenance = MaintenanceSettings.from(new Environment(env));
        return new Maintenance(table(), maintenance.options(), maintenance.stagingUri(), Clock.systemUTC())
                .run(EnumSet.of(MaintenanceTask.COMPACT), false);
    }

    @Test
    void inFormatV3FoldedRowsKeepTheirLineageCopiedOrThroughRecords() {
        MergeOptions folding = unpartitionedV3WithEvenItemsBelow(80);
        Map<List<Object>, List<Long>> lineage = RowLineageByKey.read(table());

        // New rows between the old keys, an update and a removal: the small file is folded into the
        // merge's new one, its other rows copied column by column with their lineage.
        List<Change> batch = List.of(
                item(1, Operation.INSERT, city(1)),
                item(41, Operation.INSERT, city(41)),
                item(4, Operation.MODIFY, city(5)),
                remove(6));
        MergeResult r = merge(batch, folding);
        assertEquals(1, files().size(), "the old file was folded (" + r + "): " + files().keySet());
        assertEquals(0, files().values().stream().mapToInt(List::size).sum(), "no deletion vector: " + r);
        lineage = RowLineageByKey.assertMerged(table(), lineage, batch);

        // A new key in the address struct: the old rows cannot be copied column by column, and are
        // folded through records, still with their lineage.
        Map<String, DdbValue> withZip = Map.of("city", new DdbValue.S("Lyon"), "zip", new DdbValue.S("69001"));
        batch = List.of(item(100, Operation.INSERT, withZip), item(3, Operation.INSERT, withZip));
        r = merge(batch, folding);
        assertEquals(1, files().size(), "the old file was folded through records (" + r + "): " + files().keySet());
        lineage = RowLineageByKey.assertMerged(table(), lineage, batch);

        // And folded again: rows whose lineage the file holds, and rows that inherit it.
        batch = List.of(item(7, Operation.INSERT, city(7)));
        r = merge(batch, folding);
        assertEquals(1, files().size(), "folded again (" + r + "): " + files().keySet());
        RowLineageByKey.assertMerged(table(), lineage, batch);
    }

    @Test
    void inFormatV3LineageIsKeptAcrossRowGroupsByTheFoldAndByCompaction() {
        MergeOptions folding = unpartitionedV3WithEvenItemsBelow(400);
        Map<List<Object>, List<Long>> lineage = RowLineageByKey.read(table());
        // Row groups of about a hundred rows (Parquet checks their size every 100 rows): the copy
        // moves from row group to row group, and each row's position counts across them.
        table().updateProperties()
                .set(TableProperties.PARQUET_ROW_GROUP_SIZE_BYTES, "4096")
                .commit();
        List<Change> batch = List.of(item(1, Operation.INSERT, city(1)), item(250, Operation.MODIFY, city(3)));
        merge(batch, folding);
        lineage = RowLineageByKey.assertMerged(table(), lineage, batch);
        assertEquals(1, files().size(), "folded into one file: " + files().keySet());
        DataFile folded = table().newScan().planFiles().iterator().next().file();
        assertTrue(
                folded.splitOffsets() != null && folded.splitOffsets().size() > 2,
                "the folded file has several row groups: " + folded.splitOffsets());

        // Folded again, rows whose lineage the file holds, across its row groups.
        batch = List.of(item(3, Operation.INSERT, city(3)), remove(100));
        merge(batch, folding);
        lineage = RowLineageByKey.assertMerged(table(), lineage, batch);

        // And compacted with the merges' files that followed, the same way.
        for (int m = 0; m < 5; m++) {
            batch = List.of(item(401 + 2 * m, Operation.INSERT, city(m)), item(10 * m + 20, Operation.MODIFY, city(m)));
            merge(batch, folding.withRewriteFilesBelow(0));
            lineage = RowLineageByKey.assertMerged(table(), lineage, batch);
        }
        MaintenanceResult r = compact();
        assertTrue(r.compaction().filesRewritten() > 0, r.toString());
        RowLineageByKey.assertKept(lineage, RowLineageByKey.read(table()));
    }

    @Test
    void inFormatV3AnAttributeNamedLikeALineageColumnStillFoldsAndCompacts() {
        env.put("PARTITION_SPEC", "none");
        env.put("TABLE_FORMAT_VERSION", "3");
        configure();
        MergeOptions folding = settings.options();
        // Files for compaction first (merges that do not fold), then a merge that folds them all.
        for (int m = 0; m < 6; m++) {
            List<Change> inserts = new ArrayList<>();
            for (int i = m * 10; i < m * 10 + 10; i++) {
                inserts.add(withAttribute(item(i, Operation.INSERT, city(i)), "_row_id", new DdbValue.S("mine-" + i)));
            }
            merge(inserts, folding.withRewriteFilesBelow(0));
        }
        assertTrue(table().schema().findField("_row_id") != null, "the attribute is a column: " + table().schema());
        MaintenanceResult r = compact();
        assertTrue(r.compaction().filesRewritten() > 0, r.toString());
        merge(List.of(withAttribute(item(61, Operation.INSERT, city(61)), "_row_id", new DdbValue.S("x"))), folding);
        merge(List.of(item(63, Operation.INSERT, city(63))), folding);
        assertEquals(1, files().size(), "the small compacted file folded into the merges' file: " + files().keySet());
    }

    /** {@code c} with one more attribute in its new image. */
    private static Change withAttribute(Change c, String name, DdbValue value) {
        Map<String, DdbValue> image = new LinkedHashMap<>(c.newImage());
        image.put(name, value);
        return new Change(
                c.keys(), c.operation(), image, c.sequenceNumber(), c.approximateCreationMillis(), c.ttlExpiry());
    }

    @Test
    void aMergeWritesItsFilesWithoutAskingS3WhetherTheyExist() {
        env.put("PARTITION_SPEC", "none");
        configure();
        KeyedWorkload w = new KeyedWorkload(12, 100_000);
        List<Change> inserts = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            inserts.add(w.upsert(i, Operation.INSERT));
        }
        merge(inserts, settings.options());
        // Every file a merge writes has a new name: a HEAD before writing one would be a wasted
        // round trip (a merge writes a delete file per data file it touches, thousands at a
        // billion rows). So any HEAD of a data or delete file fails here, and with it the merge:
        // first a merge that folds (the copied rows' writer), then one that leaves a delete file.
        // (Readers may HEAD delete files: Iceberg's delete loader does, so the table is read after.)
        List<Change> more = new ArrayList<>();
        for (int i = 200; i < 220; i++) {
            more.add(w.upsert(i, Operation.INSERT));
        }
        List<Change> touch = List.of(w.upsert(3, Operation.MODIFY), w.remove(7, false));
        server.faults()
                .failFrom(
                        FaultInjectingBlobStore.Operation.HEAD,
                        1,
                        key -> key.contains("/data/") && key.endsWith(".parquet"));
        List<MergeResult> results = new ArrayList<>();
        try {
            for (var changes : List.of(more, touch)) {
                assertTrue(new BatchStager(store)
                        .stage(StreamEvents.batch(changes).getRecords())
                        .complete());
                model.apply(changes);
                MergeOptions options = changes == more
                        ? settings.options()
                        : settings.options().withRewriteFilesBelow(0); // deletes, not a fold
                results.add(new Merger(catalog, settings.table(), store, options).run());
            }
        } finally {
            server.faults().clear();
        }
        for (MergeResult r : results) {
            assertEquals(1, r.commitAttempts(), "committed at the first attempt: " + r);
        }
        assertEquals(1, files().values().stream().mapToInt(List::size).sum(), "the touched file got its delete file");
        var actual = TableItems.read(table());
        assertTrue(
                model.items().equals(actual),
                () -> ExpectedTable.diff(model.items(), actual).toString());
    }

    @Test
    void aFoldedFileWithAnotherWritersEqualityDeleteMovesOnlyItsLiveRows() throws IOException {
        env.put("PARTITION_SPEC", "none");
        configure();
        MergeOptions folding = settings.options().withKeyIndex(false); // another writer's commit follows
        List<Change> inserts = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
            inserts.add(item(i, Operation.INSERT, city(i)));
        }
        merge(inserts, folding);

        // Another writer deletes by a non-key column (Flink's upserts write such files). Reading
        // the folded file's keys then also reads that column, after the row position.
        Table table = table();
        Schema counts = table.schema().select("count");
        Object gone = IcebergGenerics.read(table)
                .select("count")
                .build()
                .iterator()
                .next()
                .getField("count");
        OutputFile out = table.io().newOutputFile(table.locationProvider().newDataLocation("eq-deletes.parquet"));
        EqualityDeleteWriter<Record> deletes = new GenericFileWriterFactory.Builder(table)
                .equalityFieldIds(new int[] {counts.findField("count").fieldId()})
                .equalityDeleteRowSchema(counts)
                .build()
                .newEqualityDeleteWriter(EncryptedFiles.plainAsEncryptedOutput(out), table.spec(), null);
        try (deletes) {
            Record row = GenericRecord.create(counts);
            row.setField("count", gone);
            deletes.write(row);
        }
        table.newRowDelta().addDeletes(deletes.toDeleteFile()).commit();
        Map<Map<String, DdbValue>, Map<String, DdbValue>> expected = new HashMap<>(TableItems.read(table()));
        assertEquals(inserts.size() - 1, expected.size(), "the equality delete removed one row");

        // The next merge folds the file: exactly its live rows move, each with its own values.
        List<Change> more = List.of(item(100, Operation.INSERT, city(100)), item(101, Operation.INSERT, city(101)));
        assertTrue(new BatchStager(store)
                .stage(StreamEvents.batch(more).getRecords())
                .complete());
        MergeResult r = new Merger(catalog, settings.table(), store, folding).run();
        ExpectedTable added = new ExpectedTable();
        added.apply(more);
        expected.putAll(added.items());
        var actual = TableItems.read(table());
        assertTrue(expected.equals(actual), () -> "after " + r + ": " + ExpectedTable.diff(expected, actual));
        assertEquals(1, files().size(), "the file was folded: " + files().keySet());
        assertEveryFileInKeyOrder(table());
    }
}
