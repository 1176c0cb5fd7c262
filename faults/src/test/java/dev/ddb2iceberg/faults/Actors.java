package dev.ddb2iceberg.faults;

import dev.ddb2iceberg.commit.Checkpoint;
import dev.ddb2iceberg.commit.FanOutMark;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.FaultInjectingBlobStore;
import dev.ddb2iceberg.export.ExportLocation;
import dev.ddb2iceberg.function.MaintenanceSettings;
import dev.ddb2iceberg.index.KeyIndex;
import dev.ddb2iceberg.load.ExportLoadResult;
import dev.ddb2iceberg.load.ExportLoader;
import dev.ddb2iceberg.maintenance.Maintenance;
import dev.ddb2iceberg.maintenance.MaintenanceTask;
import dev.ddb2iceberg.merge.ContinuousMerge;
import dev.ddb2iceberg.merge.FanOutMerge;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.merge.MergeResult;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.testkit.CommitHookCatalog;
import dev.ddb2iceberg.testkit.MovableClock;
import dev.ddb2iceberg.testkit.StreamEvents;
import dev.ddb2iceberg.testkit.UnknownOutcomeCatalog;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.EnumSet;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * The pipeline's parts as the harness builds and invokes them: the stager, the merger (one run, or
 * a continuous run on a clock the harness moves), maintenance of the table and of its change
 * history, and the export loader; each with the fault the {@link FaultPlan} gives it: S3 errors
 * armed on the blob store, a catalog whose commit outcome is unknown, a damaged key index, or a
 * crash or a racing commit injected just before a commit by a catalog that wraps the real one
 * ({@link CommitHookCatalog}). Every such injection is in this class. After each run the
 * {@link Invariants} check the table against its checkpoints.
 */
final class Actors {
    private final FaultPlan plan;
    private final MergeOptions defaults;
    private final EmbeddedS3Server server;
    private final FaultInjectingBlobStore faults;
    private final MaintenanceSettings settings;
    private final Catalog catalog;
    private final StagingStore store;
    private final TableIdentifier id;
    private final TableIdentifier historyId;
    private final boolean withHistory;
    private final SourceExport export;
    private final Invariants invariants;
    private final FaultStats stats;
    private final Trail trail;
    private boolean exportLoaded;

    Actors(
            FaultPlan plan,
            EmbeddedS3Server server,
            MaintenanceSettings settings,
            Catalog catalog,
            StagingStore store,
            TableIdentifier id,
            TableIdentifier historyId,
            SourceExport export,
            Invariants invariants,
            FaultStats stats,
            Trail trail) {
        this.plan = plan;
        this.defaults = plan.mergeDefaults();
        this.server = server;
        this.faults = server.faults();
        this.settings = settings;
        this.catalog = catalog;
        this.store = store;
        this.id = id;
        this.historyId = historyId;
        this.withHistory = plan.withHistory();
        this.export = export;
        this.invariants = invariants;
        this.stats = stats;
        this.trail = trail;
    }

    // ------------------------------------------------------------------ the stager

    /** The stager, given one batch as Lambda delivers it; what it staged joins the oracle. */
    BatchStager.Result stage(List<Change> batch) {
        BatchStager.Result r =
                new BatchStager(store).stage(StreamEvents.batch(batch).getRecords());
        if (r.complete() && r.stagedObject() != null) {
            invariants.staged(Checkpoint.token(r.stagedObject()), batch);
        }
        return r;
    }

    // ------------------------------------------------------------------ the merger

    void merge(boolean withFaults) {
        boolean tableExists = catalog.tableExists(id);
        FaultPlan.MergeRun run = plan.merge(withFaults, tableExists);
        Catalog mergeCatalog = catalog;
        String kind = "merge";
        switch (run.fault()) {
            case S3_GET_STAGED -> {
                faults.failFrom(
                        FaultInjectingBlobStore.Operation.GET,
                        run.failures(),
                        k -> k.startsWith(settings.staging().stagingPrefix()));
                kind = "S3 GET errors reading staged changes";
            }
            case S3_DELETE_STAGED -> {
                faults.failFrom(
                        FaultInjectingBlobStore.Operation.DELETE,
                        run.failures(),
                        k -> k.startsWith(settings.staging().stagingPrefix()));
                kind = "S3 DELETE errors after the commit (crash before staged objects are deleted)";
            }
            case S3_PUT_DATA -> {
                faults.failFrom(FaultInjectingBlobStore.Operation.PUT, run.failures(), k -> k.contains("/data/"));
                kind = "S3 PUT errors writing data files";
            }
            case S3_LIST_STAGED -> {
                faults.failFrom(FaultInjectingBlobStore.Operation.LIST, run.failures(), k -> true);
                kind = "S3 LIST errors listing staged changes";
            }
            case COMMIT_OUTCOME_UNKNOWN -> {
                mergeCatalog = new UnknownOutcomeCatalog(catalog, run.committed());
                kind = "commit outcome unknown (CommitStateUnknownException)";
            }
            case S3_GET_KEY_INDEX -> {
                faults.failFrom(FaultInjectingBlobStore.Operation.GET, run.failures(), k -> k.contains("/key-index/"));
                kind = "S3 GET errors reading the key index";
            }
            case S3_PUT_KEY_INDEX -> {
                faults.failFrom(FaultInjectingBlobStore.Operation.PUT, run.failures(), k -> k.contains("/key-index/"));
                kind = "S3 PUT errors writing the key index";
            }
            case KEY_INDEX_DAMAGED -> {
                if (damageKeyIndexFile()) {
                    kind = "a key index file lost, truncated or corrupted";
                }
            }
            default -> {
                // the merger's own hooks, below
            }
        }
        switch (run.fault()) {
            case CRASH_BEFORE_COMMIT -> {
                kind = "merger crashes before its commit";
                mergeCatalog = beforeCommits(mergeCatalog, t -> {
                    throw new PipelineHarness.InjectedCrash("before the merge commit");
                });
            }
            case RACING_MAINTENANCE -> {
                kind = "maintenance commits while a merge is planning";
                mergeCatalog = beforeCommits(mergeCatalog, onFirstAttempt(this::racingMaintenance));
            }
            case RACING_MERGER -> {
                kind = "another merger commits first";
                mergeCatalog = beforeCommits(mergeCatalog, onFirstAttempt(this::racingMerger));
            }
            default -> {
                // armed above, or none
            }
        }
        Merger merger = new Merger(mergeCatalog, settings.table(), store, run.options());
        if (!kind.equals("merge")) {
            stats.count(kind);
        }
        runMerger(merger, kind);
        faults.clear();
        invariants.checkTableMatchesItsCheckpoints("after " + kind);
    }

    /**
     * Deletes, truncates or corrupts one file of the index the current snapshot names (a lost object,
     * a partial upload, bad bytes); false when there is none. Merges must rebuild, never trust it.
     */
    private boolean damageKeyIndexFile() {
        Table table = catalog.loadTable(id);
        List<String> files = KeyIndex.filesOf(table, table.currentSnapshot());
        if (files.isEmpty()) {
            return false;
        }
        FaultPlan.KeyIndexDamage damage = plan.keyIndexDamage(files.size());
        String victim = files.get(damage.file());
        if (!table.io().newInputFile(victim).exists()) {
            // Lost by an earlier step, and no merge since has needed the index (nothing was staged)
            // to rebuild it: the damage is still there, nothing more to do.
            trail.add("key index file " + victim + " still lost");
            return false;
        }
        try {
            switch (damage.damage()) {
                case LOST -> {
                    table.io().deleteFile(victim);
                    trail.add("lost key index file " + victim);
                }
                case TRUNCATED -> {
                    byte[] bytes = table.io().newInputFile(victim).newStream().readAllBytes();
                    try (var out = table.io().newOutputFile(victim).createOrOverwrite()) {
                        out.write(bytes, 0, bytes.length / 2);
                    }
                    trail.add("truncated key index file " + victim);
                }
                case CORRUPTED -> {
                    // Every 97th byte changed, the length kept: only the file's own checks can tell.
                    byte[] bytes = table.io().newInputFile(victim).newStream().readAllBytes();
                    for (int i = 0; i < bytes.length; i += 97) {
                        bytes[i] ^= 0x24;
                    }
                    try (var out = table.io().newOutputFile(victim).createOrOverwrite()) {
                        out.write(bytes);
                    }
                    trail.add("corrupted key index file " + victim);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return true;
    }

    /** {@code through}, with {@code hook} run before each commit of the table that adds a snapshot. */
    private Catalog beforeCommits(Catalog through, Consumer<Table> hook) {
        return CommitHookCatalog.beforeEachSnapshot(through, id, hook);
    }

    /** A commit hook that runs {@code race} before the first attempt only (the retry must then win). */
    private static Consumer<Table> onFirstAttempt(Runnable race) {
        boolean[] done = {false};
        return table -> {
            if (!done[0]) {
                done[0] = true;
                race.run();
            }
        };
    }

    /** Another merger that commits in the middle of a run. */
    private void racingMerger() {
        runMerger(new Merger(catalog, settings.table(), store, defaults), "the racing merger");
    }

    /** Maintenance that compacts and expires in the middle of a run. */
    private void racingMaintenance() {
        maintenance(Clock.systemUTC()).run(EnumSet.of(MaintenanceTask.COMPACT, MaintenanceTask.EXPIRE), false);
    }

    private void runMerger(Merger merger, String kind) {
        try {
            MergeResult r = merger.run();
            stats.add("changes read by mergers", r.changesRead());
            trail.add(kind + ": " + r.changesRead() + " changes from " + r.objectsApplied() + " objects, backlog "
                    + r.backlogObjects() + ", attempts " + r.commitAttempts());
        } catch (RuntimeException e) {
            trail.add(kind + ": failed (" + Trail.firstLine(e) + ")");
        }
        invariants.recordApplied();
    }

    // ------------------------------------------------------------------ the fanned-out merge

    /**
     * A fanned-out merge of what is staged, its steps run as the state machine runs them (each
     * shuffle, range and commit step tried three times, then an abort), with one of its faults: a
     * range failing once, a crash before the commit, maintenance or a scheduled merge just before
     * it, an unknown commit outcome, staged objects that cannot be deleted (and the slice fanned out
     * again), or a commit step repeated after the end. The mark must be gone after it, whatever
     * happened, and the table must equal its checkpoints.
     */
    void fanOutMerge() {
        if (!catalog.tableExists(id) || !defaults.keyIndex() || store.list().isEmpty()) {
            return;
        }
        FaultPlan.FanOutRun run = plan.fanOut();
        Catalog fanCatalog = catalog;
        AtomicBoolean failedOnce = new AtomicBoolean();
        switch (run.fault()) {
            case RANGE_FAILS_ONCE ->
                faults.failFrom(
                        FaultInjectingBlobStore.Operation.PUT,
                        1,
                        k -> k.endsWith("/ranges/r0.bin") && !failedOnce.get());
            case CRASH_BEFORE_COMMIT ->
                fanCatalog = beforeCommits(catalog, t -> {
                    throw new PipelineHarness.InjectedCrash("before the fan-out's commit");
                });
            case RACING_MAINTENANCE -> fanCatalog = beforeCommits(catalog, onFirstAttempt(this::racingMaintenance));
            case RACING_MERGER -> fanCatalog = beforeCommits(catalog, onFirstAttempt(this::racingMerger));
            case COMMIT_OUTCOME_UNKNOWN -> fanCatalog = new UnknownOutcomeCatalog(catalog, run.committed());
            case S3_DELETE_STAGED_THEN_AGAIN ->
                faults.failFrom(
                        FaultInjectingBlobStore.Operation.DELETE,
                        1,
                        k -> k.startsWith(settings.staging().stagingPrefix()));
            default -> {
                // no fault, or one after the run (below)
            }
        }
        String kind = "fan-out merge over " + run.ranges() + " ranges"
                + (run.fault() == FaultPlan.FanOutFault.NONE ? "" : ", " + run.fault());
        stats.count(
                run.fault() == FaultPlan.FanOutFault.NONE ? "fan-out merges" : "fan-out merges with " + run.fault());
        String mergeId =
                fanOut(new FanOutMerge(fanCatalog, settings.table(), store, defaults), run.ranges(), kind, () -> {
                    failedOnce.set(true);
                    faults.clear(); // the retry finds S3 answering again
                });
        faults.clear();
        if (run.fault() == FaultPlan.FanOutFault.S3_DELETE_STAGED_THEN_AGAIN) {
            fanOut(
                    new FanOutMerge(catalog, settings.table(), store, defaults),
                    run.ranges(),
                    "the same slice fanned out again",
                    () -> {});
        }
        if (run.fault() == FaultPlan.FanOutFault.REPEATED_COMMIT && mergeId != null) {
            // Its answer lost, say: a commit step after the end finds the fan-out's commit, or (aborted) no plan.
            long before = catalog.loadTable(id).currentSnapshot().snapshotId();
            try {
                FanOutMerge.Committed again =
                        new FanOutMerge(catalog, settings.table(), store, defaults).commit(mergeId);
                trail.add("the repeated commit step found snapshot " + again.snapshotId());
            } catch (IllegalStateException refused) {
                trail.add("the repeated commit step refused: " + Trail.firstLine(refused));
            }
            if (catalog.loadTable(id).currentSnapshot().snapshotId() != before) {
                throw trail.failure("a repeated commit step of fan-out " + mergeId + " committed again");
            }
        }
        invariants.recordApplied();
        if (FanOutMark.read(catalog.loadTable(id)) != null) {
            throw trail.failure("the fan-out's mark is still on the table after " + kind);
        }
        invariants.checkTableMatchesItsCheckpoints("after " + kind);
    }

    /**
     * The state machine's run of one fan-out: plan, shuffles and ranges (each tried three times;
     * {@code onRetry} runs before a retry), the commit (three times, not after a lost race), and on
     * any failure the abort, through the harness's own catalog. Returns the merge id, or null.
     */
    private String fanOut(FanOutMerge merge, int ranges, String kind, Runnable onRetry) {
        FanOutMerge.Planned planned;
        try {
            planned = merge.plan(ranges, "harness-" + UUID.randomUUID());
        } catch (IllegalStateException refused) {
            trail.add(kind + ": refused (" + Trail.firstLine(refused) + ")");
            return null;
        }
        if (planned.mergeId() == null) {
            trail.add(kind + ": nothing to fan out");
            return null;
        }
        String mergeId = planned.mergeId();
        try {
            for (int w = 0; w < planned.works(); w++) {
                int work = w;
                withRetries(() -> merge.shuffle(mergeId, work), onRetry, false);
            }
            for (int r = 0; r < planned.ranges(); r++) {
                int range = r;
                withRetries(() -> merge.mergeRange(mergeId, range), onRetry, false);
            }
            FanOutMerge.Committed c = withRetries(() -> merge.commit(mergeId), onRetry, true);
            stats.add("changes merged by fan-outs", c.changes());
            trail.add(kind + ": " + c.changes() + " changes from " + c.objects() + " objects in snapshot "
                    + c.snapshotId());
        } catch (RuntimeException e) {
            trail.add(kind + ": failed (" + Trail.firstLine(e) + "); aborted");
            new FanOutMerge(catalog, settings.table(), store, defaults).abort(mergeId, Trail.firstLine(e));
        }
        return mergeId;
    }

    /** A step tried three times, as the state machine's retry; a commit that lost its race is not tried again. */
    private static <T> T withRetries(Supplier<T> step, Runnable onRetry, boolean commit) {
        for (int attempt = 1; ; attempt++) {
            try {
                return step.get();
            } catch (RuntimeException e) {
                boolean lostRace = commit && e.getClass().getName().startsWith("org.apache.iceberg.exceptions.");
                if (attempt >= 3 || lostRace || e instanceof PipelineHarness.InjectedCrash) {
                    throw e;
                }
                onRetry.run();
            }
        }
    }

    // ------------------------------------------------------------------ continuous mode

    /**
     * A continuous merger run ({@link ContinuousMerge}) on a clock the harness moves. While it waits
     * between merges {@code whileWaiting} runs (the stream delivers batches, maintenance sometimes
     * runs); its merges meet S3 errors and a racing maintenance commit; about one run in three dies
     * before one of its commits, as a sandbox killed mid-loop. After each of its merges, and after
     * the run, the table must equal its checkpoints.
     */
    void continuousRun(Runnable whileWaiting) {
        stats.count("continuous merger runs");
        MovableClock clock = new MovableClock(Instant.now());
        int crashAt = plan.continuousRunDiesAt();
        int[] merges = {0};
        Supplier<MergeResult> merge = () -> {
            int n = ++merges[0];
            stats.count("merges in continuous runs");
            Catalog mergeCatalog = catalog;
            FaultPlan.ContinuousMergeRun run = plan.continuousMerge(n, crashAt, () -> catalog.tableExists(id));
            switch (run.fault()) {
                case CRASH_BEFORE_COMMIT -> {
                    stats.count("continuous runs dying before a commit mid-loop");
                    mergeCatalog = beforeCommits(catalog, t -> {
                        throw new PipelineHarness.InjectedCrash("before a commit in the middle of a continuous run");
                    });
                }
                case RACING_MAINTENANCE -> {
                    stats.count("maintenance commits while a continuous run's merge is planning");
                    mergeCatalog = beforeCommits(catalog, onFirstAttempt(this::racingMaintenance));
                }
                case S3_DELETE_STAGED -> {
                    stats.count("S3 DELETE errors after a continuous run's commit");
                    faults.failFrom(
                            FaultInjectingBlobStore.Operation.DELETE,
                            run.failures(),
                            k -> k.startsWith(settings.staging().stagingPrefix()));
                }
                case S3_PUT_DATA -> {
                    stats.count("S3 PUT errors in a continuous run's merge");
                    faults.failFrom(FaultInjectingBlobStore.Operation.PUT, run.failures(), k -> k.contains("/data/"));
                }
                case NONE -> {}
            }
            Merger m = new Merger(mergeCatalog, settings.table(), store, defaults);
            MergeResult r;
            try {
                r = m.run();
            } finally {
                faults.clear();
                invariants.recordApplied();
            }
            trail.add("  continuous merge " + n + ": " + r.changesRead() + " changes from " + r.objectsApplied()
                    + " objects, backlog " + r.backlogObjects());
            invariants.checkTableMatchesItsCheckpoints("after merge " + n + " of a continuous run");
            clock.set(clock.instant().plusMillis(plan.mergeMillis()));
            return r;
        };
        ContinuousMerge.Pause streamFlows = t -> {
            clock.set(t);
            whileWaiting.run();
        };
        ContinuousMerge.Settings continuous = new ContinuousMerge.Settings(
                ContinuousMerge.Mode.CONTINUOUS,
                Duration.ofSeconds(5),
                Duration.ofSeconds(10),
                Duration.ofSeconds(55),
                Duration.ofSeconds(30));
        trail.add("continuous run" + (crashAt > 0 ? " (dies before commit " + crashAt + ")" : ""));
        try {
            ContinuousMerge.Result r = new ContinuousMerge(continuous, merge, store::anyStaged, clock, streamFlows)
                    .run(clock.instant().plus(continuous.runLength()));
            trail.add("continuous run ended: " + r.merges().size() + " merges, " + r.stoppedBecause());
        } catch (RuntimeException e) {
            trail.add("continuous run died after " + merges[0] + " merges (" + Trail.firstLine(e) + ")");
        }
        faults.clear();
        invariants.checkTableMatchesItsCheckpoints("after a continuous run");
    }

    // ------------------------------------------------------------------ maintenance

    private Maintenance maintenance(Clock clock) {
        return maintenance(clock, catalog);
    }

    private Maintenance maintenance(Clock clock, Catalog through) {
        return new Maintenance(
                through.loadTable(id),
                settings.options().withTargetFileSize(1L << 20).withManifestThreshold(3),
                "s3://" + settings.staging().bucket() + "/" + settings.staging().stagingPrefix(),
                clock);
    }

    void maintain(boolean withFaults) {
        if (!catalog.tableExists(id)) {
            return;
        }
        invariants.recordApplied(); // before expiry can remove the snapshots that say what was applied
        FaultPlan.MaintenanceRun run = plan.maintenance(withFaults);
        Clock clock = run.tenDaysLater()
                ? Clock.fixed(Instant.now().plus(Duration.ofDays(10)), ZoneOffset.UTC)
                : Clock.systemUTC();
        Catalog maintenanceCatalog = catalog;
        String kind = "maintenance";
        switch (run.fault()) {
            case CRASH_IN_COMPACTION -> {
                kind = "maintenance crashes in the middle of compaction";
                maintenanceCatalog = CommitHookCatalog.beforeEachCompaction(catalog, id, t -> {
                    throw new PipelineHarness.InjectedCrash("between compaction's writes and its commit");
                });
            }
            case S3_DELETE -> {
                faults.failFrom(FaultInjectingBlobStore.Operation.DELETE, run.failures());
                kind = "S3 DELETE errors during maintenance";
            }
            case S3_GET_DATA -> {
                faults.failFrom(FaultInjectingBlobStore.Operation.GET, run.failures(), k -> k.contains("/data/"));
                kind = "S3 GET errors during compaction";
            }
            case RACING_MERGER -> {
                kind = "a merge commits while compaction is rewriting";
                maintenanceCatalog = CommitHookCatalog.beforeEachCompaction(catalog, id, t -> racingMerger());
            }
            case NONE -> {}
        }
        Maintenance m = maintenance(clock, maintenanceCatalog);
        if (!kind.equals("maintenance")) {
            stats.count(kind);
        }
        try {
            m.run(EnumSet.allOf(MaintenanceTask.class), false);
            if (withHistory && catalog.tableExists(historyId)) {
                // The history's maintenance, under the same faults: compaction must not lose or repeat a change.
                new Maintenance(
                                catalog.loadTable(historyId),
                                settings.options()
                                        .forHistory()
                                        .withTargetFileSize(1L << 20)
                                        .withManifestThreshold(3),
                                "s3://" + settings.staging().bucket() + "/"
                                        + settings.staging().stagingPrefix(),
                                clock)
                        .run(EnumSet.allOf(MaintenanceTask.class), false);
            }
            trail.add(
                    kind + (clock.instant().isAfter(Instant.now().plus(Duration.ofDays(1))) ? " (10 days later)" : ""));
        } catch (RuntimeException e) {
            trail.add(kind + ": failed (" + Trail.firstLine(e) + ")");
        }
        faults.clear();
        invariants.checkTableMatchesItsCheckpoints("after " + kind);
    }

    // ------------------------------------------------------------------ the initial load

    /** Whether the export loader has loaded the whole export. */
    boolean exportLoaded() {
        return exportLoaded;
    }

    /** One chunk of the export, sometimes with a fault. */
    void loadExportChunk(boolean withFaults) {
        boolean tableExists = catalog.tableExists(id);
        FaultPlan.ExportChunk chunk = plan.exportChunk(withFaults, tableExists);
        Catalog loadCatalog = catalog;
        String kind = "export chunk";
        switch (chunk.fault()) {
            case S3_GET_EXPORT -> {
                faults.failFrom(FaultInjectingBlobStore.Operation.GET, chunk.failures(), k -> k.startsWith("exports/"));
                kind = "S3 GET errors reading the export";
            }
            case S3_PUT_DATA -> {
                faults.failFrom(FaultInjectingBlobStore.Operation.PUT, chunk.failures(), k -> k.contains("/data/"));
                kind = "S3 PUT errors writing a loaded chunk";
            }
            case CRASH_BEFORE_COMMIT -> {
                kind = "loader crashes before a chunk's commit";
                loadCatalog = beforeCommits(catalog, t -> {
                    throw new PipelineHarness.InjectedCrash("before the export chunk's commit");
                });
            }
            case RACING_MERGER -> {
                kind = "a merge commits while a chunk is planned";
                loadCatalog = beforeCommits(catalog, onFirstAttempt(this::racingMerger));
            }
            case RACING_MAINTENANCE -> {
                kind = "maintenance commits while a chunk is planned";
                loadCatalog = beforeCommits(catalog, onFirstAttempt(this::racingMaintenance));
            }
            case NONE -> {}
        }
        ExportLoader loader = new ExportLoader(
                loadCatalog, settings.table(), store, defaults.withMaxChanges(chunk.maxChanges()), server.newClient());
        if (!kind.equals("export chunk")) {
            stats.count(kind);
        }
        try {
            // A deadline already past: one chunk per call, as a Lambda running out of time would.
            ExportLoadResult r = loader.run(
                    new ExportLoader.Request(
                            ExportLocation.parse(export.location()),
                            List.copyOf(plan.source().key(0).keySet()),
                            Duration.ofMinutes(5),
                            true),
                    Instant.now());
            exportLoaded = r.done();
            stats.add("export items loaded", r.itemsThisRun());
            trail.add(kind + ": " + r.itemsThisRun() + " items, " + r.itemsLoaded() + " of " + r.itemsInExport()
                    + (r.done() ? ", done" : ""));
        } catch (RuntimeException e) {
            trail.add(kind + ": failed (" + Trail.firstLine(e) + ")");
        }
        faults.clear();
        invariants.recordApplied();
        invariants.checkTableMatchesItsCheckpoints("after " + kind);
    }
}
