package dev.ddb2iceberg.maintainer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.amazonaws.services.lambda.runtime.serialization.events.LambdaEventSerializers;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.PackagedFunction;
import dev.ddb2iceberg.embedded.ProjectFiles;
import dev.ddb2iceberg.embedded.RestCatalogServer;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.function.MaintenanceSettings;
import dev.ddb2iceberg.maintenance.Maintenance;
import dev.ddb2iceberg.maintenance.MaintenanceResult;
import dev.ddb2iceberg.maintenance.MaintenanceTask;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.table.DerivedFiles;
import dev.ddb2iceberg.testkit.KeyedWorkload;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.StreamEvents;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Map;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Maintenance of a table in an S3 table bucket (a REST stand-in here, see
 * {@link LocalStack#startS3TablesStandIn}): S3 Tables compacts, expires snapshots and removes
 * unreferenced files itself, and its storage cannot be listed, so our maintenance must neither
 * compact (two compactors on one table) nor expire, and its orphan cleanup must look only at the
 * pipeline's own files in the staging bucket.
 */
@ExtendWith(S3ServerExtension.class)
class S3TablesMaintenanceIT {
    /** Merges that leave their small files and delete files, as before folding: work for maintenance. */
    private static final MergeOptions UNFOLDED = MergeOptions.DEFAULTS.withRewriteFilesBelow(0);

    @TempDir
    Path dir;

    private Table mergeSmallBatches(EmbeddedS3Server server, Map<String, String> env) {
        MaintenanceSettings settings = MaintenanceSettings.from(new Environment(env));
        StagingStore store = new StagingStore(server.newClient(), settings.staging());
        KeyedWorkload w = new KeyedWorkload(3, 100);
        for (int i = 0; i < 6; i++) {
            new BatchStager(store).stage(StreamEvents.batch(w.next(50)).getRecords());
            new Merger(settings.catalog().load(), settings.table(), store, UNFOLDED).run();
        }
        return settings.catalog().load().loadTable(TableIdentifier.of("ddb2iceberg", "orders"));
    }

    @Test
    void theLambdaJarLeavesCompactionAndSnapshotExpiryToS3Tables(EmbeddedS3Server server) throws Exception {
        LocalStack stack = new LocalStack(server, S3ServerExtension.newBucket(server), dir);
        try (RestCatalogServer s3Tables = stack.startS3TablesStandIn()) {
            Map<String, String> env = stack.s3TablesEnvironment("orders", s3Tables);
            env.put(
                    "COMPACTION_TARGET_FILE_SIZE_BYTES",
                    Long.toString(1L << 20)); // six small merges would be compacted
            env.put("SNAPSHOT_MAX_AGE_HOURS", "1");
            env.put("SNAPSHOT_MIN_KEEP", "1");
            Table table = mergeSmallBatches(server, env);
            long dataFiles = table.currentSnapshot().summary().containsKey("total-data-files")
                    ? Long.parseLong(table.currentSnapshot().summary().get("total-data-files"))
                    : -1;
            PackagedFunction.Result r = PackagedFunction.invoke(
                    Path.of("target/maintenance-lambda.jar"),
                    MaintenanceHandler.class.getName(),
                    env,
                    ProjectFiles.event("maintenance-schedule.json"),
                    LambdaEventSerializers.class);
            assertEquals(0, r.exit(), r.log());
            JsonNode result = new ObjectMapper().readTree(r.response());
            assertEquals(
                    0, result.get("compaction").get("groups").asInt(), "S3 Tables compacts, not us: " + r.response());
            assertEquals(0, result.get("snapshotsExpired").asInt(), "S3 Tables expires snapshots: " + r.response());
            assertTrue(r.log().contains("skipping compact and expire"), "the log says why: " + r.log());
            table.refresh();
            assertEquals(
                    Long.toString(dataFiles),
                    table.currentSnapshot().summary().get("total-data-files"),
                    "no data file was rewritten");
        }
    }

    @Test
    void orphanCleanupLooksOnlyAtThePipelinesOwnFiles(EmbeddedS3Server server) throws Exception {
        LocalStack stack = new LocalStack(server, S3ServerExtension.newBucket(server), dir);
        try (RestCatalogServer s3Tables = stack.startS3TablesStandIn()) {
            Map<String, String> env = stack.s3TablesEnvironment("orders", s3Tables);
            Table table = mergeSmallBatches(server, env);
            // A stray file in each place: the table's storage (S3 Tables' to clean) and our own folder.
            String inTable = table.location() + "/data/stray.parquet";
            String ours = DerivedFiles.location(table) + "key-index/stray-delta.bin";
            for (String f : new String[] {inTable, ours}) {
                try (var out = table.io().newOutputFile(f).create()) {
                    out.write(1);
                }
            }
            MaintenanceSettings settings = MaintenanceSettings.from(new Environment(env));
            Clock later = Clock.offset(Clock.systemUTC(), Duration.ofDays(30)); // every file is old enough
            MaintenanceResult result = new Maintenance(table, settings.options(), settings.stagingUri(), later)
                    .managedStorage(true)
                    .run(EnumSet.of(MaintenanceTask.ORPHANS), true);
            assertTrue(result.orphans().contains(ours), "our own unreferenced file is found: " + result.orphans());
            assertFalse(
                    result.orphans().contains(inTable),
                    "the table bucket's storage is never listed: " + result.orphans());
            assertTrue(
                    result.orphans().stream().allMatch(f -> f.startsWith(DerivedFiles.location(table))),
                    "only files under " + DerivedFiles.location(table) + ": " + result.orphans());
        }
    }
}
