package dev.ddb2iceberg.merge;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ddb2iceberg.commit.Checkpoint;
import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.FaultInjectingBlobStore;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.function.MergerSettings;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.testkit.CommitHookCatalog;
import dev.ddb2iceberg.testkit.Compaction;
import dev.ddb2iceberg.testkit.ExpectedTable;
import dev.ddb2iceberg.testkit.KeyedWorkload;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.StreamEvents;
import dev.ddb2iceberg.testkit.TableAssertions;
import dev.ddb2iceberg.testkit.TableItems;
import dev.ddb2iceberg.testkit.UnknownOutcomeCatalog;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Consumer;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileContent;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableUtil;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.util.ContentFileUtil;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * The merge against real parts: the embedded S3 server over HTTP and Iceberg's JdbcCatalog on
 * SQLite. After every merge the table, read back as a query engine would, must equal a model of
 * the DynamoDB table built from the same changes.
 */
@ExtendWith(S3ServerExtension.class)
class MergerTest {
    @TempDir
    Path dir;

    private EmbeddedS3Server server;
    private MergerSettings settings;
    private Catalog catalog;
    private S3Client s3;
    private StagingStore store;
    private BatchStager stager;
    private final ExpectedTable model = new ExpectedTable();
    private final Map<String, String> env = new HashMap<>();

    @BeforeEach
    void setUp(EmbeddedS3Server server) {
        this.server = server;
        LocalStack stack = new LocalStack(server, S3ServerExtension.newBucket(server), dir);
        env.putAll(stack.environment("orders"));
        configure();
    }

    private void configure() {
        settings = MergerSettings.from(new Environment(env));
        catalog = settings.catalog().load();
        s3 = server.newClient();
        store = new StagingStore(s3, settings.staging());
        stager = new BatchStager(store);
    }

    @AfterEach
    void noSnapshotEverHoldsAnEqualityDelete() {
        TableIdentifier id = TableIdentifier.of(
                settings.table().namespace(), settings.table().name());
        if (!catalog.tableExists(id)) {
            return;
        }
        Table table = catalog.loadTable(id);
        for (Snapshot s : table.snapshots()) {
            for (DeleteFile f : s.addedDeleteFiles(table.io())) {
                assertEquals(
                        FileContent.POSITION_DELETES,
                        f.content(),
                        "delete file " + f.location() + " in snapshot " + s.snapshotId());
            }
        }
    }

    private void stage(List<Change> changes) {
        BatchStager.Result r = stager.stage(StreamEvents.batch(changes).getRecords());
        assertTrue(r.complete(), "staging failed at " + r.firstFailedSequenceNumber() + ": " + r.failure());
        model.apply(changes);
    }

    private Merger merger() {
        return new Merger(catalog, settings.table(), store, settings.options());
    }

    /** A merger that runs {@code hook} just before each of its commits. */
    private Merger merger(Consumer<Table> hook) {
        Catalog hooked = CommitHookCatalog.beforeEachSnapshot(
                catalog,
                TableIdentifier.of(
                        settings.table().namespace(), settings.table().name()),
                hook);
        return new Merger(hooked, settings.table(), store, settings.options());
    }

    private Table table() {
        return catalog.loadTable(TableIdentifier.of(
                settings.table().namespace(), settings.table().name()));
    }

    private void assertTableEqualsModel() {
        TableAssertions.assertHolds(table(), model);
    }

    private List<String> stagedKeys() {
        return s3.listObjectsV2(b -> b.bucket(settings.staging().bucket()).prefix("staging/")).contents().stream()
                .map(S3Object::key)
                .toList();
    }

    @ParameterizedTest(name = "format v{0}")
    @ValueSource(ints = {2, 3})
    void aDataFileWhoseRowsAreAllReplacedOrRemovedIsDroppedInsteadOfGivenDeletes(int formatVersion) {
        env.put("PARTITION_SPEC", "none");
        env.put("TABLE_FORMAT_VERSION", Integer.toString(formatVersion));
        env.put("REWRITE_FILES_BELOW_BYTES", "0"); // a small file is kept with deletes, not folded
        configure();
        KeyedWorkload w = new KeyedWorkload(2, 40);
        List<Change> first = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            first.add(w.upsert(i, Operation.INSERT));
        }
        stage(first);
        merger().run();
        String firstFile = dataFiles().get(0);
        // Two of its rows change: the file stays, with deletes for them.
        stage(List.of(w.upsert(0, Operation.MODIFY), w.remove(1, false)));
        merger().run();
        assertTrue(dataFiles().contains(firstFile), "a file with live rows left is kept");
        assertEquals(1, deleteFiles().size(), "the two rows are deleted by one delete file: " + deleteFiles());
        // The other four change: nothing of the file is live any more, so it goes, with its deletes.
        stage(List.of(
                w.upsert(2, Operation.MODIFY), w.upsert(3, Operation.MODIFY), w.remove(4, false), w.remove(5, true)));
        MergeResult r = merger().run();
        assertEquals(2, r.rowsReplaced());
        assertEquals(2, r.itemsRemoved());
        assertFalse(dataFiles().contains(firstFile), "the emptied file is dropped: " + dataFiles());
        assertEquals(
                List.of(),
                deleteFiles().stream().filter(d -> d.contains(firstFile)).toList());
        Map<String, String> summary = table().currentSnapshot().summary();
        assertEquals("1", summary.get("deleted-data-files"), "the drop is in the commit's summary: " + summary);
        assertTableEqualsModel();
    }

    private static long count(Snapshot s, String property) {
        return Long.parseLong(s.summary().getOrDefault(property, "0"));
    }

    private List<String> dataFiles() {
        List<String> files = new ArrayList<>();
        table().newScan().planFiles().forEach(t -> files.add(t.file().location()));
        return files;
    }

    /** Live delete files, each named with the data file it references (when it references one). */
    private List<String> deleteFiles() {
        Set<String> files = new LinkedHashSet<>();
        table().newScan()
                .planFiles()
                .forEach(t -> t.deletes()
                        .forEach(
                                d -> files.add(d.location() + " -> " + ContentFileUtil.referencedDataFileLocation(d))));
        return new ArrayList<>(files);
    }

    @ParameterizedTest(name = "format v{0}")
    @ValueSource(ints = {2, 3})
    void noRowPositionIsEverDeletedTwice(int formatVersion) {
        env.put("TABLE_FORMAT_VERSION", Integer.toString(formatVersion));
        env.put("REWRITE_FILES_BELOW_BYTES", "0"); // every touched file gets deletes (no folding), merge after merge
        configure();
        KeyedWorkload w = new KeyedWorkload(3, 60); // few keys, changed over and over
        long rowsDeleted = 0;
        for (int run = 0; run < 8; run++) {
            stage(w.next(80));
            MergeResult r = merger().run();
            rowsDeleted += r.rowsReplaced() + r.itemsRemoved();
        }
        // Each commit's net deletes: positions added, less those of delete files it replaced (v3 rewrites
        // a file's deletion vector whole) or dropped with their data file, plus the dropped files' rows.
        long netDeletes = 0;
        for (Snapshot s : table().snapshots()) {
            netDeletes += count(s, "added-position-deletes")
                    - count(s, "removed-position-deletes")
                    + count(s, "deleted-records");
        }
        assertEquals(
                rowsDeleted,
                netDeletes,
                "every replaced or removed row is deleted exactly once, by a position delete or with its dropped file");
        assertTableEqualsModel();
    }

    @Test
    void randomInsertsModifiesAndRemovesAcrossRunsMatchTheSourceTable() {
        KeyedWorkload w = new KeyedWorkload(1, 200);
        for (int run = 0; run < 6; run++) {
            for (int batch = 0; batch < 3; batch++) {
                stage(w.next(60));
            }
            MergeResult r = merger().run();
            assertEquals(3, r.objectsApplied(), "staged objects applied in run " + run);
            assertNotNull(r.snapshotId());
            assertTableEqualsModel();
            assertEquals(List.of(), stagedKeys(), "applied objects are deleted");
        }
    }

    @Test
    void theFirstRunCreatesTheTableWithKeysPartitioningAndSortOrder() {
        KeyedWorkload w = new KeyedWorkload(2, 20);
        stage(w.next(30));
        merger().run();
        Table t = table();
        assertEquals(
                List.of("pk", "sk"),
                t.schema().identifierFieldNames().stream().sorted().toList());
        assertTrue(t.schema().findField("pk").isRequired());
        assertEquals("bucket[16]", t.spec().fields().get(0).transform().toString());
        assertEquals("pk", t.schema().findColumnName(t.spec().fields().get(0).sourceId()));
        assertEquals(2, t.sortOrder().fields().size(), "sorted by both keys");
        assertEquals(2, TableUtil.formatVersion(t));
        assertEquals("long", t.schema().findField("sk").type().toString(), "integral N key");
        assertEquals("long", t.schema().findField("count").type().toString());
        assertEquals("string", t.schema().findField("name").type().toString());
    }

    @Test
    void severalChangesToOneKeyInOneRunKeepTheLatest() {
        KeyedWorkload w = new KeyedWorkload(3, 10);
        stage(List.of(
                w.upsert(1, Operation.INSERT),
                w.upsert(1, Operation.MODIFY),
                w.remove(1, false),
                w.upsert(1, Operation.INSERT),
                w.upsert(1, Operation.MODIFY)));
        MergeResult r = merger().run();
        assertEquals(5, r.changesRead());
        assertEquals("1 written, 0 replaced, 0 removed", counts(r), "one row written for the key");
        assertTableEqualsModel();
        // and across runs: a remove in the next run deletes it
        stage(List.of(w.remove(1, true)));
        r = merger().run();
        assertEquals("0 written, 0 replaced, 1 removed", counts(r));
        assertTableEqualsModel();
        assertEquals(0, TableItems.read(table()).size());
    }

    @Test
    void duplicateRecordsAcrossStagedObjectsAreAppliedOnce() {
        KeyedWorkload w = new KeyedWorkload(4, 50);
        List<Change> changes = w.next(100);
        stage(changes.subList(0, 60));
        stage(changes.subList(40, 100)); // a retried, re-bisected batch: records 40-59 staged twice
        MergeResult r = merger().run();
        assertEquals(120, r.changesRead());
        assertTableEqualsModel();
        // the same records arriving again in a later run are stale and change nothing
        long before = table().currentSnapshot().snapshotId();
        stage(changes.subList(50, 70));
        r = merger().run();
        assertEquals(0, r.changesApplied(), "nothing newer than the table");
        assertEquals("0 written, 0 replaced, 0 removed", counts(r));
        assertTableEqualsModel();
        assertNotEquals(before, r.snapshotId(), "the checkpoint still records the applied object");
    }

    @Test
    void removesOfKeysThatNeverExistedChangeNothing() {
        KeyedWorkload w = new KeyedWorkload(5, 50);
        stage(List.of(w.upsert(1, Operation.INSERT)));
        merger().run();
        stage(List.of(w.remove(7, false), w.remove(8, true)));
        MergeResult r = merger().run();
        assertEquals("0 written, 0 replaced, 0 removed", counts(r));
        assertEquals(0, r.changesApplied());
        assertTableEqualsModel();
    }

    @Test
    void eachCountNamesWhatHappenedToItemsAndRows() {
        KeyedWorkload w = new KeyedWorkload(8, 20);
        stage(List.of(
                w.upsert(1, Operation.INSERT),
                w.upsert(2, Operation.INSERT),
                w.upsert(3, Operation.INSERT),
                w.upsert(4, Operation.INSERT)));
        assertEquals("4 written, 0 replaced, 0 removed", counts(merger().run()), "four new items");

        stage(List.of(
                w.upsert(5, Operation.INSERT),
                w.upsert(6, Operation.INSERT),
                w.upsert(6, Operation.MODIFY), // new items
                w.upsert(1, Operation.MODIFY),
                w.upsert(2, Operation.MODIFY),
                w.upsert(2, Operation.MODIFY), // updated items
                w.remove(3, false),
                w.remove(4, true), // removed by a user and by TTL
                w.remove(9, false), // an item the table never held
                w.upsert(7, Operation.INSERT),
                w.remove(7, false))); // inserted and removed within the run
        MergeResult r = merger().run();
        assertEquals(
                "4 written, 2 replaced, 2 removed",
                counts(r),
                "items 5, 6, 1, 2 written (1 and 2 over their old rows); items 3 and 4 removed; 9 and 7 never in the table");
        assertEquals(11, r.changesRead());
        assertEquals(6, r.changesApplied(), "one change per item that changed the table");
        assertEquals(0, r.staleSkipped());
        assertTableEqualsModel();
    }

    private static String counts(MergeResult r) {
        return r.itemsWritten() + " written, " + r.rowsReplaced() + " replaced, " + r.itemsRemoved() + " removed";
    }

    @Test
    void anOlderChangeDeliveredAgainAfterTheItemWasRemovedDoesNotBringItBack() {
        // Lambda bisects a batch whose first delivery was staged (and merged) before the stager failed:
        // the first half arrives again, as its own staged object, after the removal was applied.
        KeyedWorkload w = new KeyedWorkload(31, 10);
        Change insert = w.upsert(1, Operation.INSERT);
        Change remove = w.remove(1, false);
        Change neverThere = w.upsert(2, Operation.INSERT);
        Change removeNeverThere = w.remove(2, true);
        stage(List.of(insert, neverThere, remove, removeNeverThere));
        merger().run();
        assertEquals(0, TableItems.read(table()).size());
        stage(List.of(insert, neverThere)); // the redelivered first half
        MergeResult r = merger().run();
        assertEquals(2, r.staleSkipped(), "both inserts are older than the removals on file");
        assertEquals(0, TableItems.read(table()).size(), "no removed item came back");
        assertTableEqualsModel();
        // a newer insert still creates the item again
        stage(List.of(w.upsert(1, Operation.INSERT)));
        merger().run();
        assertEquals(1, TableItems.read(table()).size());
        assertTableEqualsModel();
    }

    @Test
    void aCrashAfterTheCommitBeforeDeletingStagedObjectsIsHarmless() {
        KeyedWorkload w = new KeyedWorkload(6, 100);
        stage(w.next(80));
        stage(w.next(80));
        server.faults().failFrom(FaultInjectingBlobStore.Operation.DELETE, 1); // the deletes after the commit fail
        MergeResult first = merger().run();
        assertEquals(2, first.objectsApplied());
        assertEquals(2, stagedKeys().size(), "staged objects survived");
        assertTableEqualsModel();
        server.faults().clear();

        long snapshotsBefore = count(table().snapshots());
        MergeResult second = merger().run();
        assertEquals(2, second.objectsAlreadyApplied(), "recognised from the checkpoint");
        assertEquals(0, second.objectsApplied());
        assertNull(second.snapshotId(), "nothing committed");
        assertEquals(snapshotsBefore, count(table().snapshots()));
        assertEquals(List.of(), stagedKeys());
        assertTableEqualsModel();
    }

    @Test
    void aMergeOfManyStagedObjectsKeepsItsSummarySmallAndItsCheckpointInAFile() {
        KeyedWorkload w = new KeyedWorkload(11, 2_000);
        for (int i = 0; i < 300; i++) {
            stage(w.next(2)); // one staged object a batch, as a busy stream's shards stage them
        }
        MergeResult r = merger().run();
        assertEquals(300, r.objectsApplied());

        Map<String, String> summary = table().currentSnapshot().summary();
        int bytes = summary.entrySet().stream()
                .mapToInt(e -> e.getKey().length() + e.getValue().length())
                .sum();
        assertTrue(bytes < 4_096, "the summary's keys and values take " + bytes + " bytes: " + summary);
        assertEquals(300, Checkpoint.read(table()).size(), "the checkpoint names every object the merge applied");
        assertEquals("300", summary.get(PipelineProperties.APPLIED_COUNT));
        assertFalse(summary.containsKey(PipelineProperties.APPLIED), "no inline list beside the file");
        assertTableEqualsModel();
    }

    /** Tables merged before 2026-12-08 name their checkpoint inline; a merge still honours it, then writes a file. */
    @Test
    void aCheckpointListedInTheSummaryAsOlderMergesWroteItIsStillHonoured() {
        KeyedWorkload w = new KeyedWorkload(12, 100);
        stage(w.next(20));
        merger().run();
        // An object staged again after its merge (a redelivered batch), named by an old-style checkpoint.
        List<Change> again = w.next(5);
        assertTrue(stager.stage(StreamEvents.batch(again).getRecords()).complete());
        String token = Checkpoint.token(store.list().get(0).name());
        table().newAppend()
                .set(PipelineProperties.RUN_ID, "a merge before 2026-12-08")
                .set(PipelineProperties.APPLIED, token)
                .commit();

        MergeResult r = merger().run();

        assertEquals(1, r.objectsAlreadyApplied(), "the inline checkpoint names the object: applied before");
        assertEquals(0, r.objectsApplied());
        assertEquals(List.of(), stagedKeys());
        assertTableEqualsModel(); // its changes were not applied again
        stage(w.next(10));
        merger().run();
        assertTrue(table().currentSnapshot().summary().containsKey(PipelineProperties.APPLIED_FILE));
        assertFalse(table().currentSnapshot().summary().containsKey(PipelineProperties.APPLIED));
        assertTableEqualsModel();
    }

    @Test
    void checkpointCarriesUndeletedObjectsForwardUntilTheyAreGone() {
        KeyedWorkload w = new KeyedWorkload(7, 100);
        stage(w.next(50));
        server.faults().failFrom(FaultInjectingBlobStore.Operation.DELETE, 1);
        merger().run();
        // next run: the old object still cannot be deleted, and a new one is applied
        stage(w.next(50));
        MergeResult r = merger().run();
        assertEquals(1, r.objectsApplied());
        Set<String> checkpoint =
                Checkpoint.tokensOf(table().io(), table().currentSnapshot().summary());
        assertEquals(2, checkpoint.size(), "the undeleted object is carried forward: " + checkpoint);
        server.faults().clear();
        r = merger().run();
        assertEquals(2, r.objectsAlreadyApplied());
        assertEquals(List.of(), stagedKeys());
        assertTableEqualsModel();
    }

    @Test
    void aCompactionBetweenPlanningAndCommittingMakesTheMergeReplan() {
        KeyedWorkload w = new KeyedWorkload(8, 100);
        stage(w.next(150));
        merger().run();
        stage(w.next(150));
        int[] compactions = {0};
        MergeResult r = merger(t -> {
                    if (compactions[0]++ == 0) {
                        Compaction.rewriteAll(t); // rewrites the very files the merge is deleting rows from
                    }
                })
                .run();
        assertEquals(2, r.commitAttempts(), "the first attempt lost to the compaction");
        assertTableEqualsModel();
    }

    @Test
    void anotherMergerCommittingFirstMeansNoChangeIsAppliedTwice() {
        KeyedWorkload w = new KeyedWorkload(9, 100);
        stage(w.next(100));
        merger().run();
        stage(w.next(100));
        stage(w.next(100));
        MergeResult[] other = new MergeResult[1];
        MergeResult r = merger(t -> {
                    if (other[0] == null) {
                        other[0] = merger().run(); // a second merger starts, plans and commits first
                    }
                })
                .run();
        assertEquals(2, other[0].objectsApplied());
        assertEquals(2, r.commitAttempts());
        assertEquals(0, r.objectsApplied(), "everything was already applied by the other merger");
        assertEquals(2, r.objectsAlreadyApplied());
        assertTableEqualsModel();
    }

    @Test
    void twoMergersStartedAtOnceApplyEachObjectOnce() throws Exception {
        KeyedWorkload w = new KeyedWorkload(10, 300);
        stage(w.next(200));
        merger().run();
        for (int i = 0; i < 4; i++) {
            stage(w.next(100));
        }
        ExecutorService two = Executors.newFixedThreadPool(2);
        CountDownLatch start = new CountDownLatch(1);
        List<Future<MergeResult>> runs = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            runs.add(two.submit(() -> {
                start.await();
                return merger().run();
            }));
        }
        start.countDown();
        MergeResult a = runs.get(0).get();
        MergeResult b = runs.get(1).get();
        two.shutdown();
        assertEquals(
                4,
                a.objectsApplied() + b.objectsApplied(),
                "each object applied by exactly one merger: " + a + " / " + b);
        assertTableEqualsModel();
    }

    @Test
    void formatVersion3UsesDeletionVectors() {
        env.put("TABLE_FORMAT_VERSION", "3");
        env.put("REWRITE_FILES_BELOW_BYTES", "0"); // touched small files get deletes, not folded
        configure();
        KeyedWorkload w = new KeyedWorkload(11, 60);
        for (int run = 0; run < 4; run++) {
            stage(w.next(80));
            merger().run();
            assertTableEqualsModel();
        }
        Table t = table();
        assertEquals(3, TableUtil.formatVersion(t));
        List<DeleteFile> deletes = new ArrayList<>();
        t.snapshots().forEach(s -> s.addedDeleteFiles(t.io()).forEach(deletes::add));
        assertTrue(
                !deletes.isEmpty() && deletes.stream().allMatch(f -> f.format() == FileFormat.PUFFIN),
                "deletion vectors only: "
                        + deletes.stream().map(DeleteFile::format).toList());
    }

    @Test
    void boundedRunsLeaveABacklogAndNeverApplyANewerChangeBeforeAnOlderOne() {
        env.put("MAX_CHANGES_PER_RUN", "50");
        configure();
        KeyedWorkload w = new KeyedWorkload(12, 30);
        for (int i = 0; i < 5; i++) {
            stage(w.next(40));
        }
        MergeResult r = merger().run();
        assertEquals(1, r.objectsApplied(), "40 changes fit, 80 would not");
        assertEquals(4, r.backlogObjects());
        int runs = 1;
        while (r.backlogObjects() > 0) {
            r = merger().run();
            runs++;
        }
        assertEquals(5, runs);
        assertTableEqualsModel();
    }

    @Test
    void aBoundedRunReadsNoStagedObjectsBeyondItsBoundAndOneWindowOfReads() {
        env.put("MAX_CHANGES_PER_RUN", "40");
        env.put("IO_THREADS", "2");
        configure();
        KeyedWorkload w = new KeyedWorkload(12, 30);
        for (int i = 0; i < 12; i++) {
            stage(w.next(40));
        }
        // The SDK's retries of a failed GET count as one object: the rule sees each staged object
        // the run asks for once, and fails those past the first three (one taken, a window of two).
        server.faults().failFrom(FaultInjectingBlobStore.Operation.GET, 4, key -> key.startsWith("staging/"));
        MergeResult r = merger().run();
        int asked = server.faults().seen();
        server.faults().clear();
        assertEquals(1, r.objectsApplied(), "one object of 40 changes meets the bound of 40");
        assertTrue(
                asked <= 3,
                "a run bound to one object read " + asked + " staged objects; it may read at most its own and one"
                        + " window of 2 ahead (before, it read every object up to the byte bound: all 12)");
        while (r.backlogObjects() > 0) {
            r = merger().run();
        }
        assertTableEqualsModel();
    }

    @Test
    void aBacklogsRunStartsNoReadForAnObjectItsBoundWillNotTake() {
        env.put("MAX_CHANGES_PER_RUN", "160");
        env.put("IO_THREADS", "4");
        configure();
        KeyedWorkload w = new KeyedWorkload(16, 30);
        for (int i = 0; i < 12; i++) {
            stage(w.next(40));
        }
        // Counts the staged objects the run asks for: a rule that fails none of them.
        server.faults().failFrom(FaultInjectingBlobStore.Operation.GET, 100, key -> key.startsWith("staging/"));
        MergeResult r = merger().run();
        int asked = server.faults().seen();
        server.faults().clear();
        assertEquals(4, r.objectsApplied(), "four objects of 40 changes meet the bound of 160");
        assertEquals(
                4,
                asked,
                "a run taking 4 objects of a backlog of 12 asked for " + asked + " (before, reads ran a window of 4"
                        + " ahead of the object being decoded: 6 or 7 asked for, the extra decoded and thrown away)");
        while (r.backlogObjects() > 0) {
            r = merger().run();
        }
        assertTableEqualsModel();
    }

    @Test
    void newAttributesBecomeColumnsAndOddValuesAreKeptExactly() {
        KeyedWorkload w = new KeyedWorkload(13, 10);
        stage(List.of(w.upsert(1, Operation.INSERT)));
        merger().run();
        Map<String, DdbValue> image = new LinkedHashMap<>(w.key(2));
        image.put("brand_new", new DdbValue.S("hello"));
        image.put("count", new DdbValue.S("not a number")); // conflicts with the long column
        image.put("price", new DdbValue.N("12345678901234567890.123456789012345678"));
        image.put("Name", new DdbValue.S("differs from 'name' only by case"));
        stage(List.of(new Change(w.key(2), Operation.INSERT, image, "900000000000000000000000", 0L, false)));
        merger().run();
        Table t = table();
        assertNotNull(t.schema().findField("brand_new"), "new column added");
        assertNull(t.schema().findField("Name"), "no column that differs from another only by case");
        assertTableEqualsModel();
    }

    @Test
    void aKeyThatDoesNotFitItsColumnIsQuarantinedAndTheRestMerged() throws Exception {
        KeyedWorkload w = new KeyedWorkload(14, 10);
        stage(List.of(w.upsert(1, Operation.INSERT)));
        merger().run();
        Map<String, DdbValue> key = Map.of("pk", new DdbValue.S("x"), "sk", new DdbValue.N("1.5"));
        Map<String, DdbValue> image = new LinkedHashMap<>(key);
        Change bad = new Change(key, Operation.INSERT, image, "900000000000000000000000", 0L, false);
        List<Change> batch = List.of(bad, w.upsert(2, Operation.INSERT));
        stager.stage(StreamEvents.batch(batch).getRecords());
        model.apply(batch.subList(1, 2));
        MergeResult r = merger().run();
        assertEquals(1, r.quarantined());
        assertTableEqualsModel();
        String doc = s3.getObjectAsBytes(b -> b.bucket(settings.staging().bucket())
                        .key("quarantine/merger/0000000000000000900000000000000000000000.json"))
                .asUtf8String();
        String reason = new ObjectMapper().readTree(doc).get("reason").asText();
        assertTrue(
                reason.contains("key attribute 'sk' = {\"N\":\"1.5\"} does not fit its column of type long"), reason);
    }

    @Test
    void aCorruptStagedObjectIsQuarantinedAndTheRestMerged() {
        KeyedWorkload w = new KeyedWorkload(15, 50);
        stage(w.next(30));
        String bucket = settings.staging().bucket();
        String bad = "staging/" + "0".repeat(39) + "1-" + "0".repeat(39) + "2.ddbstage";
        s3.putObject(b -> b.bucket(bucket).key(bad), RequestBody.fromString("garbage"));
        MergeResult r = merger().run();
        assertEquals(1, r.quarantined());
        assertEquals(1, r.objectsApplied());
        assertTableEqualsModel();
        assertEquals(List.of(), stagedKeys());
        String reason = s3.getObjectAsBytes(
                        b -> b.bucket(bucket).key("quarantine/staged/" + bad.substring(8) + ".reason.txt"))
                .asUtf8String();
        assertTrue(reason.contains("not a staged object"), reason);
    }

    @Test
    void anUnknownCommitOutcomeThatLandedIsRecognisedAndNotRetried() {
        KeyedWorkload w = new KeyedWorkload(16, 100);
        stage(w.next(100));
        merger().run();
        stage(w.next(100));
        long snapshotsBefore = count(table().snapshots());
        Catalog flaky = new UnknownOutcomeCatalog(catalog, true);
        MergeResult r = new Merger(flaky, settings.table(), store, settings.options()).run();
        assertEquals(1, r.commitAttempts(), "found its own run id in the history, so no second commit");
        assertEquals(1, r.objectsApplied());
        assertEquals(snapshotsBefore + 1, count(table().snapshots()));
        assertTableEqualsModel();
        assertEquals(List.of(), stagedKeys());
    }

    @Test
    void anUnknownCommitOutcomeThatDidNotLandIsReplanned() {
        KeyedWorkload w = new KeyedWorkload(17, 100);
        stage(w.next(100));
        merger().run();
        stage(w.next(100));
        long snapshotsBefore = count(table().snapshots());
        Catalog flaky = new UnknownOutcomeCatalog(catalog, false);
        MergeResult r = new Merger(flaky, settings.table(), store, settings.options()).run();
        assertEquals(2, r.commitAttempts());
        assertEquals(snapshotsBefore + 1, count(table().snapshots()));
        assertTableEqualsModel();
    }

    private static long count(Iterable<?> it) {
        long n = 0;
        for (Object o : it) {
            n++;
        }
        return n;
    }
}
