package dev.ddb2iceberg.merge;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.function.MergerSettings;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.testkit.CommitHookCatalog;
import dev.ddb2iceberg.testkit.Compaction;
import dev.ddb2iceberg.testkit.ExpectedTable;
import dev.ddb2iceberg.testkit.KeyedWorkload;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.MergerFixture;
import dev.ddb2iceberg.testkit.StreamEvents;
import dev.ddb2iceberg.testkit.TableItems;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
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
        List<Change> inserts = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            inserts.add(w.upsert(i, Operation.INSERT));
        }
        merge(inserts, settings.options());
        String big = files().keySet().iterator().next();
        long size = table().newScan().planFiles().iterator().next().file().fileSizeInBytes();
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
}
