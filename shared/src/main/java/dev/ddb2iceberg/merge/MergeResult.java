package dev.ddb2iceberg.merge;

/**
 * What one merge run did; returned by the merger function and logged.
 *
 * @param changesRead changes in the staged objects taken this run
 * @param changesApplied changes that changed the table (after keeping each key's latest)
 * @param upserts rows written (inserts and replacements)
 * @param deletes rows removed (replaced and deleted items)
 * @param staleSkipped changes not applied because the table already held a newer one
 * @param objectsApplied staged objects applied by this run's commit
 * @param objectsAlreadyApplied staged objects found already applied (by an earlier run) and deleted
 * @param quarantined changes or staged objects set aside in the quarantine, with the reason
 * @param snapshotId the snapshot committed, or null when nothing was committed
 * @param commitAttempts commit attempts (1 unless a race was lost)
 * @param filesRead data files read to find live rows, of {@code filesInTable}
 * @param backlogObjects staged objects left for later runs
 * @param backlogBytes their compressed size
 * @param oldestUnmergedAgeSeconds age of the oldest staged object left, 0 if none
 * @param lagSeconds now minus the approximate time of the oldest change applied this run
 * @param millis run time
 */
public record MergeResult(
    long changesRead,
    long changesApplied,
    long upserts,
    long deletes,
    long staleSkipped,
    int objectsApplied,
    int objectsAlreadyApplied,
    int quarantined,
    Long snapshotId,
    int commitAttempts,
    int filesRead,
    int filesInTable,
    int backlogObjects,
    long backlogBytes,
    long oldestUnmergedAgeSeconds,
    long lagSeconds,
    long millis) {}
