package dev.ddb2iceberg.maintenance;

import dev.ddb2iceberg.commit.CommitProtocol;
import dev.ddb2iceberg.commit.FanOutMark;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.iceberg.Table;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One maintenance run over the table: compaction ({@link Compactor}), history retention ({@link
 * HistoryRetention}), manifest rewrite ({@link ManifestRewrite}), snapshot expiry ({@link
 * SnapshotExpiry}), orphan cleanup ({@link OrphanFiles}) and the catalog's old table versions
 * ({@link GlueTableVersions}), in that order, each optional. Safe beside a running merger: every commit validates
 * against what changed since it planned; a compaction group that loses a race is read and written
 * again a few times ({@link Compactor}), any other task that loses one gives up for this run (the
 * merger's commit is never the one that fails for good; the next run tries again).
 * Every maintenance snapshot carries the merger's checkpoint forward, and expiry never removes the
 * newest merger snapshot, so the checkpoint cannot be lost.
 */
public final class Maintenance {
    private static final Logger LOG = LoggerFactory.getLogger(Maintenance.class);

    private final Table table;
    private final MaintenanceOptions options;
    private final String stagingUri;
    private final Clock clock;
    private boolean managedStorage;
    private CatalogVersions catalogVersions;

    /** The catalog's cleanup of the table's old versions: how many it deleted (on a dry run, would). */
    @FunctionalInterface
    public interface CatalogVersions {
        int trim(boolean dryRun);
    }

    /** @param stagingUri the staging area, e.g. {@code s3://bucket/staging/}: never touched */
    public Maintenance(Table table, MaintenanceOptions options, String stagingUri, Clock clock) {
        this.table = table;
        this.options = options;
        this.stagingUri = stagingUri;
        this.clock = clock;
    }

    /**
     * For a table in an S3 table bucket: S3 Tables compacts it, expires its snapshots and removes
     * unreferenced files itself, and its storage cannot be listed. A run then never compacts (two
     * compactors on one table would fight over its files) nor expires snapshots, and its orphan
     * cleanup looks only at the pipeline's own files, which live in a general purpose bucket.
     */
    public Maintenance managedStorage(boolean managed) {
        this.managedStorage = managed;
        return this;
    }

    /**
     * For a table in the Glue Data Catalog: the catalog-versions task deletes its old table versions
     * with this ({@link GlueTableVersions}). Without one the task has nothing to do.
     */
    public Maintenance catalogVersions(CatalogVersions cleanup) {
        this.catalogVersions = cleanup;
        return this;
    }

    /** Notes a task's lost race among the run's conflicts; returns what the task did ({@code none}). */
    private static <T> T raced(List<String> conflicts, String task, RuntimeException lost, T none) {
        conflicts.add(task + ": " + lost.getMessage());
        return none;
    }

    /**
     * A compaction fan-out's plan: the file groups worth rewriting now, each as its files'
     * locations, most benefit per byte first (none for a table in an S3 table bucket).
     */
    /**
     * Whether a fanned-out merge runs on the table: its commit deletes rows from most data files, so
     * a compaction now would make it abort after all its work. Compaction waits for the next run.
     */
    private boolean fanOutInProgress() {
        FanOutMark mark = FanOutMark.read(table);
        if (mark != null) {
            LOG.info(
                    "Fanned-out merge {} is in progress since {}: no compaction this run",
                    mark.mergeId(),
                    mark.started());
        }
        return mark != null;
    }

    public List<List<String>> compactionGroups() {
        if (managedStorage || fanOutInProgress()) {
            return List.of();
        }
        List<List<String>> groups = new ArrayList<>();
        for (CompactionPlanner.Group g : new Compactor(table, options).plan()) {
            groups.add(g.tasks().stream().map(t -> t.file().location()).sorted().toList());
        }
        return groups;
    }

    /**
     * One group of a compaction fan-out, by its files' locations (from {@link #compactionGroups}):
     * rewritten and committed on its own, as in a run; a group whose files are gone does nothing.
     */
    public MaintenanceResult compactGroup(List<String> files) {
        long start = System.nanoTime();
        List<String> conflicts = new ArrayList<>();
        MaintenanceResult.Compaction compaction =
                new Compactor(table, options).compactGroup(new HashSet<>(files), conflicts);
        return new MaintenanceResult(
                false, compaction, 0, 0, List.of(), 0, conflicts, (System.nanoTime() - start) / 1_000_000);
    }

    /**
     * The end of a compaction fan-out: the position deletes its groups left dangling, and the many
     * small manifests one commit per group leaves, rewritten into few.
     */
    public MaintenanceResult finishCompaction() {
        long start = System.nanoTime();
        List<String> conflicts = new ArrayList<>();
        int dangling = CommitProtocol.unlessRaced(
                "Dangling deletes",
                () -> new Compactor(table, options).finish(),
                lost -> raced(conflicts, "compact", lost, 0));
        int manifests = CommitProtocol.unlessRaced(
                "Manifest rewrite",
                () -> new ManifestRewrite(table, options.manifestThreshold()).run(false),
                lost -> raced(conflicts, "manifests", lost, 0));
        table.refresh();
        int[] files = Compactor.fileCounts(table.currentSnapshot());
        MaintenanceResult.Compaction compaction =
                new MaintenanceResult.Compaction(0, 0, 0, 0, dangling, files[0], files[1], files[0], files[1], 0);
        return new MaintenanceResult(
                false, compaction, manifests, 0, List.of(), 0, conflicts, (System.nanoTime() - start) / 1_000_000);
    }

    /** The table's data files and delete files now. */
    public int[] fileCounts() {
        table.refresh();
        return Compactor.fileCounts(table.currentSnapshot());
    }

    public MaintenanceResult run(Set<MaintenanceTask> requested, boolean dryRun) {
        long start = System.nanoTime();
        Set<MaintenanceTask> tasks = requested;
        if (managedStorage
                && (requested.contains(MaintenanceTask.COMPACT) || requested.contains(MaintenanceTask.EXPIRE))) {
            tasks = EnumSet.copyOf(requested);
            tasks.removeAll(Set.of(MaintenanceTask.COMPACT, MaintenanceTask.EXPIRE));
            LOG.info(
                    "The table is in an S3 table bucket, which compacts it and expires its snapshots itself: skipping"
                            + " compact and expire; running {}",
                    tasks);
        }
        List<String> conflicts = new ArrayList<>();
        MaintenanceResult.Compaction compaction = MaintenanceResult.Compaction.NONE;
        int manifests = 0;
        int expired = 0;
        List<String> orphans = List.of();
        table.refresh();
        if (tasks.contains(MaintenanceTask.COMPACT) && fanOutInProgress()) {
            tasks = EnumSet.copyOf(tasks);
            tasks.remove(MaintenanceTask.COMPACT);
        }
        // A task that loses a race with another commit gives up for this run; the next run does it.
        if (tasks.contains(MaintenanceTask.COMPACT)) {
            compaction = CommitProtocol.unlessRaced(
                    "Compaction",
                    () -> new Compactor(table, options).run(dryRun, conflicts),
                    lost -> raced(conflicts, "compact", lost, MaintenanceResult.Compaction.NONE));
        }
        // Before the managed-storage filter: an S3 table bucket expires snapshots, but only the
        // pipeline knows how many days of changes its history keeps.
        if (requested.contains(MaintenanceTask.EXPIRE)) {
            CommitProtocol.unlessRaced(
                    "History retention",
                    () -> new HistoryRetention(table, options.historyRetentionDays(), clock).run(dryRun),
                    lost -> raced(conflicts, "history retention", lost, 0));
        }
        if (tasks.contains(MaintenanceTask.MANIFESTS)) {
            manifests = CommitProtocol.unlessRaced(
                    "Manifest rewrite",
                    () -> new ManifestRewrite(table, options.manifestThreshold()).run(dryRun),
                    lost -> raced(conflicts, "manifests", lost, 0));
        }
        if (tasks.contains(MaintenanceTask.EXPIRE)) {
            expired = CommitProtocol.unlessRaced(
                    "Snapshot expiry",
                    () -> new SnapshotExpiry(table, options, clock).run(dryRun),
                    lost -> raced(conflicts, "expire", lost, 0));
        }
        if (tasks.contains(MaintenanceTask.ORPHANS)) {
            table.refresh();
            Instant cutoff = clock.instant().minus(Duration.ofHours(options.orphanMinAgeHours()));
            orphans = new OrphanFiles(table, stagingUri, !managedStorage).run(cutoff, dryRun);
            LOG.info("{} {} orphan files older than {}", dryRun ? "Found" : "Deleted", orphans.size(), cutoff);
        }
        int versionsDeleted = 0;
        if (tasks.contains(MaintenanceTask.CATALOG_VERSIONS)) {
            if (catalogVersions == null) {
                LOG.info("catalog-versions: only a Glue catalog keeps table versions to bound; nothing to do here");
            } else {
                versionsDeleted = catalogVersions.trim(dryRun);
            }
        }
        MaintenanceResult result = new MaintenanceResult(
                dryRun,
                compaction,
                manifests,
                expired,
                orphans,
                versionsDeleted,
                conflicts,
                (System.nanoTime() - start) / 1_000_000);
        LOG.atInfo()
                .addKeyValue("dryRun", dryRun)
                .addKeyValue(
                        "snapshotId",
                        table.currentSnapshot() == null
                                ? null
                                : table.currentSnapshot().snapshotId())
                .addKeyValue("groupsCompacted", compaction.groups())
                .addKeyValue("filesRewritten", compaction.filesRewritten())
                .addKeyValue("bytesRewritten", compaction.bytesRewritten())
                .addKeyValue("filesWritten", compaction.filesWritten())
                .addKeyValue("dataFiles", compaction.dataFilesAfter())
                .addKeyValue("deleteFiles", compaction.deleteFilesAfter())
                .addKeyValue("groupsLeft", compaction.groupsLeft())
                .addKeyValue("manifestsRewritten", manifests)
                .addKeyValue("snapshotsExpired", expired)
                .addKeyValue("orphans", orphans.size())
                .addKeyValue("catalogVersionsDeleted", versionsDeleted)
                .addKeyValue("conflicts", conflicts.isEmpty() ? null : String.join("; ", conflicts))
                .addKeyValue("millis", result.millis())
                .log("Maintenance run");
        return result;
    }
}
