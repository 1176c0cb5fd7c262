package dev.ddb2iceberg.maintainer;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.testkit.KeyedWorkload;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.StreamEvents;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The deployable jar itself, in a fresh JVM with nothing else on its classpath, on the template's
 * default catalog (Glue's Iceberg REST endpoint; a stand-in here, since Glue cannot run locally).
 */
@ExtendWith(S3ServerExtension.class)
class MaintenancePackageIT {
    /** Merges that leave their small files and delete files, as before folding: work for maintenance. */
    private static final MergeOptions UNFOLDED = MergeOptions.DEFAULTS.withRewriteFilesBelow(0);

    @TempDir
    Path dir;

    @Test
    void theLambdaJarCompactsATableOfSmallMerges(EmbeddedS3Server server) throws Exception {
        LocalStack stack = new LocalStack(server, S3ServerExtension.newBucket(server), dir);
        try (RestCatalogServer glue = stack.startGlueStandIn()) {
            compactsATableOfSmallMerges(server, stack.glueEnvironment("orders", glue));
        }
    }

    private void compactsATableOfSmallMerges(EmbeddedS3Server server, Map<String, String> env) throws Exception {
        env.put("COMPACTION_TARGET_FILE_SIZE_BYTES", Long.toString(1L << 20));
        MaintenanceSettings settings = MaintenanceSettings.from(new Environment(env));
        StagingStore store = new StagingStore(server.newClient(), settings.staging());
        KeyedWorkload w = new KeyedWorkload(2, 100);
        for (int i = 0; i < 6; i++) {
            new BatchStager(store).stage(StreamEvents.batch(w.next(50)).getRecords());
            new Merger(settings.catalog().load(), settings.table(), store, UNFOLDED).run();
        }
        PackagedFunction.Result r = PackagedFunction.invoke(
                Path.of("target/maintenance-lambda.jar"),
                MaintenanceHandler.class.getName(),
                env,
                ProjectFiles.event("maintenance-schedule.json"),
                LambdaEventSerializers.class);
        assertEquals(0, r.exit(), r.log());
        JsonNode result = new ObjectMapper().readTree(r.response());
        assertTrue(result.get("compaction").get("groups").asInt() > 0, r.response());
        assertEquals(0, result.get("conflicts").size(), r.response());
    }
}
