package dev.ddb2iceberg.merger;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.amazonaws.services.lambda.runtime.serialization.events.LambdaEventSerializers;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.PackagedFunction;
import dev.ddb2iceberg.embedded.ProjectFiles;
import dev.ddb2iceberg.embedded.RestCatalogServer;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.function.MergerSettings;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.testkit.KeyedWorkload;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.StreamEvents;
import java.nio.file.Path;
import java.util.List;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.sqlite.JDBC;

/**
 * The deployable jar itself, in a fresh JVM with its settings in real environment variables; the
 * SQLite driver joins the classpath as the local catalog's driver (in AWS the catalog is Glue).
 */
@ExtendWith(S3ServerExtension.class)
class MergerPackageIT {
    @TempDir
    Path dir;

    @Test
    void theLambdaJarMergesStagedChangesIntoANewTable(EmbeddedS3Server server) throws Exception {
        var env = new LocalStack(server, S3ServerExtension.newBucket(server), dir).environment("orders");
        MergerSettings settings = MergerSettings.from(new Environment(env));
        new BatchStager(new StagingStore(server.newClient(), settings.staging()))
                .stage(StreamEvents.batch(new KeyedWorkload(1, 50).next(100)).getRecords());
        PackagedFunction.Result r = PackagedFunction.invoke(
                Path.of("target/merger-lambda.jar"),
                MergerHandler.class.getName(),
                env,
                ProjectFiles.event("merger-schedule.json"),
                LambdaEventSerializers.class,
                JDBC.class);
        assertEquals(0, r.exit(), r.log());
        JsonNode result = new ObjectMapper().readTree(r.response());
        assertEquals(100, result.get("changesRead").asInt(), r.response());
        assertEquals(1, result.get("objectsApplied").asInt());
    }

    /**
     * The template's default catalog (Glue's REST endpoint, a stand-in here) with nothing on the
     * classpath but the jar; the table's files are written with each codec other engines use, so the
     * minimised jar must still read them when it looks for the rows a change replaces.
     */
    @Test
    void theLambdaJarMergesThroughTheGlueCatalogAndReadsEachParquetCodec(EmbeddedS3Server server) throws Exception {
        LocalStack stack = new LocalStack(server, S3ServerExtension.newBucket(server), dir);
        try (RestCatalogServer glue = stack.startGlueStandIn()) {
            var env = stack.glueEnvironment("orders", glue);
            MergerSettings settings = MergerSettings.from(new Environment(env));
            BatchStager stager = new BatchStager(new StagingStore(server.newClient(), settings.staging()));
            KeyedWorkload w = new KeyedWorkload(2, 40);
            for (String codec : List.of("gzip", "snappy", "uncompressed", "zstd")) {
                stager.stage(StreamEvents.batch(w.next(100)).getRecords());
                PackagedFunction.Result r = PackagedFunction.invoke(
                        Path.of("target/merger-lambda.jar"),
                        MergerHandler.class.getName(),
                        env,
                        ProjectFiles.event("merger-schedule.json"),
                        LambdaEventSerializers.class);
                assertEquals(0, r.exit(), "after files written with the previous codec: " + r.log());
                assertEquals(
                        1,
                        new ObjectMapper()
                                .readTree(r.response())
                                .get("objectsApplied")
                                .asInt(),
                        r.response());
                Table table = settings.catalog().load().loadTable(TableIdentifier.of("ddb2iceberg", "orders"));
                // the next run reads the files this run wrote, and writes with the next codec
                table.updateProperties()
                        .set(TableProperties.PARQUET_COMPRESSION, codec)
                        .commit();
            }
        }
    }
}
