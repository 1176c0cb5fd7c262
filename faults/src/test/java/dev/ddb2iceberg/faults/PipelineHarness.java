package dev.ddb2iceberg.faults;

import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.RemovalPolicy;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.function.MaintenanceSettings;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.testkit.LocalStack;
import java.nio.file.Path;
import java.util.Map;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * One seed's run of the whole pipeline: the source table changes, Lambda delivers its stream to the
 * stager (batches per shard, retries from the failed record, whole batches redelivered after a
 * crash, bisected batches, duplicates), and the merger and maintenance run in a random order, with
 * S3 errors, crashes and commit races injected. After every merger and maintenance run the table
 * must equal the model of exactly the staged objects its checkpoints say were applied; at the end,
 * after a fault-free drain, it must equal the source table: nothing lost, nothing duplicated, no
 * deleted item back.
 *
 * <p>This class wires the roles and runs the steps: {@link FaultPlan} (the seed: what happens
 * when), {@link StreamDelivery} (the stream, as Lambda delivers it), {@link Actors} (the stager,
 * merger, fanned-out merge, maintenance and export loader, and their testing hooks), {@link Invariants} (what is
 * checked after each step and at the end), {@link SourceExport} (the export an initial load reads)
 * and {@link Trail} (the steps a failure quotes).
 */
final class PipelineHarness {
    /** Thrown by injected crashes: the process dies here, as a Lambda whose sandbox is killed. */
    static final class InjectedCrash extends RuntimeException {
        InjectedCrash(String where) {
            super("injected crash " + where);
        }
    }

    private final FaultPlan plan;
    private final SourceTable source;
    private final EmbeddedS3Server server;
    private final MaintenanceSettings settings;
    private final StagingStore store;
    private final FaultStats stats;
    private final Trail trail;
    private final SourceExport export;
    private final Invariants invariants;
    private final Actors actors;
    private final StreamDelivery delivery;

    PipelineHarness(long seed, EmbeddedS3Server server, String bucket, Path dir, FaultStats stats) {
        this.plan = new FaultPlan(seed);
        this.source = plan.source();
        this.server = server;
        this.stats = stats;
        this.trail = new Trail(seed);
        Map<String, String> env = new LocalStack(server, bucket, dir).environment("orders");
        plan.configure(env);
        // Iceberg's S3FileIO waits 2 to 20 s between retries by default; injected errors need no wait.
        env.put(
                "CATALOG_PROPERTIES",
                env.get("CATALOG_PROPERTIES")
                        + ",s3.retry.num-retries=1,s3.retry.min-wait-ms=10,s3.retry.max-wait-ms=50");
        this.settings = MaintenanceSettings.from(new Environment(env));
        Catalog catalog = settings.catalog().load();
        this.store = new StagingStore(server.newClient(), settings.staging());
        TableIdentifier id = TableIdentifier.of(
                settings.table().namespace(), settings.table().name());
        TableIdentifier historyId = TableIdentifier.of(settings.table().namespace(), "orders_history");
        RemovalPolicy policy = settings.table().removals();
        if (plan.withHistory()) {
            stats.count("seeds with a change history");
        }
        if (!policy.equals(RemovalPolicy.DEFAULT)) {
            stats.count("seeds under " + policy);
        }
        this.export = new SourceExport(plan.withExport());
        this.invariants = new Invariants(catalog, id, historyId, plan.withHistory(), policy, export, stats, trail);
        this.actors =
                new Actors(plan, server, settings, catalog, store, id, historyId, export, invariants, stats, trail);
        this.delivery =
                new StreamDelivery(plan, server.faults(), settings.staging().stagingPrefix(), actors, stats, trail);
        trail.add("seed " + seed + ": keys " + plan.keys() + ", "
                + source.shards().size() + " shards, " + env.get("PARTITION_SPEC")
                + ", v" + env.get("TABLE_FORMAT_VERSION") + (plan.withExport() ? ", initial load from an export" : "")
                + ", " + policy
                + (plan.withHistory() ? ", change history" : ""));
    }

    /** Random steps, then a fault-free drain and the final comparison with the source table. */
    void run(int steps) {
        if (plan.withExport()) {
            export.write(plan, source, server, settings.staging().bucket(), trail, stats);
        }
        for (int step = 0; step < steps; step++) {
            if (plan.loadExportChunkNow(actors.exportLoaded())) {
                actors.loadExportChunk(true);
            }
            if (plan.fanOutNow()) {
                actors.fanOutMerge();
            }
            switch (plan.nextStep()) {
                case CHANGE -> {
                    source.change(plan.changes(60));
                    if (plan.split()) {
                        source.split();
                        stats.count("shard splits");
                    }
                }
                case DELIVER -> delivery.deliverOneBatch(true);
                case MERGE -> actors.merge(true);
                case CONTINUOUS_RUN -> actors.continuousRun(this::streamFlowsWhileTheMergerWaits);
                case MAINTAIN -> actors.maintain(true);
            }
        }
        drain();
    }

    /** While a continuous run waits: the stream delivers a few batches, the source changes, maintenance sometimes runs. */
    private void streamFlowsWhileTheMergerWaits() {
        for (int i = plan.deliveriesWhileWaiting(); i > 0; i--) {
            if (plan.changeWhileWaiting()) {
                source.change(plan.changes(30));
            }
            delivery.deliverOneBatch(true);
        }
        if (plan.maintainWhileWaiting()) {
            actors.maintain(true);
        }
    }

    /** No more faults: deliver everything, merge until nothing waits, maintain, compare with the source. */
    private void drain() {
        for (int i = 0; plan.withExport() && !actors.exportLoaded() && i < 1000; i++) {
            actors.loadExportChunk(false);
        }
        if (plan.withExport() && !actors.exportLoaded()) {
            throw trail.failure("the export is still not loaded after the drain");
        }
        source.closeAll();
        while (delivery.anyReadable()) {
            delivery.deliverOneBatch(false);
        }
        for (int i = 0; i < 50; i++) {
            actors.merge(false);
            if (store.list().isEmpty()) {
                break;
            }
        }
        if (!store.list().isEmpty()) {
            throw trail.failure("staged objects still waiting after the drain: "
                    + store.list().size());
        }
        actors.maintain(false);
        invariants.checkAtTheEnd(source);
        stats.count("seeds");
    }
}
