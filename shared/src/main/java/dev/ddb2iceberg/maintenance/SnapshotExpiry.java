package dev.ddb2iceberg.maintenance;

import dev.ddb2iceberg.commit.Checkpoint;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import org.apache.iceberg.ExpireSnapshots;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Expires snapshots older than the maximum age, keeping the minimum number and never the newest
 * merger snapshot (it holds the checkpoint). Files no remaining snapshot needs are deleted.
 */
final class SnapshotExpiry {
    private static final Logger LOG = LoggerFactory.getLogger(SnapshotExpiry.class);

    private final Table table;
    private final MaintenanceOptions options;
    private final Clock clock;

    SnapshotExpiry(Table table, MaintenanceOptions options, Clock clock) {
        this.table = table;
        this.options = options;
        this.clock = clock;
    }

    /** Returns the snapshots expired (or that would be, on a dry run). */
    int run(boolean dryRun) {
        table.refresh();
        if (table.currentSnapshot() == null) {
            return 0;
        }
        long cutoff =
                clock.millis() - Duration.ofHours(options.snapshotMaxAgeHours()).toMillis();
        Snapshot merger = Checkpoint.newestMergerSnapshot(table);
        if (merger != null) {
            cutoff = Math.min(cutoff, merger.timestampMillis());
        }
        ExpireSnapshots expire = table.expireSnapshots()
                .expireOlderThan(cutoff)
                .retainLast(options.minSnapshotsToKeep())
                .cleanExpiredFiles(true);
        int count = expire.apply().size();
        if (!dryRun && count > 0) {
            expire.commit();
            LOG.info("Expired {} snapshots older than {}", count, Instant.ofEpochMilli(cutoff));
        }
        return count;
    }
}
