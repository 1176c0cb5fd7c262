package dev.ddb2iceberg.merge;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.commit.Checkpoint;
import dev.ddb2iceberg.commit.FanOutMark;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.history.ChangeHistory;
import dev.ddb2iceberg.index.IndexCache;
import dev.ddb2iceberg.lookup.IndexLookup;
import dev.ddb2iceberg.lookup.LiveRowLookup;
import dev.ddb2iceberg.lookup.ScanLookup;
import dev.ddb2iceberg.maintenance.Maintenance;
import dev.ddb2iceberg.maintenance.MaintenanceOptions;
import dev.ddb2iceberg.maintenance.MaintenanceResult;
import dev.ddb2iceberg.maintenance.MaintenanceTask;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.table.TableLayout;
import dev.ddb2iceberg.testkit.CommitHookCatalog;
import dev.ddb2iceberg.testkit.Compaction;
import dev.ddb2iceberg.testkit.LiveRows;
import dev.ddb2iceberg.testkit.MergerFixture;
import dev.ddb2iceberg.testkit.OrderWorkload;
import dev.ddb2iceberg.testkit.TableItems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.stream.Collectors;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * A staged backlog merged by key-range workers and one commit ({@link FanOutMerge}) against the
 * embedded S3 server and the SQLite catalog: it must leave what the scheduled merger leaves for the
 * same staged changes (the table, its change history, a key index later merges trust), hold
 * scheduled merges while it runs, apply its slice once however its steps are retried, and commit
 * nothing when it loses its race.
 */
@ExtendWith(S3ServerExtension.class)
class FanOutMergeTest {
    @TempDir
    Path dir;

    /** The item keys of every change staged: held, removed, or both in turn. */
    private final Set<Map<String, DdbValue>> touched = new HashSet<>();

    /** Orders with soft deletes, marked TTL expiries and a change history: every path of a merge. */
    private static final Map<String, String> SETTINGS =
            Map.of("HISTORY_TABLE", "orders_history", "DELETES", "soft", "TTL_EXPIRIES", "mark");

    @Test
    void aFannedOutMergeLeavesWhatScheduledMergesLeaveForTheSameChanges(EmbeddedS3Server server) throws Exception {
        Files.createDirectories(dir.resolve("single"));
        Files.createDirectories(dir.resolve("fanned"));
        MergerFixture single = new MergerFixture(server, dir.resolve("single"), SETTINGS);
        MergerFixture fanned = new MergerFixture(server, dir.resolve("fanned"), SETTINGS);
        OrderWorkload workload = new OrderWorkload(7, 400);
        // A first minute merged by both: the table and its key index exist, as a fan-out needs.
        stageMinute(workload, 600, single, fanned);
        single.merger().run();
        fanned.merger().run();
        for (int minute = 0; minute < 8; minute++) {
            stageMinute(workload, 500, single, fanned);
        }

        while (single.merger().run().backlogObjects() > 0) {
            // scheduled merges, one after another, until nothing waits
        }
        FanOutMerge.Committed committed = fanOut(fanned).runLocally(4);

        assertNotNull(committed.snapshotId(), "the fan-out committed");
        assertEquals(
                fanned.model.items().size(), TableItems.read(fanned.table()).size(), "items in the table");
        fanned.assertTableHoldsModel();
        single.assertTableHoldsModel();
        assertEquals(TableItems.read(single.table()), TableItems.read(fanned.table()), "the two tables' items");
        assertEquals(
                TableItems.marks(single.table()), TableItems.marks(fanned.table()), "the two tables' removal marks");
        assertEquals(historyOf(single), historyOf(fanned), "the two change histories");
        assertTrue(
                fanned.store().list().isEmpty(),
                "staged objects left: " + fanned.store().list());
        assertNull(FanOutMark.read(fanned.table()), "the mark is gone");
        assertEquals(committed.objects(), Checkpoint.read(fanned.table()).size(), "objects the checkpoint names");

        assertIndexFindsTheRowsAScanFinds(fanned, touched);
        // The key index the fan-out committed is trusted as it is: the next merge reads no data file.
        stageMinute(workload, 500, single, fanned);
        MergeResult next = fanned.merger().run();
        assertEquals(0, next.filesRead(), "data files the merge after the fan-out read (a rebuilt index reads all)");
        fanned.assertTableHoldsModel();
    }

    @Test
    void scheduledMergesHoldWhileAFanOutRunsAndResumeAfterItsAbort(EmbeddedS3Server server) {
        MergerFixture f = withBacklog(server, Map.of(), 11, 200, 300, 1);
        FanOutMerge fanOut = fanOut(f);
        FanOutMerge.Planned planned = fanOut.plan(2, "execution-1");

        MergeResult held = f.merger().run();
        assertNotNull(held.heldBecause(), "a scheduled merge during the fan-out is held");
        assertTrue(held.heldBecause().contains(planned.mergeId()), held.heldBecause());
        assertEquals(planned, fanOut.plan(2, "execution-1"), "a retried plan step finds its own plan");
        assertThrows(IllegalStateException.class, () -> fanOut.plan(2, "execution-2"), "a second fan-out at once");

        fanOut.abort(planned.mergeId(), "stopped by the test");
        assertNull(FanOutMark.read(f.table()), "the mark is gone");
        MergeResult resumed = f.merger().run();
        assertNull(resumed.heldBecause(), "merges resume");
        f.assertTableHoldsModel();
    }

    /**
     * A scheduled merge that planned before a fan-out marked the table steps back at its commit
     * (here the fan-out marks it while the merge appends to the change history): the merge is held,
     * nothing of it is committed, and the fan-out's commit then finds the table as its plan saw it.
     */
    @Test
    void aMergeThatPlannedBeforeTheFanOutsMarkDoesNotCommitAfterIt(EmbeddedS3Server server) {
        MergerFixture f = withBacklog(server, Map.of("HISTORY_TABLE", "orders_history"), 29, 200, 300, 2);
        long before = f.table().currentSnapshot().snapshotId();
        FanOutMerge.Planned[] planned = new FanOutMerge.Planned[1];
        Catalog racing = CommitHookCatalog.beforeEachSnapshot(
                f.catalog(), TableIdentifier.of(f.settings().table().namespace(), "orders_history"), history -> {
                    if (planned[0] == null) {
                        planned[0] = fanOut(f).plan(2, "execution-1");
                    }
                });

        MergeResult merge =
                new Merger(racing, f.settings().table(), f.store(), f.settings().options()).run();

        assertNotNull(planned[0], "the fan-out planned while the merge ran");
        assertNotNull(merge.heldBecause(), "the merge is held: " + merge);
        assertTrue(merge.heldBecause().contains(planned[0].mergeId()), merge.heldBecause());
        assertEquals(before, f.table().currentSnapshot().snapshotId(), "the merge committed nothing to the table");
        FanOutMerge fanOut = fanOut(f);
        for (int w = 0; w < planned[0].works(); w++) {
            fanOut.shuffle(planned[0].mergeId(), w);
        }
        for (int r = 0; r < planned[0].ranges(); r++) {
            fanOut.mergeRange(planned[0].mergeId(), r);
        }
        assertNotNull(fanOut.commit(planned[0].mergeId()).snapshotId(), "the fan-out commits");
        f.assertTableHoldsModel();
        assertTrue(
                f.store().list().isEmpty(), "staged objects left: " + f.store().list());
    }

    @Test
    void maintenanceLeavesCompactionWhileAFanOutRuns(EmbeddedS3Server server) {
        // Merges that fold nothing leave a small file a partition each: work for compaction.
        MergerFixture f = withBacklog(server, Map.of("REWRITE_FILES_BELOW_BYTES", "0"), 31, 200, 300, 1);
        for (int merge = 0; merge < 6; merge++) {
            stageMinute(new OrderWorkload(100 + merge, 200), 100, f);
            f.merger().run();
        }
        stageMinute(new OrderWorkload(41, 200), 300, f);
        FanOutMerge.Planned planned = fanOut(f).plan(2, "execution-1");
        Maintenance maintenance =
                new Maintenance(f.table(), MaintenanceOptions.DEFAULTS, "s3://unused/staging/", Clock.systemUTC());

        assertTrue(maintenance.compactionGroups().isEmpty(), "groups the compaction fan-out would get");
        MaintenanceResult during = maintenance.run(EnumSet.of(MaintenanceTask.COMPACT), false);
        assertEquals(0, during.compaction().groups(), "groups compacted while the fan-out runs");

        fanOut(f).abort(planned.mergeId(), "the test is done with it");
        MaintenanceResult after = new Maintenance(
                        f.table(), MaintenanceOptions.DEFAULTS, "s3://unused/staging/", Clock.systemUTC())
                .run(EnumSet.of(MaintenanceTask.COMPACT), false);
        assertTrue(after.compaction().groups() > 0, "groups compacted once it ended: " + after);
    }

    @Test
    void aMarkLeftByADeadExecutionIsAbortedByTheNextPlanAfterSixHours(EmbeddedS3Server server) {
        MergerFixture f = withBacklog(server, Map.of(), 23, 200, 300, 1);
        FanOutMerge.Planned dead = fanOut(f).plan(2, "execution-that-died");
        assertThrows(IllegalStateException.class, () -> fanOut(f).plan(2, "execution-2"), "refused while fresh");
        markedSevenHoursAgo(f, dead.mergeId(), "execution-that-died");

        FanOutMerge.Planned next = fanOut(f).plan(2, "execution-3");

        assertNotNull(next.mergeId(), "the next plan goes ahead");
        assertNotEquals(dead.mergeId(), next.mergeId(), "a new fan-out");
        assertEquals(next.mergeId(), FanOutMark.read(f.table()).mergeId(), "the table carries the new mark");
    }

    @Test
    void aScheduledMergeEndsAFanOutLeftForSixHoursAndMerges(EmbeddedS3Server server) {
        MergerFixture f = withBacklog(server, Map.of(), 37, 200, 300, 1);
        FanOutMerge.Planned dead = fanOut(f).plan(2, "execution-that-died");
        markedSevenHoursAgo(f, dead.mergeId(), "execution-that-died");

        MergeResult merged = f.merger().run();

        assertNull(merged.heldBecause(), "a stale mark holds no merge: " + merged);
        assertNull(FanOutMark.read(f.table()), "the mark is gone");
        f.assertTableHoldsModel();
    }

    @Test
    void retriedStepsAndARepeatedCommitApplyTheSliceOnce(EmbeddedS3Server server) {
        MergerFixture f = withBacklog(server, Map.of("HISTORY_TABLE", "orders_history"), 13, 300, 400, 3);
        FanOutMerge fanOut = fanOut(f);
        FanOutMerge.Planned planned = fanOut.plan(3, "execution-1");
        for (int w = 0; w < planned.works(); w++) {
            fanOut.shuffle(planned.mergeId(), w);
            fanOut.shuffle(planned.mergeId(), w); // a retried shuffle writes the same shards again
        }
        for (int r = 0; r < planned.ranges(); r++) {
            fanOut.mergeRange(planned.mergeId(), r);
        }
        fanOut.mergeRange(planned.mergeId(), 1); // a retried range: its second record counts
        FanOutMerge.Committed first = fanOut.commit(planned.mergeId());
        int snapshots = size(f.table().snapshots());
        int historyRows = historyOf(f).size();

        assertNotNull(first.snapshotId(), "committed");
        f.assertTableHoldsModel();
        assertEquals(f.model.items().size(), TableItems.read(f.table()).size(), "one row per item");
        FanOutMerge.Committed again = fanOut.commit(planned.mergeId()); // its answer was lost, say
        assertEquals(first.snapshotId(), again.snapshotId(), "a repeated commit step finds the fan-out's commit");
        assertEquals(snapshots, size(f.table().snapshots()), "snapshots after the repeated commit");
        assertEquals(false, fanOut.abort(planned.mergeId(), "a late abort").aborted(), "an abort after the commit");
        assertEquals(historyRows, historyOf(f).size(), "history rows after the repeated commit");
        assertEquals(0, f.merger().run().changesRead(), "nothing left to merge");
        f.assertTableHoldsModel();
    }

    @Test
    void aCommitThatLosesToACompactionCommitsNothingAndTheSliceWaitsForScheduledMerges(EmbeddedS3Server server) {
        MergerFixture f = withBacklog(server, Map.of(), 17, 200, 300, 1);
        FanOutMerge fanOut = fanOut(f);
        FanOutMerge.Planned planned = fanOut.plan(2, "execution-1");
        for (int w = 0; w < planned.works(); w++) {
            fanOut.shuffle(planned.mergeId(), w);
        }
        for (int r = 0; r < planned.ranges(); r++) {
            fanOut.mergeRange(planned.mergeId(), r);
        }
        long before = f.table().currentSnapshot().snapshotId();
        Compaction.rewriteAll(f.table()); // rewrites the files the fan-out deletes rows from

        assertThrows(RuntimeException.class, () -> fanOut.commit(planned.mergeId()), "the commit loses its race");
        fanOut.abort(planned.mergeId(), "the commit lost its race");
        Table table = f.table();
        assertTrue(
                table.currentSnapshot().parentId() == before
                        && table.currentSnapshot().summary().get("ddb2iceberg.merge-run-id") == null,
                "nothing of the fan-out was committed");
        assertEquals(planned.objects(), f.store().list().size(), "the slice stays staged");
        while (f.merger().run().backlogObjects() > 0) {
            // scheduled merges take the slice
        }
        f.assertTableHoldsModel();
    }

    @Test
    void aBacklogPastTheSliceBoundIsTakenOldestFirstInSeveralFanOuts(EmbeddedS3Server server) {
        MergerFixture f = withBacklog(server, Map.of(), 19, 200, 300, 3);
        int staged = f.store().list().size();
        long sliceBytes =
                f.store().list().stream().limit(3).mapToLong(o -> o.size()).sum();

        FanOutMerge.Committed first = fanOut(f).withMaxSliceBytes(sliceBytes).runLocally(2);

        assertEquals(3, first.objects(), "objects in the first slice");
        assertEquals(staged - 3, first.objectsLeft(), "objects left for the next fan-out");
        assertEquals(staged - 3, f.store().list().size(), "still staged");
        int fanOuts = 1;
        for (FanOutMerge.Committed c = first; c.objectsLeft() > 0; fanOuts++) {
            c = fanOut(f).withMaxSliceBytes(sliceBytes).runLocally(2);
        }
        assertEquals((staged + 2) / 3, fanOuts, "fan-outs of three objects each");
        assertTrue(
                f.store().list().isEmpty(), "staged objects left: " + f.store().list());
        f.assertTableHoldsModel();
    }

    /** Every key the workload touched, held or removed: the index must point each to the row a scan of the key columns finds. */
    private static void assertIndexFindsTheRowsAScanFinds(MergerFixture f, Set<Map<String, DdbValue>> itemKeys) {
        Table table = f.table();
        TableLayout layout = TableLayout.of(table);
        List<List<Object>> keys = itemKeys.stream()
                .map(k -> layout.keyOf(new Change(k, Operation.REMOVE, null, "1", 0, false)))
                .toList();
        long snapshot = table.currentSnapshot().snapshotId();
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            Map<List<Object>, Set<String>> scan = rows(keys, new ScanLookup(pool).find(table, layout, snapshot, keys));
            LiveRowLookup.Found found =
                    IndexLookup.readOnly(pool, new IndexCache(0)).find(table, layout, snapshot, keys);
            assertEquals(
                    scan, rows(keys, found), "each key's live row, by the key index and by a scan of the key columns");
            assertEquals(0, found.filesRead(), "data files the index lookup read");
        } finally {
            pool.shutdownNow();
        }
    }

    private static Map<List<Object>, Set<String>> rows(List<List<Object>> keys, LiveRowLookup.Found found) {
        return LiveRows.described(keys, found);
    }

    /** Dates the table's fan-out mark seven hours back, as a mark left by an execution that died. */
    private static void markedSevenHoursAgo(MergerFixture f, String mergeId, String execution) {
        f.table()
                .updateProperties()
                .set(
                        "ddb2iceberg.fan-out-merge",
                        new FanOutMark(
                                        mergeId,
                                        Instant.now().minus(Duration.ofHours(7)).toString(),
                                        execution)
                                .encode())
                .commit();
    }

    private static FanOutMerge fanOut(MergerFixture f) {
        return new FanOutMerge(
                f.catalog(), f.settings().table(), f.store(), f.settings().options());
    }

    /**
     * A table with its key index (one merge of a first minute of orders), then a backlog of
     * {@code minutes} more minutes of {@code changes} changes each, staged.
     */
    private MergerFixture withBacklog(
            EmbeddedS3Server server, Map<String, String> settings, long seed, int items, int changes, int minutes) {
        MergerFixture f = new MergerFixture(server, dir, settings);
        OrderWorkload workload = new OrderWorkload(seed, items);
        stageMinute(workload, changes, f);
        f.merger().run();
        for (int minute = 0; minute < minutes; minute++) {
            stageMinute(workload, changes, f);
        }
        return f;
    }

    /** The next minute of the workload, staged into each fixture (each batch its own staged object). */
    private void stageMinute(OrderWorkload workload, int changes, MergerFixture... fixtures) {
        for (OrderWorkload.ShardChanges shard : workload.minute(changes, 0)) {
            for (int from = 0; from < shard.changes().size(); from += 100) {
                List<Change> batch =
                        shard.changes().subList(from, Math.min(shard.changes().size(), from + 100));
                for (MergerFixture f : fixtures) {
                    f.stage(batch);
                }
            }
        }
    }

    /** The change history's rows, as the changes they record. */
    private static Set<String> historyOf(MergerFixture f) {
        Table history =
                f.catalog().loadTable(TableIdentifier.of(f.settings().table().namespace(), "orders_history"));
        return ChangeHistory.changes(history).stream()
                .map(c -> c.sequenceNumber() + " " + c.operation() + " " + c.keys() + " " + c.newImage())
                .collect(Collectors.toCollection(HashSet::new));
    }

    private static int size(Iterable<?> items) {
        int n = 0;
        for (Object ignored : items) {
            n++;
        }
        return n;
    }
}
