package dev.ddb2iceberg.merge;

/**
 * What one merge run did; returned by the merger function and logged. A scheduled run that merges
 * again to catch up with a backlog returns its merges together ({@link #followedBy}).
 *
 * @param changesRead changes in the staged objects taken this run
 * @param changesApplied changes that changed the table (after keeping each key's latest)
 * @param itemsWritten rows written: items inserted or updated (one new row per item)
 * @param rowsReplaced old rows of updated items, removed because this run wrote a newer version of the item
 * @param itemsRemoved items deleted by a REMOVE (a user's or TTL's) whose row the table held; a REMOVE of an
 *     item the table does not hold changes nothing and is not counted
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
 * @param heldBecause why the run merged nothing on purpose (a parallel export load is in progress,
 *     or merges wait for the initial load), or null
 */
public record MergeResult(
        long changesRead,
        long changesApplied,
        long itemsWritten,
        long rowsReplaced,
        long itemsRemoved,
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
        long millis,
        String heldBecause) {

    /**
     * This merge and the {@code next} as one run: the counts add up; the snapshot, the table's files,
     * the backlog, the lag and the hold are the later merge's (what the run left).
     */
    public MergeResult followedBy(MergeResult next) {
        return new MergeResult(
                changesRead + next.changesRead,
                changesApplied + next.changesApplied,
                itemsWritten + next.itemsWritten,
                rowsReplaced + next.rowsReplaced,
                itemsRemoved + next.itemsRemoved,
                staleSkipped + next.staleSkipped,
                objectsApplied + next.objectsApplied,
                objectsAlreadyApplied + next.objectsAlreadyApplied,
                quarantined + next.quarantined,
                next.snapshotId != null ? next.snapshotId : snapshotId,
                commitAttempts + next.commitAttempts,
                filesRead + next.filesRead,
                next.filesInTable,
                next.backlogObjects,
                next.backlogBytes,
                next.oldestUnmergedAgeSeconds,
                next.lagSeconds,
                millis + next.millis,
                next.heldBecause);
    }
}
