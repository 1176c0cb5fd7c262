package dev.ddb2iceberg.maintenance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.commit.Checkpoint;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.function.CompactionSteps;
import dev.ddb2iceberg.function.MaintenanceSettings;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.merge.MergeResult;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.storage.ObjectPaths;
import dev.ddb2iceberg.testkit.CommitHookCatalog;
import dev.ddb2iceberg.testkit.ExpectedTable;
import dev.ddb2iceberg.testkit.KeyedWorkload;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.LogCapture;
import dev.ddb2iceberg.testkit.RowLineageByKey;
import dev.ddb2iceberg.testkit.StreamEvents;
import dev.ddb2iceberg.testkit.TableAssertions;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileMetadata;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.util.SnapshotUtil;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * Maintenance on a table built by many small merges, on the embedded S3 server and an SQLite
 * catalog: every task must leave the rows exactly as they were, and the merger's checkpoint intact.
 */
@ExtendWith(S3ServerExtension.class)
class MaintenanceTest {
    /** Merges that leave their small files and delete files, as before folding: work for maintenance. */
    private static final MergeOptions UNFOLDED = MergeOptions.DEFAULTS.withRewriteFilesBelow(0);

    @TempDir
    Path dir;

    private MaintenanceSettings settings;
    private Catalog catalog;
    private S3Client s3;
    private StagingStore store;
    private BatchStager stager;
    private final ExpectedTable expected = new ExpectedTable();
    private final KeyedWorkload workload = new KeyedWorkload(7, 400);

    private final Map<String, String> env = new HashMap<>();
    private EmbeddedS3Server server;

    @BeforeEach
    void setUp(EmbeddedS3Server server) {
        this.server = server;
        env.putAll(new LocalStack(server, S3ServerExtension.newBucket(server), dir).environment("orders"));
        configure();
    }

    private void configure() {
        settings = MaintenanceSettings.from(new Environment(env));
        catalog = settings.catalog().load();
        s3 = server.newClient();
        store = new StagingStore(s3, settings.staging());
        stager = new BatchStager(store);
    }

    /** Stages a batch and merges it: one small commit, as the merger makes every minute. */
    private MergeResult mergeSmallBatch(int changes) {
        List<Change> batch = workload.next(changes);
        assertTrue(stager.stage(StreamEvents.batch(batch).getRecords()).complete());
        expected.apply(batch);
        return merger().run();
    }

    private Merger merger() {
        return new Merger(catalog, settings.table(), store, UNFOLDED);
    }

    private TableIdentifier tableId() {
        return TableIdentifier.of(settings.table().namespace(), settings.table().name());
    }

    private Table table() {
        return catalog.loadTable(tableId());
    }

    private Maintenance maintenance(Clock clock) {
        return maintenance(clock, table());
    }

    private Maintenance maintenance(Clock clock, Table table) {
        // A 16 MB target: a test-sized table's merged files are all small (so there is something to
        // compact), while one bucket's rows, tens of nested columns wide, still fit in one output file.
        return new Maintenance(
                table,
                settings.options().withTargetFileSize(16L << 20).withManifestThreshold(10),
                settings.stagingUri(),
                clock);
    }

    private MaintenanceResult run(Clock clock, MaintenanceTask... tasks) {
        return maintenance(clock).run(EnumSet.copyOf(List.of(tasks)), false);
    }

    private void assertTableEqualsExpected() {
        TableAssertions.assertHolds(table(), expected);
    }

    private static Clock at(Instant instant) {
        return Clock.fixed(instant, ZoneOffset.UTC);
    }

    private Set<String> dataFiles(Table table) {
        Set<String> files = new HashSet<>();
        try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
            tasks.forEach(t -> files.add(t.file().location()));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return files;
    }

    private boolean exists(String location) {
        String key = location.substring(("s3://" + settings.staging().bucket() + "/").length());
        return !s3.listObjectsV2(b -> b.bucket(settings.staging().bucket()).prefix(key))
                .contents()
                .isEmpty();
    }

    @Test
    void compactionAfterManySmallMergesLeavesOneFilePerPartitionBesideTheNewestAndNoDeletes() {
        for (int i = 0; i < 30; i++) {
            mergeSmallBatch(60);
        }
        Set<String> checkpoint = Checkpoint.read(table());
        MaintenanceResult r = run(Clock.systemUTC(), MaintenanceTask.COMPACT);

        MaintenanceResult.Compaction c = r.compaction();
        assertTrue(c.dataFilesBefore() > 100, "many small files before: " + c);
        assertTrue(c.deleteFilesBefore() > 50, "many delete files before: " + c);
        int partitions = table().spec().fields().isEmpty() ? 1 : 16;
        // Each bucket's newest small file is the merger's to fold into (CompactionPlanner): left alone.
        assertEquals(2 * partitions, c.dataFilesAfter(), "one compacted file per bucket, and its newest: " + c);
        assertEquals(0, c.deleteFilesAfter(), "every delete folded in and removed: " + c);
        assertEquals(0, c.groupsLeft());
        assertTableEqualsExpected();
        assertEquals(checkpoint, Checkpoint.read(table()), "checkpoint carried into the compaction snapshot");
        assertEquals(
                checkpoint,
                Checkpoint.tokensOf(table().io(), table().currentSnapshot().summary()),
                "the compaction snapshot names the checkpoint itself");

        // the compacted files are sorted by key: merges after it still find and replace rows correctly
        mergeSmallBatch(100);
        assertTableEqualsExpected();
    }

    @Test
    void compactionIsBoundedAndFinishesOverSeveralRuns() {
        for (int i = 0; i < 12; i++) {
            mergeSmallBatch(60);
        }
        Maintenance bounded = new Maintenance(
                table(),
                settings.options().withTargetFileSize(1L << 20).withMaxGroupsPerRun(5),
                settings.stagingUri(),
                Clock.systemUTC());
        MaintenanceResult first = bounded.run(EnumSet.of(MaintenanceTask.COMPACT), false);
        assertEquals(5, first.compaction().groups());
        assertTrue(first.compaction().groupsLeft() > 0, first.toString());
        int runs = 1;
        MaintenanceResult last = first;
        while (last.compaction().groupsLeft() > 0) {
            last = new Maintenance(
                            table(),
                            settings.options().withTargetFileSize(1L << 20).withMaxGroupsPerRun(5),
                            settings.stagingUri(),
                            Clock.systemUTC())
                    .run(EnumSet.of(MaintenanceTask.COMPACT), false);
            runs++;
            assertTrue(runs < 10, "compaction does not converge");
        }
        assertTrue(
                last.compaction().dataFilesAfter() < first.compaction().dataFilesBefore(),
                "the small files are packed: " + first + " then " + last);
        MaintenanceResult again = new Maintenance(
                        table(),
                        settings.options().withTargetFileSize(1L << 20).withMaxGroupsPerRun(5),
                        settings.stagingUri(),
                        Clock.systemUTC())
                .run(EnumSet.of(MaintenanceTask.COMPACT), false);
        assertEquals(0, again.compaction().groups(), "compacted files are not rewritten again");
        assertTableEqualsExpected();
    }

    @Test
    void aMergeCommittingBeforeAGroupsCommitWinsAndTheGroupIsRewrittenWithItsDeletes() {
        for (int i = 0; i < 10; i++) {
            mergeSmallBatch(60);
        }
        MergeResult[] merge = new MergeResult[1];
        Table hooked = CommitHookCatalog.beforeEachCompaction(catalog, tableId(), t -> {
                    if (merge[0] == null) { // once: before the first group's commit
                        merge[0] = mergeSmallBatch(200);
                    }
                })
                .loadTable(tableId());
        MaintenanceResult r = maintenance(Clock.systemUTC(), hooked).run(EnumSet.of(MaintenanceTask.COMPACT), false);
        assertTrue(
                merge[0].rowsReplaced() + merge[0].itemsRemoved() > 0,
                "the merge deleted rows in files being compacted: " + merge[0]);
        assertEquals(1, merge[0].commitAttempts(), "the merge was not disturbed");
        assertEquals(List.of(), r.conflicts(), "the raced group was read and written again, not given up: " + r);
        assertEquals(0, r.compaction().groupsLeft(), r.toString());
        assertTableEqualsExpected(); // no delete of the merge lost, no row twice

        MaintenanceResult next = run(Clock.systemUTC(), MaintenanceTask.COMPACT);
        assertEquals(List.of(), next.conflicts());
        assertTableEqualsExpected();
    }

    @Test
    void aGroupWhoseCommitTheCatalogRefusesCommitsTheSameFilesAgainWithoutRewritingThem() {
        for (int i = 0; i < 10; i++) {
            mergeSmallBatch(60);
        }
        // No retries inside Iceberg: the catalog's refusal reaches the compactor at once.
        table().updateProperties().set("commit.retry.num-retries", "0").commit();
        int[] refused = new int[1];
        Table hooked = CommitHookCatalog.beforeEachCompaction(catalog, tableId(), t -> {
                    if (refused[0]++ == 0) { // the first group's first commit
                        throw new CommitFailedException("the catalog is busy (the test's refusal)");
                    }
                })
                .loadTable(tableId());
        List<String> messages = new ArrayList<>();
        MaintenanceResult r;
        try (LogCapture logs = LogCapture.json()) {
            r = maintenance(Clock.systemUTC(), hooked).run(EnumSet.of(MaintenanceTask.COMPACT), false);
            logs.all().forEach(l -> messages.add(l.path("message").asText()));
        }
        assertTrue(refused[0] > 1, "the refused commit was tried again: " + refused[0]);
        assertEquals(List.of(), r.conflicts(), r.toString());
        assertEquals(0, r.compaction().groupsLeft(), r.toString());
        assertTrue(
                messages.stream().anyMatch(m -> m.contains("committing the same files again")),
                () -> "the same files committed again: " + messages);
        assertTrue(
                messages.stream().noneMatch(m -> m.contains("reading it again")),
                () -> "no group read and written again: " + messages);
        assertTableEqualsExpected();
    }

    @Test
    void aCrashBetweenGroupsLeavesACorrectTableAndTheNextRunGoesOn() {
        for (int i = 0; i < 10; i++) {
            mergeSmallBatch(60);
        }
        int filesBefore = Compactor.fileCounts(table().currentSnapshot())[0];
        int[] commits = new int[1];
        Table hooked = CommitHookCatalog.beforeEachCompaction(catalog, tableId(), t -> {
                    if (++commits[0] == 2) { // the Lambda dies after the first group committed
                        throw new IllegalStateException("crash before the second group's commit");
                    }
                })
                .loadTable(tableId());
        RuntimeException crash = assertThrows(
                RuntimeException.class,
                () -> maintenance(Clock.systemUTC(), hooked).run(EnumSet.of(MaintenanceTask.COMPACT), false));
        assertTrue(
                String.valueOf(crash.getMessage()).contains("crash")
                        || String.valueOf(crash.getCause()).contains("crash"),
                "the crash itself: " + crash);
        int filesAfterCrash = Compactor.fileCounts(table().currentSnapshot())[0];
        assertTrue(
                filesAfterCrash < filesBefore, "the first group committed: " + filesBefore + " -> " + filesAfterCrash);
        assertTableEqualsExpected(); // the committed group and the untouched rest read as the model

        MaintenanceResult next = run(Clock.systemUTC(), MaintenanceTask.COMPACT);
        assertEquals(List.of(), next.conflicts());
        assertTrue(next.compaction().groups() > 0, "the next run compacted what was left: " + next);
        assertEquals(0, next.compaction().groupsLeft(), next.toString());
        assertTableEqualsExpected();
        mergeSmallBatch(60); // and merges go on on the compacted table
        assertTableEqualsExpected();
    }

    private CompactionSteps fanOut() {
        return new CompactionSteps(
                settings.pipeline(),
                settings.options().withTargetFileSize(16L << 20).withManifestThreshold(10),
                catalog,
                Clock.systemUTC());
    }

    @Test
    void aFanOutOfGroupsToWorkersLeavesTheTableAScheduledCompactionWould() {
        for (int i = 0; i < 10; i++) {
            mergeSmallBatch(60);
        }
        int planned = fanOut().plan(4).groups().size();
        assertTrue(planned > 1, "several groups to fan out: " + planned);

        MaintenanceResult r = fanOut().runInProcess(4);

        assertEquals(planned, r.compaction().groups(), r.toString());
        assertEquals(0, r.compaction().groupsLeft(), r.toString());
        assertEquals(List.of(), r.conflicts(), "groups share no file, so workers never race each other");
        assertTableEqualsExpected();
        MaintenanceResult scheduled = run(Clock.systemUTC(), MaintenanceTask.COMPACT);
        assertEquals(0, scheduled.compaction().groups(), "nothing left for the scheduled run: " + scheduled);
        mergeSmallBatch(60);
        assertTableEqualsExpected();
    }

    @Test
    void aGroupStepRunTwiceCommitsOnceAndAMergeBetweenPlanAndGroupLosesNothing() {
        for (int i = 0; i < 10; i++) {
            mergeSmallBatch(60);
        }
        CompactionSteps.Planned plan = fanOut().plan(2);
        mergeSmallBatch(200); // deletes rows in the planned groups' files before any worker starts
        CompactionSteps.Group first = plan.groups().get(0);
        MaintenanceResult once =
                (MaintenanceResult) fanOut().run(new CompactionSteps.Input("group", null, first.files()));
        assertEquals(1, once.compaction().groups(), once.toString());
        assertTableEqualsExpected();

        MaintenanceResult twice =
                (MaintenanceResult) fanOut().run(new CompactionSteps.Input("group", null, first.files()));
        assertEquals(0, twice.compaction().groups(), "a retried worker finds its files gone: " + twice);
        for (CompactionSteps.Group g : plan.groups().subList(1, plan.groups().size())) {
            fanOut().run(new CompactionSteps.Input("group", null, g.files()));
        }
        fanOut().run(new CompactionSteps.Input("finish", null, null));
        assertTableEqualsExpected();
    }

    @Test
    void aCompactionStepWithABadInputSaysWhatItTakes() {
        IllegalArgumentException unknown = assertThrows(
                IllegalArgumentException.class, () -> fanOut().run(new CompactionSteps.Input("compact", null, null)));
        assertTrue(unknown.getMessage().contains("plan, group, finish"), unknown.getMessage());
        IllegalArgumentException noFiles = assertThrows(
                IllegalArgumentException.class,
                () -> fanOut().run(new CompactionSteps.Input("group", null, List.of())));
        assertTrue(noFiles.getMessage().contains("\"files\""), noFiles.getMessage());
    }

    @Test
    void aGroupThatKeepsLosingRacesIsLeftToTheNextRunAndTheOthersCommit() {
        for (int i = 0; i < 10; i++) {
            mergeSmallBatch(60);
        }
        int[] merges = new int[1];
        Table hooked = CommitHookCatalog.beforeEachCompaction(catalog, tableId(), t -> {
                    if (merges[0]++ < Compactor.GROUP_ATTEMPTS) { // the first group loses every attempt
                        mergeSmallBatch(400);
                    }
                })
                .loadTable(tableId());
        MaintenanceResult r = maintenance(Clock.systemUTC(), hooked).run(EnumSet.of(MaintenanceTask.COMPACT), false);
        assertTrue(r.compaction().groups() > 0, "the other groups committed one by one: " + r);
        assertTableEqualsExpected();

        MaintenanceResult next = run(Clock.systemUTC(), MaintenanceTask.COMPACT);
        assertEquals(List.of(), next.conflicts());
        assertEquals(0, next.compaction().groupsLeft(), "the next run went on: " + next);
        assertTableEqualsExpected();
    }

    @Test
    void aCompactionCommittingBetweenMergePlanAndCommitMakesTheMergeReplan() {
        for (int i = 0; i < 10; i++) {
            mergeSmallBatch(60);
        }
        List<Change> batch = workload.next(200);
        stager.stage(StreamEvents.batch(batch).getRecords());
        expected.apply(batch);
        MaintenanceResult[] compaction = new MaintenanceResult[1];
        Catalog hooked = CommitHookCatalog.beforeEachSnapshot(catalog, tableId(), t -> {
            if (compaction[0] == null) {
                compaction[0] = run(Clock.systemUTC(), MaintenanceTask.COMPACT);
            }
        });
        MergeResult r = new Merger(hooked, settings.table(), store, UNFOLDED).run();
        assertTrue(compaction[0].compaction().groups() > 0);
        assertEquals(2, r.commitAttempts(), "the merge re-planned against the compacted files");
        assertTableEqualsExpected();
    }

    @Test
    void expiryRemovesOldSnapshotsAndTheirFilesButKeepsTheCheckpointAndTimeTravel() {
        for (int i = 0; i < 6; i++) {
            mergeSmallBatch(60);
        }
        Set<String> filesBeforeCompaction = dataFiles(table());
        run(Clock.systemUTC(), MaintenanceTask.COMPACT);
        for (int i = 0; i < 6; i++) {
            mergeSmallBatch(60);
        }
        run(Clock.systemUTC(), MaintenanceTask.COMPACT); // after it, no live snapshot needs the first files
        mergeSmallBatch(60);
        Set<String> liveFiles = dataFiles(table());
        Snapshot lastMerge = Checkpoint.newestMergerSnapshot(table());
        Set<String> checkpoint = Checkpoint.read(table());
        long snapshotsBefore = table().snapshots().spliterator().getExactSizeIfKnown();

        MaintenanceResult r = run(at(Instant.now().plus(Duration.ofHours(200))), MaintenanceTask.EXPIRE);

        Table t = table();
        List<Long> kept = new ArrayList<>();
        t.snapshots().forEach(s -> kept.add(s.snapshotId()));
        List<Long> expectedKept = new ArrayList<>();
        for (Snapshot s : SnapshotUtil.ancestorsOf(t.currentSnapshot().snapshotId(), t::snapshot)) {
            expectedKept.add(0, s.snapshotId());
            if (s.snapshotId() == lastMerge.snapshotId()) {
                break;
            }
        }
        assertEquals(
                expectedKept,
                kept,
                "every snapshot is past the maximum age, yet the newest merger snapshot (it holds the checkpoint) and the"
                        + " maintenance snapshots after it remain");
        assertTrue(kept.size() < snapshotsBefore, kept.size() + " of " + snapshotsBefore);
        assertEquals(snapshotsBefore - kept.size(), r.snapshotsExpired(), r.toString());
        assertEquals(checkpoint, Checkpoint.read(t));
        assertFalse(filesBeforeCompaction.isEmpty());
        for (String f : filesBeforeCompaction) {
            assertFalse(exists(f), "data file only expired snapshots needed is deleted: " + f);
        }
        for (String f : liveFiles) {
            assertTrue(exists(f), "data file of the current snapshot is kept: " + f);
        }
        assertTableEqualsExpected();
        try (CloseableIterable<Record> rows =
                IcebergGenerics.read(t).useSnapshot(lastMerge.snapshotId()).build()) {
            long n = 0;
            for (Record ignored : rows) {
                n++;
            }
            assertEquals(expected.items().size(), n, "time travel to the kept merger snapshot");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Test
    void expiryWithTheDefaultsKeepsRecentSnapshots() {
        for (int i = 0; i < 3; i++) {
            mergeSmallBatch(30);
        }
        MaintenanceResult r = run(Clock.systemUTC(), MaintenanceTask.EXPIRE);
        assertEquals(0, r.snapshotsExpired(), "nothing is 120 hours old");
    }

    @Test
    void orphanCleanupDeletesOnlyOldUnreferencedFilesAndNeverStagedObjects() {
        mergeSmallBatch(100);
        String bucket = settings.staging().bucket();
        String tableKey = table().location().substring(("s3://" + bucket + "/").length());
        String orphanKey = tableKey + "/data/left-by-a-crashed-commit.parquet";
        s3.putObject(b -> b.bucket(bucket).key(orphanKey), RequestBody.fromString("not referenced"));
        List<Change> pending = workload.next(10);
        stager.stage(StreamEvents.batch(pending).getRecords()); // a staged object waiting for the next merge
        List<String> staged = s3.listObjectsV2(b -> b.bucket(bucket).prefix("staging/")).contents().stream()
                .map(S3Object::key)
                .toList();

        MaintenanceResult young = run(Clock.systemUTC(), MaintenanceTask.ORPHANS);
        assertEquals(List.of(), young.orphans(), "a fresh file may belong to a commit in progress");

        Clock later = at(Instant.now().plus(Duration.ofDays(4)));
        MaintenanceResult dry = maintenance(later).run(EnumSet.of(MaintenanceTask.ORPHANS), true);
        assertEquals(List.of("s3://" + bucket + "/" + orphanKey), dry.orphans());
        assertTrue(exists("s3://" + bucket + "/" + orphanKey), "a dry run deletes nothing");

        MaintenanceResult real = run(later, MaintenanceTask.ORPHANS);
        assertEquals(List.of("s3://" + bucket + "/" + orphanKey), real.orphans());
        assertFalse(exists("s3://" + bucket + "/" + orphanKey));
        assertEquals(
                staged,
                s3.listObjectsV2(b -> b.bucket(bucket).prefix("staging/")).contents().stream()
                        .map(S3Object::key)
                        .toList(),
                "staged objects untouched");
        assertTableEqualsExpected();
    }

    @Test
    void manyManifestsAreRewrittenIntoFewWithTheCheckpointCarried() {
        for (int i = 0; i < 15; i++) {
            mergeSmallBatch(40);
        }
        int before = table().currentSnapshot().allManifests(table().io()).size();
        Set<String> checkpoint = Checkpoint.read(table());
        MaintenanceResult r = run(Clock.systemUTC(), MaintenanceTask.MANIFESTS);
        int after = table().currentSnapshot().allManifests(table().io()).size();
        assertTrue(r.manifestsRewritten() > 10, r.toString());
        assertTrue(after < before, before + " manifests before, " + after + " after");
        assertEquals(
                checkpoint,
                Checkpoint.tokensOf(table().io(), table().currentSnapshot().summary()),
                "the manifest rewrite's snapshot names the checkpoint itself");
        assertTableEqualsExpected();
    }

    @Test
    void compactionOnFormatV3FoldsDeletionVectorsIn() {
        env.put("TABLE_FORMAT_VERSION", "3");
        configure();
        for (int i = 0; i < 12; i++) {
            mergeSmallBatch(60);
        }
        MaintenanceResult r = run(Clock.systemUTC(), MaintenanceTask.COMPACT);
        assertTrue(r.compaction().deleteFilesBefore() > 0, r.toString());
        assertEquals(0, r.compaction().deleteFilesAfter(), "deletion vectors of rewritten files removed: " + r);
        assertTableEqualsExpected();
        mergeSmallBatch(100);
        assertTableEqualsExpected();
    }

    @Test
    void compactionOnFormatV3KeepsEveryRowsLineage() {
        env.put("TABLE_FORMAT_VERSION", "3");
        configure();
        for (int i = 0; i < 12; i++) {
            mergeSmallBatch(60);
        }
        Map<List<Object>, List<Long>> before = RowLineageByKey.read(table());
        assertTrue(before.values().stream().allMatch(l -> l.get(0) != null && l.get(1) != null), "lineage: " + before);

        MaintenanceResult r = run(Clock.systemUTC(), MaintenanceTask.COMPACT);

        assertTrue(r.compaction().filesRewritten() > 0, r.toString());
        // The spec's rule for a row moved to another file: its row id and its last updated sequence
        // number are copied, so a reader of row lineage sees the compaction change nothing.
        RowLineageByKey.assertKept(before, RowLineageByKey.read(table()));
        assertTableEqualsExpected();

        // A merge after it: the keys it changed have new lineage, every other key keeps its own.
        List<Change> batch = workload.next(80);
        assertTrue(stager.stage(StreamEvents.batch(batch).getRecords()).complete());
        expected.apply(batch);
        merger().run();
        Map<List<Object>, List<Long>> after = RowLineageByKey.assertMerged(table(), before, batch);
        assertTableEqualsExpected();

        // Compacted again: the files that hold their rows' lineage and the merge's, which inherit it.
        assertTrue(run(Clock.systemUTC(), MaintenanceTask.COMPACT).compaction().filesRewritten() > 0);
        RowLineageByKey.assertKept(after, RowLineageByKey.read(table()));
        assertTableEqualsExpected();
    }

    @Test
    void compactionOnFormatV3ThroughRecordsKeepsEveryRowsLineage() {
        env.put("TABLE_FORMAT_VERSION", "3");
        configure();
        for (int i = 0; i < 8; i++) {
            mergeSmallBatch(60);
        }
        // Files of an older partition spec are rewritten through Iceberg's records, not copied.
        table().updateSpec().addField(Expressions.truncate("pk", 6)).commit();
        for (int i = 0; i < 2; i++) {
            mergeSmallBatch(60);
        }
        Map<List<Object>, List<Long>> before = RowLineageByKey.read(table());

        MaintenanceResult r = run(Clock.systemUTC(), MaintenanceTask.COMPACT);

        assertTrue(r.compaction().filesRewritten() > 0, r.toString());
        RowLineageByKey.assertKept(before, RowLineageByKey.read(table()));
        assertTableEqualsExpected();
    }

    @Test
    void aTableWithAnotherPartitionSpecIsMergedAndCompactedCorrectly() {
        env.put("PARTITION_SPEC", "truncate(6, pk), bucket(4, sk)");
        env.put("PARTITION_KEY", "pk");
        configure();
        for (int i = 0; i < 8; i++) {
            mergeSmallBatch(80);
        }
        assertEquals(2, table().spec().fields().size());
        run(Clock.systemUTC(), MaintenanceTask.COMPACT);
        assertTableEqualsExpected();
        mergeSmallBatch(100);
        assertTableEqualsExpected();
    }

    @Test
    void anUnpartitionedTableWorksToo() {
        env.put("PARTITION_SPEC", "none");
        configure();
        for (int i = 0; i < 8; i++) {
            mergeSmallBatch(80);
        }
        assertTrue(table().spec().isUnpartitioned());
        MaintenanceResult r = run(Clock.systemUTC(), MaintenanceTask.COMPACT);
        assertEquals(2, r.compaction().dataFilesAfter(), "the compacted file and the newest, the merger's: " + r);
        assertTableEqualsExpected();
    }

    @Test
    void anUnpartitionedTablesDeleteFilesOutliveOrphanRemovalAndEveryReaderAppliesThem() {
        env.put("PARTITION_SPEC", "none");
        configure();
        for (int i = 0; i < 6; i++) {
            mergeSmallBatch(80);
        }
        List<DeleteFile> deletes = liveDeleteFiles();
        assertFalse(deletes.isEmpty(), "the merges left position delete files");
        for (DeleteFile d : deletes) {
            assertFalse(ObjectPaths.hasEmptySegment(d.location()), "a delete file's path: " + d.location());
        }

        MaintenanceResult r = run(at(Instant.now().plus(Duration.ofDays(4))), MaintenanceTask.ORPHANS);

        assertEquals(List.of(), r.orphans(), "every file under the table is referenced");
        assertEveryReferencedFileExists();
        assertTableEqualsExpected(); // Iceberg's reader applies the deletes
        mergeSmallBatch(80); // the merge's lookup reads them, and carries them into its new delete files
        assertTableEqualsExpected();
        run(Clock.systemUTC(), MaintenanceTask.COMPACT); // compaction applies them
        assertTableEqualsExpected();
    }

    /**
     * A table merged before 2026-12-08 references an unpartitioned data file's delete file as
     * {@code .../data//name}. The embedded store, as some S3-compatible stores do, keeps and lists
     * that key as {@code .../data/name}; orphan removal once compared the two as strings and deleted
     * the live file. On S3 itself the two are different keys, which the same comparison keeps.
     */
    @Test
    void aDeleteFileReferencedWithADoubledSlashIsKeptByOrphanRemovalAndRewrittenAwayByCompaction() {
        env.put("PARTITION_SPEC", "none");
        configure();
        for (int i = 0; i < 6; i++) {
            mergeSmallBatch(80);
        }
        DeleteFile live = liveDeleteFiles().get(0);
        String legacy = live.location().replace("/data/", "/data//legacy-");
        String bucket = settings.staging().bucket();
        String legacyKey = legacy.substring(("s3://" + bucket + "/").length());
        // Written with the S3 client: the table's FileIO refuses a path with an empty segment.
        s3.putObject(
                b -> b.bucket(bucket).key(legacyKey),
                RequestBody.fromBytes(s3.getObjectAsBytes(
                                b -> b.bucket(bucket).key(live.location().substring(("s3://" + bucket + "/").length())))
                        .asByteArray()));
        table().newRewrite()
                .deleteFile(live)
                .addFile(
                        FileMetadata.deleteFileBuilder(table().spec())
                                .copy(live)
                                .withPath(legacy)
                                .build(),
                        live.dataSequenceNumber())
                .commit();
        assertTrue(
                liveDeleteFiles().stream().anyMatch(d -> d.location().equals(legacy)),
                "the table references " + legacy);

        MaintenanceResult r;
        List<String> warnings;
        try (LogCapture logs = LogCapture.json()) {
            r = run(at(Instant.now().plus(Duration.ofDays(4))), MaintenanceTask.ORPHANS);
            warnings = logs.all().stream()
                    .filter(l -> l.path("level").asText().equals("WARN"))
                    .map(l -> l.path("message").asText())
                    .toList();
        }

        assertEquals(List.of(), r.orphans(), "no orphan: the delete file is live under another spelling");
        assertTrue(
                warnings.stream()
                        .anyMatch(w -> w.startsWith("Kept 1 files that the table references under another")
                                && w.contains(legacy)),
                "a warning names the file kept in doubt: " + warnings);
        assertEveryReferencedFileExists();
        assertTableEqualsExpected();

        MaintenanceResult compacted = run(Clock.systemUTC(), MaintenanceTask.COMPACT);

        assertTrue(compacted.compaction().filesRewritten() > 0, compacted.toString());
        assertTrue(
                liveDeleteFiles().stream().noneMatch(d -> ObjectPaths.hasEmptySegment(d.location())),
                "compaction rewrote the data file whose delete file had an empty path segment: " + liveDeleteFiles());
        assertTableEqualsExpected();
    }

    private List<DeleteFile> liveDeleteFiles() {
        List<DeleteFile> deletes = new ArrayList<>();
        try (CloseableIterable<FileScanTask> tasks = table().newScan().planFiles()) {
            tasks.forEach(t -> deletes.addAll(t.deletes()));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return deletes;
    }

    private void assertEveryReferencedFileExists() {
        Table table = table();
        List<String> missing = new ArrayList<>();
        try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
            for (FileScanTask t : tasks) {
                if (!table.io().newInputFile(t.file().location()).exists()) {
                    missing.add(t.file().location());
                }
                t.deletes().stream()
                        .map(DeleteFile::location)
                        .filter(d -> !table.io().newInputFile(d).exists())
                        .forEach(missing::add);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        assertEquals(List.of(), missing, "files the current snapshot references that do not exist");
    }

    @Test
    void aDryRunChangesNothing() {
        for (int i = 0; i < 10; i++) {
            mergeSmallBatch(50);
        }
        long snapshot = table().currentSnapshot().snapshotId();
        MaintenanceResult r = maintenance(at(Instant.now().plus(Duration.ofDays(10))))
                .run(EnumSet.allOf(MaintenanceTask.class), true);
        assertTrue(r.dryRun());
        assertTrue(r.compaction().groups() > 0 && r.snapshotsExpired() > 0, r.toString());
        assertEquals(snapshot, table().currentSnapshot().snapshotId());
    }
}
