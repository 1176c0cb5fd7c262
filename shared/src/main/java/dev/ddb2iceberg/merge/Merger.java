package dev.ddb2iceberg.merge;

import dev.ddb2iceberg.commit.Checkpoint;
import dev.ddb2iceberg.commit.CommitProtocol;
import dev.ddb2iceberg.commit.ExportProgress;
import dev.ddb2iceberg.commit.FanOutMark;
import dev.ddb2iceberg.commit.LoadMark;
import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.history.ChangeHistory;
import dev.ddb2iceberg.lookup.LiveRowLookup;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.staging.StagedObject;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.table.DerivedFiles;
import dev.ddb2iceberg.table.SchemaEvolution;
import dev.ddb2iceberg.table.TableCreator;
import dev.ddb2iceberg.table.TableSettings;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One merge run: staged changes into the Iceberg table, exactly once.
 *
 * <ol>
 *   <li>List the staged objects (oldest first). Those the table's checkpoint already names were
 *       applied by an earlier run that could not delete them: delete them, never apply them again.
 *   <li>Take a bounded slice of the rest, oldest first ({@link StagedSlice}).
 *   <li>Apply it in one commit ({@link ChangeApplier}): each key's newest change, its live row
 *       found by a {@link LiveRowLookup}, new rows plus position deletes (or deletion vectors), and
 *       the applied objects named in the snapshot summary (the checkpoint).
 *   <li>A lost race (a compaction rewrote a file, another merger committed) is re-planned from the
 *       new table state, within a bound; an unknown commit outcome is settled by looking for this
 *       run's id in the table history first (in the apply step).
 *   <li>Delete the applied objects. Any that survive stay named in the checkpoint until they go.
 * </ol>
 */
public final class Merger {
    private static final Logger LOG = LoggerFactory.getLogger(Merger.class);
    /**
     * How long a removal is remembered: longer than DynamoDB Streams keeps a record (24 h), so no
     * redelivered older change of a removed item can arrive after it is forgotten.
     */
    public static final Duration REMOVALS_KEPT = Duration.ofHours(48);
    /** Removals kept from this long before an unfinished export load's point in time. */
    static final Duration EXPORT_REMOVALS_MARGIN = Duration.ofHours(1);

    private final Catalog catalog;
    private final TableIdentifier id;
    private final TableSettings tableSettings;
    private final StagingStore store;
    private final MergeOptions options;
    private final ChangeApplier applier;
    /** The change history (HISTORY_TABLE), or null. */
    private final ChangeHistory history;

    public Merger(Catalog catalog, TableSettings tableSettings, StagingStore store, MergeOptions options) {
        this.catalog = catalog;
        this.id = TableIdentifier.of(tableSettings.namespace(), tableSettings.name());
        this.tableSettings = tableSettings;
        this.store = store;
        this.options = options;
        this.applier = new ChangeApplier(tableSettings, store, options);
        this.history = tableSettings.historyTable() == null ? null : new ChangeHistory(catalog, tableSettings);
    }

    public TableIdentifier tableId() {
        return id;
    }

    public MergeResult run() {
        long start = System.nanoTime();
        ExecutorService pool = Executors.newFixedThreadPool(options.ioThreads());
        try {
            return run(pool, start);
        } finally {
            pool.shutdownNow();
        }
    }

    private MergeResult run(ExecutorService pool, long start) {
        String runId = UUID.randomUUID().toString();
        List<StagedObject> listed = store.list();
        Table table = TableCreator.loadIfExists(catalog, id);
        if (table != null) {
            TableCreator.adopt(table, tableSettings);
        }

        String held = heldBecause(table);
        if (held != null) {
            return held(listed, held, start);
        }

        // 1. Objects an earlier run applied but could not delete: delete now, never apply again.
        Set<String> checkpoint = table == null ? Set.of() : Checkpoint.read(table);
        List<StagedObject> alreadyApplied = new ArrayList<>();
        List<StagedObject> pending = new ArrayList<>();
        for (StagedObject o : listed) {
            (checkpoint.contains(Checkpoint.token(o.name())) ? alreadyApplied : pending).add(o);
        }
        Set<String> stillStaged = deleteApplied(alreadyApplied);

        // 2. A bounded slice, oldest first.
        long tSlice = System.nanoTime();
        StagedSlice slice = StagedSlice.take(pending, store, options, pool);
        LOG.info(
                "Listed {} staged objects, read {} ({} changes) in {} ms",
                listed.size(),
                slice.objects.size(),
                slice.changeCount(),
                (System.nanoTime() - tSlice) / 1_000_000);
        if (slice.objects.isEmpty()) {
            return result(start, slice, Attempt.NONE, 0, alreadyApplied.size(), pending);
        }

        // 3-4. Plan, write and commit; plan again when a race is lost.
        if (table == null) {
            table = TableCreator.loadOrCreate(catalog, id, tableSettings, slice.allChanges());
        }
        if (history != null) {
            // The history gets the slice first: no staged object is deleted before it holds its
            // changes, and it holds each change once however often this runs (see ChangeHistory).
            table = SchemaEvolution.evolve(table, slice.allChanges(), tableSettings, pool);
            history.append(
                    table,
                    slice.objects.stream().map(o -> Checkpoint.token(o.name())).toList(),
                    slice.allChanges(),
                    runId,
                    pool);
        }
        Table planned = table;
        CommitProtocol.Outcome<Attempt> committed;
        try {
            committed = new CommitProtocol(
                            "merging into " + id,
                            options.maxCommitAttempts(),
                            "The staged changes are kept and will be merged by a later run.")
                    .run(
                            table,
                            n -> attempt(
                                    planned,
                                    slice,
                                    stillStaged,
                                    runId + "-" + n,
                                    removalsCutoff(pending, planned),
                                    pool));
        } catch (ChangeApplier.HeldByFanOut fanOut) {
            return held(listed, fanOut.getMessage(), start); // nothing committed: the fan-out takes the slice
        }
        Attempt outcome = committed.value();
        int attempts = committed.attempts();

        // 5. Delete what the commit applied; survivors stay named in the checkpoint.
        Set<String> notDeleted =
                store.delete(slice.objects.stream().map(StagedObject::name).toList());
        if (!notDeleted.isEmpty()) {
            LOG.warn(
                    "{} applied staged objects could not be deleted yet; the checkpoint keeps them until a later run does",
                    notDeleted.size());
        }
        return result(start, slice, outcome, attempts, alreadyApplied.size() + outcome.appliedByOthers, pending);
    }

    /** The summary of a run that merged nothing on purpose, saying why; the backlog as listed. */
    private static MergeResult held(List<StagedObject> listed, String why, long start) {
        LOG.atInfo().addKeyValue("backlogObjects", listed.size()).log("Merge run held: {}", why);
        Instant now = Instant.now();
        return new MergeResult(
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                null,
                0,
                0,
                0,
                listed.size(),
                listed.stream().mapToLong(StagedObject::size).sum(),
                listed.stream()
                        .map(StagedObject::lastModified)
                        .min(Instant::compareTo)
                        .map(t -> Math.max(0, Duration.between(t, now).toSeconds()))
                        .orElse(0L),
                0,
                (System.nanoTime() - start) / 1_000_000,
                why);
    }

    /**
     * Why this run must not merge, or null: a parallel export load or a fanned-out merge is in progress
     * (its commit must find the table as its plan saw it), or merges wait for the initial load
     * ({@link MergeOptions#waitForInitialLoad}) and no export load has finished yet. The stager keeps
     * staging meanwhile; nothing is lost, the changes wait.
     */
    private String heldBecause(Table table) {
        LoadMark mark = table == null ? null : LoadMark.read(table);
        if (mark != null) {
            return "parallel load " + mark.loadId() + " of export " + mark.exportId() + " is in progress since "
                    + mark.started() + "; merges resume once it commits (staged changes wait, nothing is lost)";
        }
        FanOutMark fanOut = table == null ? null : FanOutMark.read(table);
        if (fanOut != null && FanOutMerge.isStale(fanOut)) {
            // Its execution is gone (stopped by hand, its abort failed): nothing of it can commit, and
            // no scheduled fan-out may come to clear it. Merges must not hold for ever.
            new FanOutMerge(catalog, tableSettings, store, options).abortStale(fanOut.mergeId());
            table.refresh();
            fanOut = FanOutMark.read(table);
        }
        if (fanOut != null) {
            return "fanned-out merge " + fanOut.mergeId() + " is in progress since " + fanOut.started()
                    + "; merges resume once it commits (staged changes wait, nothing is lost)";
        }
        return waitingForInitialLoad(options, table);
    }

    /**
     * Why merges wait for the initial load ({@link MergeOptions#waitForInitialLoad}) while no export
     * load into {@code table} (null: it does not exist yet) has finished, or null when they do not:
     * the reason a merge run gives, and what {@code status} shows.
     */
    public static String waitingForInitialLoad(MergeOptions options, Table table) {
        if (options.waitForInitialLoad()
                && (table == null
                        || ExportProgress.read(table).values().stream().noneMatch(ExportProgress.Load::done))) {
            return "INITIAL_LOAD=parallel-export: merges wait for the table's initial export load (start the export-load"
                    + " state machine, or ./ddb2iceberg load-export --parallel N); staged changes wait, nothing is lost";
        }
        return null;
    }

    /** Deletes objects the checkpoint names; returns the tokens of those still in the staging prefix. */
    private Set<String> deleteApplied(List<StagedObject> applied) {
        if (applied.isEmpty()) {
            return Set.of();
        }
        Set<String> failedKeys =
                store.delete(applied.stream().map(StagedObject::name).toList());
        Set<String> still = new HashSet<>();
        for (StagedObject o : applied) {
            if (failedKeys.contains(o.name().key())) {
                still.add(Checkpoint.token(o.name()));
            }
        }
        LOG.info("Deleted {} staged objects that an earlier run had already applied", applied.size() - still.size());
        return still;
    }

    /** The outcome of a successful commit attempt. */
    private record Attempt(
            Long snapshotId,
            List<Change> applied,
            long stale,
            long itemsWritten,
            long rowsReplaced,
            long itemsRemoved,
            int quarantined,
            int appliedByOthers,
            int filesRead,
            int filesInTable) {
        static final Attempt NONE = new Attempt(null, List.of(), 0, 0, 0, 0, 0, 0, 0, 0);
    }

    /**
     * Removals recorded before this time may be forgotten: an older change of a removed item can be
     * staged again up to a day after the removal was recorded (the stream keeps records 24 h), and
     * then wait, staged, while the merger is down; so the window runs from the oldest staged object
     * still waiting, not only from now.
     */
    public static long removalsCutoff(List<StagedObject> pending, Table table) {
        long now = System.currentTimeMillis();
        long oldestWaiting = pending.stream()
                .mapToLong(o -> o.lastModified().toEpochMilli())
                .min()
                .orElse(now);
        long cutoff = Math.min(now, oldestWaiting) - REMOVALS_KEPT.toMillis();
        // While an export loads, every removal since its point in time must stay known: its items
        // are older than those removals, however late the chunk holding them is loaded.
        if (table != null && table.currentSnapshot() != null) {
            OptionalLong export = ExportProgress.oldestUnfinished(table);
            if (export.isPresent()) {
                cutoff = Math.min(cutoff, export.getAsLong() - EXPORT_REMOVALS_MARGIN.toMillis());
            }
        }
        return cutoff;
    }

    private Attempt attempt(
            Table table,
            StagedSlice slice,
            Set<String> stillStaged,
            String runId,
            long removalsCutoff,
            ExecutorService pool) {
        // Another merger may have applied some of the slice since it was listed.
        Set<String> checkpoint = Checkpoint.read(table);
        List<Change> changes = new ArrayList<>();
        Set<String> tokens = new LinkedHashSet<>();
        int appliedByOthers = 0;
        for (int i = 0; i < slice.objects.size(); i++) {
            String token = Checkpoint.token(slice.objects.get(i).name());
            if (checkpoint.contains(token)) {
                appliedByOthers++;
            } else {
                tokens.add(token);
                changes.addAll(slice.changes.get(i));
            }
        }
        if (tokens.isEmpty()) {
            return new Attempt(null, List.of(), 0, 0, 0, 0, 0, appliedByOthers, 0, 0); // nothing left to apply
        }
        Set<String> checkpointOut = new LinkedHashSet<>(tokens);
        checkpointOut.addAll(stillStaged);
        Map<String, String> properties = Checkpoint.carried(table);
        Checkpoint.record(properties, table.io(), DerivedFiles.checkpointFile(table, runId), checkpointOut);
        properties.put(
                PipelineProperties.STREAM_SINCE,
                Long.toString(Checkpoint.streamSince(properties.get(PipelineProperties.STREAM_SINCE), changes)));
        ChangeApplier.Applied a = applier.apply(table, changes, properties, runId, removalsCutoff, pool);
        return new Attempt(
                a.snapshotId(),
                a.applied(),
                a.stale(),
                a.itemsWritten(),
                a.rowsReplaced(),
                a.itemsRemoved(),
                a.quarantined(),
                appliedByOthers,
                a.filesRead(),
                a.filesInTable());
    }

    /** The run's summary. */
    private MergeResult result(
            long start,
            StagedSlice slice,
            Attempt outcome,
            int attempts,
            int alreadyApplied,
            List<StagedObject> pending) {
        List<StagedObject> left = pending.subList(
                Math.min(pending.size(), slice.objects.size() + slice.quarantinedObjects), pending.size());
        List<Change> applied = outcome.applied();
        Instant now = Instant.now();
        long oldestAge = left.stream()
                .map(StagedObject::lastModified)
                .min(Instant::compareTo)
                .map(t -> Math.max(0, Duration.between(t, now).toSeconds()))
                .orElse(0L);
        long oldestChange = applied.stream()
                .mapToLong(Change::approximateCreationMillis)
                .min()
                .orElse(now.toEpochMilli());
        MergeResult r = new MergeResult(
                slice.changeCount(),
                applied.size(),
                outcome.itemsWritten(),
                outcome.rowsReplaced(),
                outcome.itemsRemoved(),
                outcome.stale(),
                slice.objects.size() - outcome.appliedByOthers(),
                alreadyApplied,
                slice.quarantinedObjects + outcome.quarantined(),
                outcome.snapshotId(),
                attempts,
                outcome.filesRead(),
                outcome.filesInTable(),
                left.size(),
                left.stream().mapToLong(StagedObject::size).sum(),
                oldestAge,
                Math.max(0, (now.toEpochMilli() - oldestChange) / 1000),
                (System.nanoTime() - start) / 1_000_000,
                null);
        LOG.atInfo()
                .addKeyValue("snapshotId", r.snapshotId())
                .addKeyValue(
                        "firstStagedObject",
                        slice.objects.isEmpty()
                                ? null
                                : slice.objects.get(0).name().key())
                .addKeyValue(
                        "lastStagedObject",
                        slice.objects.isEmpty()
                                ? null
                                : slice.objects
                                        .get(slice.objects.size() - 1)
                                        .name()
                                        .key())
                .addKeyValue("objectsApplied", r.objectsApplied())
                .addKeyValue("objectsAlreadyApplied", r.objectsAlreadyApplied())
                .addKeyValue("changesRead", r.changesRead())
                .addKeyValue("changesApplied", r.changesApplied())
                .addKeyValue("itemsWritten", r.itemsWritten())
                .addKeyValue("rowsReplaced", r.rowsReplaced())
                .addKeyValue("itemsRemoved", r.itemsRemoved())
                .addKeyValue("staleSkipped", r.staleSkipped())
                .addKeyValue("quarantined", r.quarantined())
                .addKeyValue("commitAttempts", r.commitAttempts())
                .addKeyValue("filesRead", r.filesRead())
                .addKeyValue("filesInTable", r.filesInTable())
                .addKeyValue("backlogObjects", r.backlogObjects())
                .addKeyValue("backlogBytes", r.backlogBytes())
                .addKeyValue("lagSeconds", r.lagSeconds())
                .addKeyValue("millis", r.millis())
                .log(r.snapshotId() == null ? "Merge run: nothing committed" : "Merge run committed a snapshot");
        return r;
    }
}
