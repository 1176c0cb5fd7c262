package dev.ddb2iceberg.faults;

import dev.ddb2iceberg.embedded.FaultInjectingBlobStore;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.staging.BatchStager;
import java.util.ArrayList;
import java.util.List;

/**
 * How Lambda delivers the seeded DynamoDB stream to the stager: a batch of up to 80 records from
 * one readable shard (a child shard only once its parent is done, so each key's records come in
 * order), acknowledged only once staged. With faults, as the {@link FaultPlan} draws them: S3 PUT
 * errors while staging (not acknowledged: Lambda retries from the failed record, sometimes after
 * bisecting the batch), a stager crash after staging but before acknowledging (the whole batch
 * comes again), or the same batch delivered twice.
 */
final class StreamDelivery {
    private final FaultPlan plan;
    private final SourceTable source;
    private final FaultInjectingBlobStore faults;
    private final String stagingPrefix;
    private final Actors actors;
    private final FaultStats stats;
    private final Trail trail;

    StreamDelivery(
            FaultPlan plan,
            FaultInjectingBlobStore faults,
            String stagingPrefix,
            Actors actors,
            FaultStats stats,
            Trail trail) {
        this.plan = plan;
        this.source = plan.source();
        this.faults = faults;
        this.stagingPrefix = stagingPrefix;
        this.actors = actors;
        this.stats = stats;
        this.trail = trail;
    }

    /** Whether some shard still has records Lambda can deliver. */
    boolean anyReadable() {
        return source.shards().stream().anyMatch(SourceTable.Shard::readable);
    }

    void deliverOneBatch(boolean withFaults) {
        List<SourceTable.Shard> readable =
                source.shards().stream().filter(SourceTable.Shard::readable).toList();
        if (readable.isEmpty()) {
            return;
        }
        FaultPlan.Delivery delivery = plan.delivery(readable.size(), withFaults);
        SourceTable.Shard shard = readable.get(delivery.shard());
        int size = Math.min(delivery.size(), shard.records.size() - shard.delivered);
        List<Change> batch = new ArrayList<>(shard.records.subList(shard.delivered, shard.delivered + size));
        if (delivery.fault() == FaultPlan.DeliveryFault.S3_DOWN) {
            faults.failFrom(FaultInjectingBlobStore.Operation.PUT, 1, k -> k.startsWith(stagingPrefix));
            stats.count("S3 PUT errors while staging");
        }
        BatchStager.Result r = actors.stage(batch);
        faults.clear();
        if (delivery.fault() == FaultPlan.DeliveryFault.S3_DOWN) {
            // Lambda: the function reported a failed record, or (bisect) failed; it retries from there.
            trail.add("stage " + describe(batch) + " with S3 down: " + (r.complete() ? "staged" : "not staged"));
            if (!r.complete() && plan.bisect() && batch.size() > 1) {
                stats.count("bisected batches");
                actors.stage(batch.subList(0, batch.size() / 2));
                trail.add("  bisected: first half staged alone");
            }
            return; // not acknowledged: redelivered from the failed record next time
        }
        if (!r.complete()) {
            throw new AssertionError(
                    "seed " + trail.seed() + ": staging failed without an injected fault: " + r.failure());
        }
        if (delivery.fault() == FaultPlan.DeliveryFault.CRASH_BEFORE_ACKNOWLEDGING) {
            stats.count("stager crashes after staging, before acknowledging");
            trail.add("stage " + describe(batch) + ", crash before acknowledging");
            return; // Lambda saw no answer: the whole batch comes again
        }
        if (delivery.fault() == FaultPlan.DeliveryFault.TWICE) {
            stats.count("batches delivered twice");
            actors.stage(batch);
        }
        shard.delivered += batch.size();
        trail.add("stage " + describe(batch) + " from shard " + shard.id);
    }

    private static String describe(List<Change> batch) {
        return batch.size() + " records " + batch.get(0).sequenceNumber() + ".."
                + batch.get(batch.size() - 1).sequenceNumber();
    }
}
