package dev.ddb2iceberg.maintenance;

import java.util.List;

/**
 * What one maintenance run did (or, on a dry run, would do).
 *
 * @param dryRun nothing was changed
 * @param compaction file groups, files and bytes rewritten, and files/deletes before and after
 * @param manifestsRewritten manifests replaced by the manifest rewrite
 * @param snapshotsExpired snapshots expired
 * @param orphans unreferenced files found old enough to delete (deleted unless a dry run)
 * @param catalogVersionsDeleted old Glue table versions of the table deleted (on a dry run: that would be)
 * @param conflicts tasks that lost a race with another commit and gave up for this run
 */
public record MaintenanceResult(
        boolean dryRun,
        Compaction compaction,
        int manifestsRewritten,
        int snapshotsExpired,
        List<String> orphans,
        int catalogVersionsDeleted,
        List<String> conflicts,
        long millis) {

    public record Compaction(
            int groups,
            int filesRewritten,
            long bytesRewritten,
            int filesWritten,
            int danglingDeletesRemoved,
            int dataFilesBefore,
            int deleteFilesBefore,
            int dataFilesAfter,
            int deleteFilesAfter,
            int groupsLeft) {
        public static final Compaction NONE = new Compaction(0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    }
}
