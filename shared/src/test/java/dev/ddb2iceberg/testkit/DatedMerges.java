package dev.ddb2iceberg.testkit;

import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/** Changes dated a given day and merged in small slices: how tests give a change history days to keep and drop. */
public final class DatedMerges {
    private DatedMerges() {}

    /**
     * Changes made on {@code day}, 20 to a slice, each slice staged and merged on its own (a history
     * file per merge); returns the changes made.
     */
    public static List<Change> mergeChangesOn(
            Instant day, KeyedWorkload w, int merges, StagingStore store, Supplier<Merger> merger) {
        List<Change> made = new ArrayList<>();
        for (int i = 0; i < merges; i++) {
            List<Change> batch = new ArrayList<>();
            for (Change c : w.next(20)) {
                batch.add(new Change(
                        c.keys(),
                        c.operation(),
                        c.newImage(),
                        c.sequenceNumber(),
                        day.toEpochMilli() + made.size() + batch.size(),
                        c.ttlExpiry()));
            }
            new BatchStager(store).stage(StreamEvents.batch(batch).getRecords());
            merger.get().run();
            made.addAll(batch);
        }
        return made;
    }
}
