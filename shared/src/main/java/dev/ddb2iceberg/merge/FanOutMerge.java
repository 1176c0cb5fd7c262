package dev.ddb2iceberg.merge;

import dev.ddb2iceberg.commit.Checkpoint;
import dev.ddb2iceberg.commit.CommitProtocol;
import dev.ddb2iceberg.commit.FanOutMark;
import dev.ddb2iceberg.commit.LoadMark;
import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.history.ChangeHistory;
import dev.ddb2iceberg.index.IndexCache;
import dev.ddb2iceberg.index.IndexEntries;
import dev.ddb2iceberg.index.IndexKeys;
import dev.ddb2iceberg.index.KeyIndex;
import dev.ddb2iceberg.lookup.IndexLookup;
import dev.ddb2iceberg.lookup.LiveRow;
import dev.ddb2iceberg.lookup.LiveRowLookup;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.removals.RemovalsIndex;
import dev.ddb2iceberg.staging.StagedFormat;
import dev.ddb2iceberg.staging.StagedObject;
import dev.ddb2iceberg.staging.StagedObjectName;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.table.DerivedFiles;
import dev.ddb2iceberg.table.SchemaEvolution;
import dev.ddb2iceberg.table.StepFiles;
import dev.ddb2iceberg.table.TableCreator;
import dev.ddb2iceberg.table.TableLayout;
import dev.ddb2iceberg.table.TableSettings;
import dev.ddb2iceberg.util.Futures;
import dev.ddb2iceberg.write.MergeWriter;
import java.io.Serializable;
import java.math.BigInteger;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.RowDelta;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.ValidationException;
import org.apache.iceberg.io.DeleteWriteResult;
import org.apache.iceberg.io.SupportsPrefixOperations;
import org.apache.iceberg.util.StructLikeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A large staged backlog merged by many workers at once, recorded by one commit: the merge of
 * {@link Merger}, split by key so that each worker owns its keys. The steps are those a state
 * machine runs (Step Functions' maps in AWS; {@link #runLocally} runs them with a thread pool), and
 * they keep their state in the merge's folder beside the table's derived files:
 *
 * <ol>
 *   <li>{@link #plan}: takes the staged objects the checkpoint does not name (the slice), checks that
 *       the current snapshot's key index can be read as it is, splits the slice into shuffle work
 *       items, and marks the table: while {@link FanOutMark} is set, scheduled merges hold, so
 *       nothing changes the slice's keys until the commit.
 *   <li>{@link #shuffle}, one per work item, in parallel: reads its staged objects, adds the columns
 *       their items need (a schema commit), and writes their changes split into key ranges (a hash
 *       of the encoded key), one shard file per range.
 *   <li>{@link #mergeRange}, one per key range, in parallel: the range's changes through the same
 *       stages as a merge ({@link KeyChanges}, a read-only key index lookup in the planned
 *       snapshot, {@link RowPlan}), its new rows written as data files, and what the commit needs
 *       recorded: the rows to delete, the index entries, the changes the removals index must know.
 *       Nothing is committed; a retried range writes new files and replaces its record.
 *   <li>{@link #commit}: the history appended (if any), the deletes written (one writer per data
 *       file, as in a merge), the removals index and key index deltas written, and one RowDelta
 *       validated from the planned snapshot, whose checkpoint names the whole slice. Then the mark
 *       goes and the staged objects are deleted. A repeated commit step finds its run id in the
 *       table and only finishes.
 * </ol>
 *
 * <p>The merge does not fold small files (each range writes its own files; compaction takes them).
 * A commit that loses its race (a compaction rewrote a file the merge deletes from) commits nothing:
 * {@link #abort} removes the mark and the merge's files, and scheduled merges take the slice.
 */
public final class FanOutMerge {
    private static final Logger LOG = LoggerFactory.getLogger(FanOutMerge.class);
    /** A shuffle work item reads at most this many compressed bytes of staged objects (a slice has about as many work items as workers, or more). */
    static final long SHUFFLE_BYTES_PER_WORK = 128L << 20;
    /**
     * A mark older than this is a dead execution's: a slice's three stages (shuffle, ranges, commit)
     * each end within Lambda's 15 minutes, tried at most three times, so a live slice is under 2.5
     * hours old.
     */
    static final Duration STALE_MARK = Duration.ofHours(6);
    /** Key ranges at most: each writes a file per partition it touches. */
    static final int MAX_RANGES = 1_000;
    /**
     * A fan-out takes at most this many compressed bytes of staged objects, oldest first (about 7M
     * changes of ~600-byte items): its commit step holds an index entry and a row to delete per
     * change, and must fit its Lambda. A bigger backlog is fanned out again after the commit.
     */
    static final long MAX_SLICE_BYTES = 2L << 30;
    /** With a change history the commit also holds the slice's changes to append: about 1M of them. */
    static final long MAX_SLICE_BYTES_WITH_HISTORY = 256L << 20;
    /** Objects a slice takes at most: each is a token in the checkpoint of every snapshot until the next merge. */
    static final int MAX_SLICE_OBJECTS = 10_000;

    private final Catalog catalog;
    private final TableIdentifier id;
    private final TableSettings tableSettings;
    private final StagingStore store;
    private final MergeOptions options;
    private final ChangeHistory history;
    private long maxSliceBytes = MAX_SLICE_BYTES;

    public FanOutMerge(Catalog catalog, TableSettings tableSettings, StagingStore store, MergeOptions options) {
        this.catalog = catalog;
        this.id = TableIdentifier.of(tableSettings.namespace(), tableSettings.name());
        this.tableSettings = tableSettings;
        this.store = store;
        this.options = options;
        this.history = tableSettings.historyTable() == null ? null : new ChangeHistory(catalog, tableSettings);
    }

    /**
     * The plan, kept as {@code plan.bin} in the merge's folder.
     *
     * @param objectKeys the slice's staged objects, oldest first
     * @param bytes their compressed size
     * @param works where each shuffle work item starts in {@code objectKeys}, and the end
     * @param objectsLeft staged objects past the slice's bound, for a fan-out after this one
     * @param stillStaged checkpoint tokens of objects applied earlier that are still staged: the
     *     commit keeps them in the checkpoint and deletes them
     */
    record Plan(
            String mergeId,
            long baseSnapshotId,
            List<String> objectKeys,
            long bytes,
            int[] works,
            int ranges,
            List<String> stillStaged,
            long removalsCutoff,
            int objectsLeft,
            String execution)
            implements Serializable {
        int workCount() {
            return works.length - 1;
        }
    }

    /** What a plan step tells its caller; {@code mergeId} is null when nothing was staged. */
    public record Planned(String mergeId, int works, int ranges, int objects, long bytes) {}

    /** What a shuffle work item wrote: changes per range, kept as {@code shuffled/w<i>.bin}. */
    record Shuffle(int work, int[] changesPerRange, long oldestChangeMillis) implements Serializable {}

    /** A shuffle step's summary. */
    public record Shuffled(int work, int objects, long changes, long millis) {}

    /**
     * What a key range left for the commit, kept as {@code ranges/r<i>.bin}: its data files, the
     * rows to delete (data file and position, in step), its key index entries (tombstones have no
     * file), the changes the removals index must know (in the staged format), and its counts.
     */
    record Range(
            int range,
            List<DataFile> dataFiles,
            List<String> deleteFiles,
            long[] deletePositions,
            List<byte[]> entryKeys,
            List<String> entryFiles,
            long[] entryPositions,
            List<BigInteger> entrySequences,
            byte[] removalsSeen,
            long changes,
            long applied,
            long itemsWritten,
            long rowsReplaced,
            long itemsRemoved,
            long stale,
            int quarantined)
            implements Serializable {}

    /** What an abort did: {@code aborted} is false when the fan-out had committed (it was finished instead). */
    public record Ended(boolean aborted, int filesDeleted) {}

    /** A range step's summary. */
    public record Ranged(
            int range, long changes, long itemsWritten, long rowsReplaced, long itemsRemoved, long millis) {}

    /**
     * The commit's summary; {@code snapshotId} is the fan-out's snapshot (also when a retried commit
     * finds it); {@code objectsLeft} the staged objects past its slice's bound when it was planned.
     */
    public record Committed(
            Long snapshotId,
            int objects,
            long changes,
            long changesApplied,
            long itemsWritten,
            long rowsReplaced,
            long itemsRemoved,
            long staleSkipped,
            int quarantined,
            int dataFiles,
            int deleteFiles,
            int objectsLeft,
            long millis) {}

    public TableIdentifier tableId() {
        return id;
    }

    /** This fan-out with slices of at most {@code bytes} (tests: a backlog taken in several slices). */
    FanOutMerge withMaxSliceBytes(long bytes) {
        this.maxSliceBytes = bytes;
        return this;
    }

    /**
     * Plans a fan-out of what is staged into {@code ranges} key ranges, and marks the table. A plan
     * step retried with the same {@code execution} finds its own mark and plan.
     */
    public Planned plan(int ranges, String execution) {
        return plan(ranges, execution, 0);
    }

    /**
     * As {@link #plan(int, String)}, but plans nothing (and leaves the table unmarked) while the
     * staged backlog holds fewer than {@code minBytes} compressed bytes: scheduled merges keep up
     * with it on their own.
     */
    public Planned plan(int ranges, String execution, long minBytes) {
        if (ranges < 1 || ranges > MAX_RANGES) {
            throw new IllegalArgumentException(
                    "A fanned-out merge takes 1 to " + MAX_RANGES + " key ranges (workers), not " + ranges);
        }
        Table table = TableCreator.loadIfExists(catalog, id);
        FanOutMark mark = table == null ? null : FanOutMark.read(table);
        if (mark != null && !Objects.equals(mark.execution(), execution) && isStale(mark)) {
            // Its execution died between marking and ending (a plan step that timed out, an execution
            // stopped by hand): nothing of it can commit any more, and merges would hold for ever.
            abortStale(mark.mergeId());
            table.refresh();
            mark = FanOutMark.read(table);
        }
        if (!options.keyIndex()) {
            throw new IllegalStateException(
                    "A fanned-out merge finds rows through the key index, and KEY_INDEX is off: merge with the scheduled merger");
        }
        if (table == null || table.currentSnapshot() == null) {
            throw new IllegalStateException("Table " + id + " has no snapshot yet: a fanned-out merge adds to a table"
                    + " a scheduled merge or an export load made (let one merge run first)");
        }
        TableCreator.adopt(table, tableSettings);
        String mergeId;
        if (mark != null) {
            if (execution == null || !execution.equals(mark.execution())) {
                throw new IllegalStateException("Fanned-out merge " + mark.mergeId() + " of table " + id
                        + " is in progress since " + mark.started() + ": one at a time (its execution "
                        + mark.execution() + " commits or aborts it)");
            }
            if (StepFiles.exists(table, folder(table, mark.mergeId()) + "plan.bin")) {
                Plan plan = readPlan(table, mark.mergeId()); // a retried plan step finds its own plan
                return new Planned(
                        plan.mergeId(),
                        plan.workCount(),
                        plan.ranges(),
                        plan.objectKeys().size(),
                        plan.bytes());
            }
            mergeId = mark.mergeId(); // it marked the table and failed before writing its plan
        } else {
            LoadMark load = LoadMark.read(table);
            if (load != null) {
                throw new IllegalStateException("Parallel load " + load.loadId() + " of table " + id
                        + " is in progress: a fanned-out merge waits until it commits");
            }
            List<StagedObject> backlog = pending(table);
            long backlogBytes = backlog.stream().mapToLong(StagedObject::size).sum();
            if (backlog.isEmpty() || backlogBytes < minBytes) {
                LOG.info(
                        "{} staged objects ({} bytes) for table {}, under the {} bytes a fanned-out merge takes:"
                                + " scheduled merges take them",
                        backlog.size(),
                        backlogBytes,
                        id,
                        minBytes);
                return new Planned(null, 0, 0, backlog.size(), backlogBytes);
            }
            // Mark first, then take the base snapshot and the slice: a merge that planned before the
            // mark steps back at its commit (ChangeApplier), so nothing lands between the two.
            mergeId = UUID.randomUUID().toString();
            table.updateProperties()
                    .set(
                            PipelineProperties.FAN_OUT_MERGE_IN_PROGRESS,
                            new FanOutMark(mergeId, Instant.now().toString(), execution).encode())
                    .commit();
            table.refresh();
            FanOutMark ours = FanOutMark.read(table);
            if (ours == null || !ours.mergeId().equals(mergeId)) {
                throw new IllegalStateException("Another fanned-out merge marked table " + id + " at the same moment ("
                        + (ours == null ? "none" : ours.mergeId()) + "): one at a time; this one plans nothing");
            }
        }
        try {
            return planSlice(table, mergeId, ranges, execution);
        } catch (RuntimeException e) {
            removeMark(table, mergeId); // nothing of it exists yet but the mark
            throw e;
        }
    }

    /** The slice of a marked table: its base snapshot, the staged objects to take, the work items; kept as plan.bin. */
    private Planned planSlice(Table table, String mergeId, int ranges, String execution) {
        table.refresh();
        Snapshot base = table.currentSnapshot();
        KeyIndex.Resolved index = KeyIndex.resolve(table, base);
        if (index.manifest() == null || index.steps().stream().anyMatch(s -> s.moves() == null)) {
            throw new IllegalStateException("The key index of snapshot " + base.snapshotId() + " of " + id
                    + " cannot be read as it is ("
                    + (index.manifest() == null ? index.why() : "another writer rewrote data files since")
                    + "): let a scheduled merge run first, which brings the index up to date");
        }
        Set<String> checkpoint = Checkpoint.read(table);
        List<String> stillStaged = new ArrayList<>();
        List<StagedObject> slice = new ArrayList<>();
        for (StagedObject o : store.list()) {
            String token = Checkpoint.token(o.name());
            if (checkpoint.contains(token)) {
                stillStaged.add(token);
            } else {
                slice.add(o);
            }
        }
        // Oldest first, within the slice's bounds: bytes (the commit's memory; less with a change
        // history, whose append the commit holds in full) and objects (each a checkpoint token).
        long maxBytes = history == null ? maxSliceBytes : Math.min(maxSliceBytes, MAX_SLICE_BYTES_WITH_HISTORY);
        int objectsLeft = 0;
        long taken = 0;
        for (int i = 0; i < slice.size(); i++) {
            taken += slice.get(i).size();
            if (i > 0 && (taken > maxBytes || i >= MAX_SLICE_OBJECTS)) {
                objectsLeft = slice.size() - i;
                slice = new ArrayList<>(slice.subList(0, i));
                break;
            }
        }
        // About as many shuffle work items as workers (so every worker shuffles), each at most
        // SHUFFLE_BYTES_PER_WORK.
        long bytes = slice.stream().mapToLong(StagedObject::size).sum();
        long perWork = Math.max(1, Math.min(SHUFFLE_BYTES_PER_WORK, (bytes + ranges - 1) / ranges));
        List<Integer> starts = new ArrayList<>();
        long workBytes = perWork;
        for (int i = 0; i < slice.size(); i++) {
            if (workBytes + slice.get(i).size() > perWork && workBytes > 0) {
                starts.add(i);
                workBytes = 0;
            }
            workBytes += slice.get(i).size();
        }
        starts.add(slice.size());
        Plan plan = new Plan(
                mergeId,
                base.snapshotId(),
                slice.stream().map(o -> o.name().key()).toList(),
                bytes,
                starts.stream().mapToInt(Integer::intValue).toArray(),
                ranges,
                stillStaged,
                Merger.removalsCutoff(slice, table),
                objectsLeft,
                execution);
        StepFiles.writeBytes(table, folder(table, mergeId) + "plan.bin", StepFiles.serialize(plan));
        LOG.atInfo()
                .addKeyValue("mergeId", mergeId)
                .addKeyValue("objects", slice.size())
                .addKeyValue("bytes", bytes)
                .addKeyValue("works", plan.workCount())
                .addKeyValue("ranges", ranges)
                .log("Planned a fanned-out merge; scheduled merges hold until it commits");
        return new Planned(mergeId, plan.workCount(), ranges, slice.size(), bytes);
    }

    /** The staged objects the table's checkpoint does not name, oldest first. */
    private List<StagedObject> pending(Table table) {
        Set<String> checkpoint = Checkpoint.read(table);
        return store.list().stream()
                .filter(o -> !checkpoint.contains(Checkpoint.token(o.name())))
                .toList();
    }

    /** Shuffle work item {@code work}: its staged objects' changes, split into the plan's key ranges. */
    public Shuffled shuffle(String mergeId, int work) {
        long start = System.nanoTime();
        Table table = load();
        Plan plan = readPlan(table, mergeId);
        if (work >= plan.workCount()) {
            throw new IllegalArgumentException("Fanned-out merge " + mergeId + " has shuffle work items 0 to "
                    + (plan.workCount() - 1) + ", not " + work);
        }
        List<String> keys = plan.objectKeys().subList(plan.works()[work], plan.works()[work + 1]);
        ExecutorService pool = Executors.newFixedThreadPool(options.ioThreads());
        try {
            List<Future<List<Change>>> reads = new ArrayList<>();
            for (String key : keys) {
                StagedObjectName name = StagedObjectName.parse(store.stagingPrefix(), key);
                reads.add(pool.submit(() -> store.read(name)));
            }
            List<Change> changes = new ArrayList<>();
            for (Future<List<Change>> read : reads) {
                changes.addAll(Futures.join(read, "reading a staged object"));
            }
            // Every range writes rows of the schema its changes need: the columns are added here,
            // before any range step starts.
            Table evolved = SchemaEvolution.evolve(table, changes, tableSettings, pool);
            TableLayout layout = TableLayout.of(evolved);
            List<List<Change>> byRange = new ArrayList<>();
            IntStream.range(0, plan.ranges()).forEach(r -> byRange.add(new ArrayList<>()));
            long oldest = Long.MAX_VALUE;
            for (Change c : changes) {
                byRange.get(rangeOf(layout.keyOf(c), plan.ranges())).add(c);
                oldest = Math.min(oldest, c.approximateCreationMillis());
            }
            int[] counts = new int[plan.ranges()];
            List<Future<?>> writes = new ArrayList<>();
            for (int r = 0; r < plan.ranges(); r++) {
                counts[r] = byRange.get(r).size();
                if (counts[r] > 0) {
                    String path = shardPath(table, mergeId, r, work);
                    List<Change> shard = byRange.get(r);
                    writes.add(pool.submit(() -> StepFiles.writeBytes(table, path, StagedFormat.write(shard))));
                }
            }
            writes.forEach(f -> Futures.join(f, "writing a shard of the shuffle"));
            StepFiles.writeBytes(
                    table,
                    folder(table, mergeId) + "shuffled/w" + work + ".bin",
                    StepFiles.serialize(new Shuffle(work, counts, oldest)));
            long millis = (System.nanoTime() - start) / 1_000_000;
            LOG.info(
                    "Fanned-out merge {}: shuffle {} split {} changes of {} staged objects into {} key ranges in {} ms",
                    mergeId,
                    work,
                    changes.size(),
                    keys.size(),
                    plan.ranges(),
                    millis);
            return new Shuffled(work, keys.size(), changes.size(), millis);
        } finally {
            pool.shutdownNow();
        }
    }

    /** Key range {@code range}: its changes merged against the planned snapshot, written, not committed. */
    public Ranged mergeRange(String mergeId, int range) {
        long start = System.nanoTime();
        Table table = load();
        Plan plan = readPlan(table, mergeId);
        if (range >= plan.ranges()) {
            throw new IllegalArgumentException(
                    "Fanned-out merge " + mergeId + " has key ranges 0 to " + (plan.ranges() - 1) + ", not " + range);
        }
        ExecutorService pool = Executors.newFixedThreadPool(options.ioThreads());
        try {
            List<Change> changes = rangeChanges(table, plan, readShuffles(table, plan, pool), range, pool);
            TableLayout layout = TableLayout.of(table);
            ChangeApplier applier = new ChangeApplier(tableSettings, store, options);
            KeyChanges keyChanges =
                    KeyChanges.of(changes, layout, tableSettings.removals(), applier::quarantineChange, pool);
            RemovalsIndex removals = RemovalsIndex.open(table, layout, plan.removalsCutoff(), cache());
            LiveRowLookup.Found found =
                    IndexLookup.readOnly(pool, cache()).find(table, layout, plan.baseSnapshotId(), keyChanges.keys);
            RowPlan rows = RowPlan.of(table, layout, tableSettings.removals(), keyChanges, found, removals, pool);
            // Each attempt its own file names: a retried range never overwrites what another attempt wrote.
            MergeWriter writer = new MergeWriter(
                    table,
                    runIdOf(mergeId) + "-r" + range + "-"
                            + UUID.randomUUID().toString().substring(0, 8));
            MergeWriter.Written written = writer.writeRows(rows.rows, layout, pool);
            List<IndexEntries.Entry> entries = IndexLookup.entriesOf(written.rows(), rows.removedKeys);

            List<String> deleteFiles = new ArrayList<>(rows.toDelete.size());
            long[] deletePositions = new long[rows.toDelete.size()];
            for (int i = 0; i < rows.toDelete.size(); i++) {
                deleteFiles.add(rows.toDelete.get(i).task().file().location());
                deletePositions[i] = rows.toDelete.get(i).position();
            }
            List<byte[]> entryKeys = new ArrayList<>(entries.size());
            List<String> entryFiles = new ArrayList<>(entries.size());
            long[] entryPositions = new long[entries.size()];
            List<BigInteger> entrySequences = new ArrayList<>(entries.size());
            for (int i = 0; i < entries.size(); i++) {
                IndexEntries.Entry e = entries.get(i);
                entryKeys.add(e.key());
                entryFiles.add(e.file());
                entryPositions[i] = e.position();
                entrySequences.add(e.sequence());
            }
            // What the removals index must learn (removals, and upserts of keys it remembers: see RowPlan).
            List<Change> seen = new ArrayList<>(rows.removalsSeen.values());
            Range done = new Range(
                    range,
                    written.files(),
                    deleteFiles,
                    deletePositions,
                    entryKeys,
                    entryFiles,
                    entryPositions,
                    entrySequences,
                    seen.isEmpty() ? new byte[0] : StagedFormat.write(seen),
                    changes.size(),
                    rows.applied.size(),
                    rows.rows.size(),
                    rows.rowsReplaced,
                    rows.itemsRemoved,
                    rows.stale,
                    keyChanges.quarantined);
            StepFiles.writeBytes(table, rangePath(table, mergeId, range), StepFiles.serialize(done));
            long millis = (System.nanoTime() - start) / 1_000_000;
            LOG.info(
                    "Fanned-out merge {}: range {} merged {} changes, {} items written ({} replaced a row), {} removed,"
                            + " {} stale, {} rows to delete, in {} ms",
                    mergeId,
                    range,
                    changes.size(),
                    rows.rows.size(),
                    rows.rowsReplaced,
                    rows.itemsRemoved,
                    rows.stale,
                    rows.toDelete.size(),
                    millis);
            return new Ranged(range, changes.size(), rows.rows.size(), rows.rowsReplaced, rows.itemsRemoved, millis);
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * The one commit of the fan-out: every range's rows, the deletes, the removals and the index
     * delta, with the whole slice in the checkpoint; then the mark goes and the slice is deleted from
     * staging. A lost race commits nothing and throws (the caller aborts).
     */
    public Committed commit(String mergeId) {
        long start = System.nanoTime();
        Table table = load();
        String runId = runIdOf(mergeId);
        Snapshot landed = CommitProtocol.snapshotOf(table, runId);
        if (landed != null && !StepFiles.exists(table, folder(table, mergeId) + "plan.bin")) {
            // A commit step repeated after the fan-out finished (its answer was lost): nothing to do.
            LOG.info("Fanned-out merge {} committed snapshot {} and finished before", mergeId, landed.snapshotId());
            removeMark(table, mergeId);
            return new Committed(
                    landed.snapshotId(), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (System.nanoTime() - start) / 1_000_000);
        }
        Plan plan = readPlan(table, mergeId);
        ExecutorService pool = Executors.newFixedThreadPool(options.ioThreads());
        try {
            List<Range> ranges = new ArrayList<>();
            for (int r = 0; r < plan.ranges(); r++) {
                ranges.add((Range) StepFiles.deserialize(StepFiles.readBytes(
                        table, rangePath(table, mergeId, r), "key range " + r + " has not finished")));
            }
            Snapshot committed = CommitProtocol.snapshotOf(table, runId);
            Long snapshotId;
            int deleteFileCount = 0;
            if (committed != null) {
                LOG.info(
                        "Fanned-out merge {} committed snapshot {} before: finishing it",
                        mergeId,
                        committed.snapshotId());
                snapshotId = committed.snapshotId();
            } else {
                CommitOutcome outcome = commitRanges(table, plan, ranges, runId, pool);
                snapshotId = outcome.snapshotId();
                deleteFileCount = outcome.deleteFiles();
            }
            finish(table, plan, "committed in snapshot " + snapshotId);
            Committed summary = new Committed(
                    snapshotId,
                    plan.objectKeys().size(),
                    ranges.stream().mapToLong(Range::changes).sum(),
                    ranges.stream().mapToLong(Range::applied).sum(),
                    ranges.stream().mapToLong(Range::itemsWritten).sum(),
                    ranges.stream().mapToLong(Range::rowsReplaced).sum(),
                    ranges.stream().mapToLong(Range::itemsRemoved).sum(),
                    ranges.stream().mapToLong(Range::stale).sum(),
                    ranges.stream().mapToInt(Range::quarantined).sum(),
                    ranges.stream().mapToInt(r -> r.dataFiles().size()).sum(),
                    deleteFileCount,
                    plan.objectsLeft(),
                    (System.nanoTime() - start) / 1_000_000);
            LOG.atInfo()
                    .addKeyValue("mergeId", mergeId)
                    .addKeyValue("snapshotId", snapshotId)
                    .addKeyValue("objectsApplied", summary.objects())
                    .addKeyValue("changesApplied", summary.changesApplied())
                    .addKeyValue("itemsWritten", summary.itemsWritten())
                    .addKeyValue("rowsReplaced", summary.rowsReplaced())
                    .addKeyValue("itemsRemoved", summary.itemsRemoved())
                    .addKeyValue("millis", summary.millis())
                    .log("Fanned-out merge committed");
            return summary;
        } finally {
            pool.shutdownNow();
        }
    }

    private record CommitOutcome(long snapshotId, int deleteFiles) {}

    private CommitOutcome commitRanges(Table table, Plan plan, List<Range> ranges, String runId, ExecutorService pool) {
        long tStart = System.nanoTime();
        TableLayout layout = TableLayout.of(table);
        List<String> tokens = plan.objectKeys().stream()
                .map(k -> Checkpoint.token(StagedObjectName.parse(store.stagingPrefix(), k)))
                .toList();
        List<Shuffle> shuffles = readShuffles(table, plan, pool);
        if (history != null) {
            // As in a merge: the history holds the slice's changes before any staged object goes.
            List<Change> all = new ArrayList<>();
            for (int r = 0; r < plan.ranges(); r++) {
                all.addAll(rangeChanges(table, plan, shuffles, r, pool));
            }
            history.append(table, tokens, all, runId, pool);
        }

        long tRemovals = System.nanoTime();
        // The removals index: every change a range saw, by key.
        Map<List<Object>, Change> removalsSeen = new HashMap<>();
        for (Range r : ranges) {
            if (r.removalsSeen().length > 0) {
                for (Change c : StagedFormat.read(r.removalsSeen(), "the removals of range " + r.range())) {
                    removalsSeen.put(layout.keyOf(c), c);
                }
            }
        }
        RemovalsIndex.Updated removalsIndex = RemovalsIndex.open(table, layout, plan.removalsCutoff(), cache())
                .update(removalsSeen, System.currentTimeMillis(), pool);

        long tOpen = System.nanoTime();
        // The table's files and index as they are now, opened as a merge opens them: a compaction
        // since the plan that left the slice's rows alone is followed (its moves are in the index
        // this commit extends); one that rewrote a file the slice deletes from ends the commit below.
        IndexLookup lookup = new IndexLookup(pool, cache(), options.keyIndexParts(), options.keyIndexBuildBytes());
        table.refresh();
        LiveRowLookup.Found found =
                lookup.find(table, layout, table.currentSnapshot().snapshotId(), List.of());
        Map<String, FileScanTask> tasks = new HashMap<>();
        found.files().forEach(t -> tasks.put(t.file().location(), t));
        List<LiveRow> toDelete = new ArrayList<>();
        List<DataFile> dataFiles = new ArrayList<>();
        List<IndexEntries.Entry> entries = new ArrayList<>();
        for (Range r : ranges) {
            dataFiles.addAll(r.dataFiles());
            for (int i = 0; i < r.deleteFiles().size(); i++) {
                FileScanTask task = tasks.get(r.deleteFiles().get(i));
                if (task == null) {
                    // A lost race, as Iceberg's own validation would report it: nothing to retry.
                    throw new ValidationException(
                            "Range %s deletes rows of %s, which a commit since the planned snapshot %s rewrote",
                            r.range(), r.deleteFiles().get(i), plan.baseSnapshotId());
                }
                toDelete.add(new LiveRow(task, r.deletePositions()[i], BigInteger.ZERO));
            }
            for (int i = 0; i < r.entryKeys().size(); i++) {
                entries.add(new IndexEntries.Entry(
                        r.entryKeys().get(i),
                        r.entryFiles().get(i),
                        r.entryPositions()[i],
                        r.entrySequences().get(i)));
            }
        }
        // One writer for each data file's deletes (so it keeps one delete file); no small files are
        // folded: the ranges wrote their own files.
        SmallFileRewrite.Plan files = new SmallFileRewrite(table, options.withRewriteFilesBelow(0))
                .plan(
                        toDelete,
                        found.liveRowsByFile(),
                        found.files(),
                        StructLikeMap.create(table.spec().partitionType()));
        long tDeletes = System.nanoTime();
        MergeWriter writer = new MergeWriter(table, runId);
        DeleteWriteResult deletes = writer.writeDeletes(files.positional(), pool);
        long tIndex = System.nanoTime();
        LiveRowLookup.Recorded recorded = lookup.recordEntries(table, layout, entries);
        long tCommit = System.nanoTime();

        Map<String, String> properties = Checkpoint.carried(table);
        Set<String> checkpoint = new LinkedHashSet<>(tokens);
        checkpoint.addAll(plan.stillStaged());
        Checkpoint.record(properties, table.io(), DerivedFiles.checkpointFile(table, runId), checkpoint);
        long oldest =
                shuffles.stream().mapToLong(Shuffle::oldestChangeMillis).min().orElse(Long.MAX_VALUE);
        String since = properties.get(PipelineProperties.STREAM_SINCE);
        properties.put(
                PipelineProperties.STREAM_SINCE,
                Long.toString(since == null ? oldest : Math.min(oldest, Long.parseLong(since))));
        if (removalsIndex.property() != null) {
            properties.put(PipelineProperties.REMOVALS, removalsIndex.property());
        }
        properties.putAll(recorded.properties());
        RowDelta delta = ChangeApplier.rowDelta(
                table, table.snapshot(plan.baseSnapshotId()), files, dataFiles, deletes, properties);
        List<String> attemptFiles = new ArrayList<>(recorded.files());
        attemptFiles.addAll(removalsIndex.files());
        deletes.deleteFiles().forEach(f -> attemptFiles.add(f.location()));
        // An abort since the plan (a stale mark's, by another execution) ended this fan-out: commit nothing.
        table.refresh();
        FanOutMark mark = FanOutMark.read(table);
        if (mark == null || !mark.mergeId().equals(plan.mergeId())) {
            attemptFiles.forEach(table.io()::deleteFile);
            throw new IllegalStateException("Fanned-out merge " + plan.mergeId()
                    + " was aborted while it ran (the table's mark is gone): nothing of it committed, the slice"
                    + " stays staged for scheduled merges");
        }
        long snapshotId =
                CommitProtocol.commit(table, delta, runId, attemptFiles).snapshotId();
        long tDone = System.nanoTime();
        LOG.info(
                "Fanned-out merge {} committed snapshot {}: {} data files, {} delete files, {} rows deleted; ms history {},"
                        + " removals {}, opening the snapshot {}, writing deletes {}, the index delta {}, committing {}",
                plan.mergeId(),
                snapshotId,
                dataFiles.size(),
                deletes.deleteFiles().size(),
                toDelete.size(),
                (tRemovals - tStart) / 1_000_000,
                (tOpen - tRemovals) / 1_000_000,
                (tDeletes - tOpen) / 1_000_000,
                (tIndex - tDeletes) / 1_000_000,
                (tCommit - tIndex) / 1_000_000,
                (tDone - tCommit) / 1_000_000);
        return new CommitOutcome(snapshotId, deletes.deleteFiles().size());
    }

    /**
     * Ends a fan-out that will not commit (the state machine's catch, or a lost race): removes the
     * mark if it is this merge's, and deletes the merge's folder and the data files its ranges
     * wrote. The slice stays staged for scheduled merges. Returns the files deleted. A fan-out whose
     * commit landed (its finish failed) is finished instead: the mark always goes.
     */
    public Ended abort(String mergeId, String why) {
        return abort(mergeId, why, true);
    }

    /**
     * Ends the fan-out a dead execution left (see {@link #STALE_MARK}), keeping its ranges' data
     * files: if its commit were still running after all, it must not commit files that are gone.
     * Orphan cleanup deletes them once old enough.
     */
    void abortStale(String mergeId) {
        abort(mergeId, "its mark is older than " + STALE_MARK + ": its execution is gone", false);
    }

    private Ended abort(String mergeId, String why, boolean deleteFiles) {
        Table table = load();
        LOG.warn("Aborting fanned-out merge {}: {}", mergeId, why);
        Snapshot committed = CommitProtocol.snapshotOf(table, runIdOf(mergeId));
        if (!StepFiles.exists(table, folder(table, mergeId) + "plan.bin")) {
            // Finished (committed or aborted) before: only the mark may be left to remove.
            removeMark(table, mergeId);
            return new Ended(committed == null, 0);
        }
        Plan plan = readPlan(table, mergeId);
        if (committed != null) {
            // Its commit landed and only the finish failed: finish it (an abort must never leave the mark).
            finish(
                    table,
                    plan,
                    "had committed in snapshot " + committed.snapshotId() + "; finished instead of aborted");
            return new Ended(false, 0);
        }
        List<String> doomed = new ArrayList<>();
        for (int r = 0; r < plan.ranges(); r++) {
            try {
                Range done =
                        (Range) StepFiles.deserialize(StepFiles.readBytes(table, rangePath(table, mergeId, r), ""));
                done.dataFiles().forEach(f -> doomed.add(f.location()));
            } catch (IllegalStateException notWritten) {
                // the range did not finish: nothing of it is recorded (orphan cleanup takes any file it wrote)
            }
        }
        removeMark(table, mergeId);
        if (!deleteFiles) {
            return new Ended(true, 0);
        }
        doomed.forEach(table.io()::deleteFile);
        deleteFolder(table, mergeId);
        return new Ended(true, doomed.size());
    }

    /**
     * Runs the steps of one fan-out (one slice) in this process, {@code ranges} key ranges on as many
     * threads: the local form of the state machine, which plans again while {@code objectsLeft}.
     */
    public Committed runLocally(int ranges) {
        Planned planned = plan(ranges, "local-" + UUID.randomUUID());
        if (planned.mergeId() == null) {
            return new Committed(null, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
        }
        String mergeId = planned.mergeId();
        ExecutorService workers = Executors.newFixedThreadPool(ranges);
        try {
            List<Future<Shuffled>> shuffles = new ArrayList<>();
            for (int w = 0; w < planned.works(); w++) {
                int work = w;
                shuffles.add(workers.submit(() -> shuffle(mergeId, work)));
            }
            shuffles.forEach(f -> Futures.join(f, "a shuffle step"));
            List<Future<Ranged>> merged = new ArrayList<>();
            for (int r = 0; r < ranges; r++) {
                int range = r;
                merged.add(workers.submit(() -> mergeRange(mergeId, range)));
            }
            merged.forEach(f -> Futures.join(f, "a key range step"));
            return commit(mergeId);
        } catch (RuntimeException e) {
            // As the state machine's catch: once no worker runs any more (an abort deletes their
            // files), end it; an abort finishes a fan-out whose commit landed.
            workers.shutdownNow();
            try {
                workers.awaitTermination(15, TimeUnit.MINUTES);
                abort(mergeId, e.toString());
            } catch (RuntimeException abortFailed) {
                e.addSuppressed(abortFailed);
            } catch (InterruptedException interrupted) {
                Thread.currentThread().interrupt();
                e.addSuppressed(interrupted);
            }
            throw e;
        } finally {
            workers.shutdownNow();
        }
    }

    /** The range's changes, from every shuffle work item's shard. */
    private List<Change> rangeChanges(Table table, Plan plan, List<Shuffle> shuffles, int range, ExecutorService pool) {
        List<Future<List<Change>>> reads = new ArrayList<>();
        for (int w = 0; w < plan.workCount(); w++) {
            if (shuffles.get(w).changesPerRange()[range] > 0) {
                String path = shardPath(table, plan.mergeId(), range, w);
                reads.add(pool.submit(
                        () -> StagedFormat.read(StepFiles.readBytes(table, path, "a shard is missing"), path)));
            }
        }
        List<Change> changes = new ArrayList<>();
        reads.forEach(f -> changes.addAll(Futures.join(f, "reading a shard")));
        return changes;
    }

    /** Every shuffle work item's record, read once and on the pool (a range step, and the commit, need all of them). */
    private static List<Shuffle> readShuffles(Table table, Plan plan, ExecutorService pool) {
        List<Future<Shuffle>> reads = new ArrayList<>();
        for (int w = 0; w < plan.workCount(); w++) {
            String path = folder(table, plan.mergeId()) + "shuffled/w" + w + ".bin";
            String ifMissing = "shuffle work item " + w + " has not finished";
            reads.add(pool.submit(() -> (Shuffle) StepFiles.deserialize(StepFiles.readBytes(table, path, ifMissing))));
        }
        return reads.stream()
                .map(f -> Futures.join(f, "reading the shuffle's records"))
                .toList();
    }

    /** The range a key goes to: a hash of its encoded bytes (a key that does not fit the table goes to range 0, which quarantines it). */
    static int rangeOf(List<Object> key, int ranges) {
        return key == null ? 0 : Math.floorMod(Arrays.hashCode(IndexKeys.encode(key)), ranges);
    }

    private void finish(Table table, Plan plan, String how) {
        removeMark(table, plan.mergeId());
        List<StagedObjectName> names = new ArrayList<>();
        plan.objectKeys().forEach(k -> names.add(StagedObjectName.parse(store.stagingPrefix(), k)));
        Set<String> stillStaged = Set.copyOf(plan.stillStaged());
        for (StagedObject o : store.list()) {
            if (stillStaged.contains(Checkpoint.token(o.name()))) {
                names.add(o.name());
            }
        }
        Set<String> notDeleted = store.delete(names);
        if (!notDeleted.isEmpty()) {
            LOG.warn(
                    "{} staged objects of fanned-out merge {} could not be deleted yet; the checkpoint keeps them until a"
                            + " later run does",
                    notDeleted.size(),
                    plan.mergeId());
        }
        deleteFolder(table, plan.mergeId());
        LOG.info("Fanned-out merge {} {}; scheduled merges resume", plan.mergeId(), how);
    }

    static boolean isStale(FanOutMark mark) {
        try {
            return Instant.parse(mark.started()).isBefore(Instant.now().minus(STALE_MARK));
        } catch (java.time.format.DateTimeParseException e) {
            return false;
        }
    }

    private static void removeMark(Table table, String mergeId) {
        table.refresh();
        FanOutMark mark = FanOutMark.read(table);
        if (mark != null && mark.mergeId().equals(mergeId)) {
            table.updateProperties()
                    .remove(PipelineProperties.FAN_OUT_MERGE_IN_PROGRESS)
                    .commit();
        }
    }

    /** Deletes the merge's folder (its plan, shards and records); best effort, orphan cleanup takes the rest. */
    private static void deleteFolder(Table table, String mergeId) {
        if (!(table.io() instanceof SupportsPrefixOperations io)) {
            return;
        }
        try {
            io.deletePrefix(folder(table, mergeId));
        } catch (RuntimeException e) {
            LOG.warn(
                    "Could not delete the folder of fanned-out merge {} ({}); orphan cleanup takes it",
                    mergeId,
                    e.toString());
        }
    }

    private Table load() {
        Table table = TableCreator.loadIfExists(catalog, id);
        if (table == null) {
            throw new IllegalStateException("Table " + id + " does not exist");
        }
        return table;
    }

    private IndexCache cache() {
        return options.indexCache();
    }

    private static Plan readPlan(Table table, String mergeId) {
        return (Plan) StepFiles.deserialize(StepFiles.readBytes(
                table,
                folder(table, mergeId) + "plan.bin",
                "fanned-out merge " + mergeId + " has no plan: it was never planned, or it has finished"));
    }

    static String runIdOf(String mergeId) {
        return "fanout-" + mergeId;
    }

    static String folder(Table table, String mergeId) {
        return DerivedFiles.location(table) + "merges/" + mergeId + "/";
    }

    private static String shardPath(Table table, String mergeId, int range, int work) {
        return folder(table, mergeId) + "shards/r" + range + "/w" + work + StagedObjectName.SUFFIX;
    }

    private static String rangePath(Table table, String mergeId, int range) {
        return folder(table, mergeId) + "ranges/r" + range + ".bin";
    }
}
