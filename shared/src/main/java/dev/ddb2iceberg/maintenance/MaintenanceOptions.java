package dev.ddb2iceberg.maintenance;

import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.Settings;

/**
 * Maintenance settings, with defaults after S3 Tables' own table maintenance: compaction to 512 MB
 * files, snapshots kept at least 1 and for 120 hours, orphan files removed after 3 days.
 *
 * @param targetFileSizeBytes compaction's output file size (S3 Tables allows 64 MB to 512 MB)
 * @param maxBytesPerRun bound on the bytes one run rewrites
 * @param maxGroupsPerRun bound on the file groups one run rewrites
 * @param minInputFiles a partition is compacted once it has this many small files
 * @param deleteRatio a file is rewritten once this share of its rows is deleted (see {@link CompactionPlanner})
 * @param maxRunSeconds compaction starts no group after this many seconds of a run (Lambda stops a run at 900)
 * @param snapshotMaxAgeHours snapshots older than this expire
 * @param minSnapshotsToKeep never fewer snapshots than this
 * @param orphanMinAgeHours unreferenced files younger than this are kept (a commit may be writing them)
 * @param manifestThreshold rewrite manifests once the current snapshot has more small ones than this
 * @param historyRetentionDays the change history (HISTORY_TABLE) drops its days older than this; 0
 *     keeps every change for good
 * @param historySnapshotMaxAgeHours the change history's snapshots older than this expire
 * @param glueTableVersionsKept a Glue table's newest versions kept, the current one among them
 * @param glueTableVersionsPerRun the most old versions of a Glue table one run deletes
 */
public record MaintenanceOptions(
        long targetFileSizeBytes,
        long maxBytesPerRun,
        int maxGroupsPerRun,
        int minInputFiles,
        double deleteRatio,
        long maxRunSeconds,
        long snapshotMaxAgeHours,
        int minSnapshotsToKeep,
        long orphanMinAgeHours,
        int manifestThreshold,
        long historyRetentionDays,
        long historySnapshotMaxAgeHours,
        int glueTableVersionsKept,
        int glueTableVersionsPerRun) {

    public static final MaintenanceOptions DEFAULTS =
            new MaintenanceOptions(512L << 20, 2L << 30, 16, 5, 0.2, 600, 120, 1, 72, 100, 0, 120, 100, 2000);

    public static MaintenanceOptions from(Environment env) {
        long snapshotMaxAgeHours = env.positiveLong(Settings.SNAPSHOT_MAX_AGE_HOURS);
        return new MaintenanceOptions(
                env.positiveLong(Settings.COMPACTION_TARGET_FILE_SIZE_BYTES),
                env.positiveLong(Settings.COMPACTION_MAX_BYTES_PER_RUN),
                env.positiveInt(Settings.COMPACTION_MAX_GROUPS_PER_RUN),
                env.positiveInt(Settings.COMPACTION_MIN_INPUT_FILES),
                env.positiveInt(Settings.COMPACTION_DELETED_PERCENT) / 100.0,
                env.positiveLong(Settings.COMPACTION_MAX_SECONDS),
                snapshotMaxAgeHours,
                env.positiveInt(Settings.SNAPSHOT_MIN_KEEP),
                env.positiveLong(Settings.ORPHAN_MIN_AGE_HOURS),
                env.positiveInt(Settings.MANIFEST_REWRITE_THRESHOLD),
                env.nonNegativeLong(Settings.HISTORY_RETENTION_DAYS),
                env.positiveLong(Settings.HISTORY_SNAPSHOT_MAX_AGE_HOURS, snapshotMaxAgeHours),
                env.positiveInt(Settings.GLUE_TABLE_VERSIONS_KEPT),
                env.positiveInt(Settings.GLUE_TABLE_VERSIONS_DELETED_PER_RUN));
    }

    public MaintenanceOptions withTargetFileSize(long bytes) {
        return new MaintenanceOptions(
                bytes,
                maxBytesPerRun,
                maxGroupsPerRun,
                minInputFiles,
                deleteRatio,
                maxRunSeconds,
                snapshotMaxAgeHours,
                minSnapshotsToKeep,
                orphanMinAgeHours,
                manifestThreshold,
                historyRetentionDays,
                historySnapshotMaxAgeHours,
                glueTableVersionsKept,
                glueTableVersionsPerRun);
    }

    public MaintenanceOptions withMaxGroupsPerRun(int groups) {
        return new MaintenanceOptions(
                targetFileSizeBytes,
                maxBytesPerRun,
                groups,
                minInputFiles,
                deleteRatio,
                maxRunSeconds,
                snapshotMaxAgeHours,
                minSnapshotsToKeep,
                orphanMinAgeHours,
                manifestThreshold,
                historyRetentionDays,
                historySnapshotMaxAgeHours,
                glueTableVersionsKept,
                glueTableVersionsPerRun);
    }

    public MaintenanceOptions withManifestThreshold(int threshold) {
        return new MaintenanceOptions(
                targetFileSizeBytes,
                maxBytesPerRun,
                maxGroupsPerRun,
                minInputFiles,
                deleteRatio,
                maxRunSeconds,
                snapshotMaxAgeHours,
                minSnapshotsToKeep,
                orphanMinAgeHours,
                threshold,
                historyRetentionDays,
                historySnapshotMaxAgeHours,
                glueTableVersionsKept,
                glueTableVersionsPerRun);
    }

    /** The options for the change history: its own snapshot retention (its rows' is {@link #historyRetentionDays}). */
    public MaintenanceOptions forHistory() {
        return new MaintenanceOptions(
                targetFileSizeBytes,
                maxBytesPerRun,
                maxGroupsPerRun,
                minInputFiles,
                deleteRatio,
                maxRunSeconds,
                historySnapshotMaxAgeHours,
                minSnapshotsToKeep,
                orphanMinAgeHours,
                manifestThreshold,
                historyRetentionDays,
                historySnapshotMaxAgeHours,
                glueTableVersionsKept,
                glueTableVersionsPerRun);
    }
}
