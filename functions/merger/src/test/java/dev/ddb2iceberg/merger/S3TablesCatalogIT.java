package dev.ddb2iceberg.merger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.amazonaws.services.lambda.runtime.serialization.events.LambdaEventSerializers;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.config.ConfigurationException;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.PackagedFunction;
import dev.ddb2iceberg.embedded.ProjectFiles;
import dev.ddb2iceberg.embedded.RestCatalogServer;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.function.MergerSettings;
import dev.ddb2iceberg.index.KeyIndex;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.testkit.ExpectedTable;
import dev.ddb2iceberg.testkit.KeyedWorkload;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.StreamEvents;
import dev.ddb2iceberg.testkit.TableItems;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code CATALOG_TYPE=s3tables}: the packaged merger writes into an S3 table bucket through S3
 * Tables' Iceberg REST endpoint. S3 Tables cannot run here, so a REST catalog server stands in for
 * it ({@link LocalStack#startS3TablesStandIn}): it answers only the bucket's ARN as warehouse and
 * takes requests only under the URL-encoded ARN, as S3 Tables does, and records each request's
 * signature so the test can check it was signed for "s3tables" in the bucket's region.
 */
@ExtendWith(S3ServerExtension.class)
class S3TablesCatalogIT {
    @TempDir
    Path dir;

    @Test
    void theLambdaJarMergesIntoATableBucketWithSignedRequestsAndKeepsItsOwnFilesOutOfIt(EmbeddedS3Server server)
            throws Exception {
        LocalStack stack = new LocalStack(server, S3ServerExtension.newBucket(server), dir);
        try (RestCatalogServer s3Tables = stack.startS3TablesStandIn()) {
            Map<String, String> env = stack.s3TablesEnvironment("orders", s3Tables);
            MergerSettings settings = MergerSettings.from(new Environment(env));
            StagingStore store = new StagingStore(server.newClient(), settings.staging());
            ExpectedTable model = new ExpectedTable();
            KeyedWorkload w = new KeyedWorkload(31, 60);
            for (int run = 0; run < 2; run++) { // the second run updates and deletes rows of the first
                List<Change> changes = w.next(120);
                new BatchStager(store).stage(StreamEvents.batch(changes).getRecords());
                model.apply(changes);
                PackagedFunction.Result r = PackagedFunction.invoke(
                        Path.of("target/merger-lambda.jar"),
                        MergerHandler.class.getName(),
                        env,
                        ProjectFiles.event("merger-schedule.json"),
                        LambdaEventSerializers.class);
                assertEquals(0, r.exit(), r.log());
                assertEquals(
                        1,
                        new ObjectMapper()
                                .readTree(r.response())
                                .get("objectsApplied")
                                .asInt(),
                        r.response());
            }

            // The namespace was created (the stand-in, like S3 Tables, starts with none) and the table holds the items.
            Table table = settings.catalog().load().loadTable(TableIdentifier.of("ddb2iceberg", "orders"));
            var actual = TableItems.read(table);
            assertTrue(model.items().equals(actual), () -> ExpectedTable.diff(model.items(), actual));

            // Every request was SigV4-signed for s3tables in the bucket's region.
            assertFalse(s3Tables.authorizations().isEmpty());
            assertEquals(
                    List.of(),
                    s3Tables.requestsNotSignedFor("s3tables", EmbeddedS3Server.REGION, EmbeddedS3Server.ACCESS_KEY),
                    "requests not SigV4-signed for s3tables in the bucket's region");

            // The removals file and the key index live in the staging bucket, not in the table bucket
            // (which would remove them as unreferenced).
            String derived = "s3://" + stack.bucket() + "/tables/ddb2iceberg/orders/";
            assertEquals(derived, table.properties().get(PipelineProperties.DERIVED_FILES_LOCATION));
            List<String> indexFiles = KeyIndex.filesOf(table, table.currentSnapshot());
            assertFalse(indexFiles.isEmpty(), "the merge keeps a key index");
            for (String f : indexFiles) {
                assertTrue(f.startsWith(derived + "key-index/"), f + " is under " + derived);
            }
            String removals = table.currentSnapshot().summary().get("ddb2iceberg.tombstones");
            assertTrue(
                    removals == null || removals.startsWith(derived),
                    "removals index " + removals + " is under " + derived);
        }
    }

    @Test
    void theS3TablesSettingsFollowTheTableBucketArn() {
        Map<String, String> env = new HashMap<>(Map.of(
                "STAGING_BUCKET",
                "staging-bucket",
                "TABLE_NAME",
                "orders",
                "CATALOG_TYPE",
                "s3tables",
                "TABLE_BUCKET_ARN",
                "arn:aws:s3tables:eu-west-1:111122223333:bucket/orders-lake",
                "AWS_REGION",
                "eu-west-1"));
        MergerSettings settings = MergerSettings.from(new Environment(env));
        Map<String, String> props = settings.catalog().properties();
        assertEquals("https://s3tables.eu-west-1.amazonaws.com/iceberg", props.get("uri"));
        assertEquals("arn:aws:s3tables:eu-west-1:111122223333:bucket/orders-lake", props.get("warehouse"));
        assertEquals("sigv4", props.get("rest.auth.type"));
        assertEquals("s3tables", props.get("rest.signing-name"));
        assertEquals("eu-west-1", props.get("rest.signing-region"));
        assertTrue(settings.catalog().isS3Tables());
        assertEquals(
                "s3://staging-bucket/tables/ddb2iceberg/orders/",
                settings.table().derivedFilesLocation());

        env.put("TABLE_BUCKET_ARN", "arn:aws:s3:::orders-lake");
        ConfigurationException e =
                assertThrows(ConfigurationException.class, () -> MergerSettings.from(new Environment(env)));
        assertTrue(
                e.getMessage().contains("TABLE_BUCKET_ARN='arn:aws:s3:::orders-lake'")
                        && e.getMessage().contains("arn:aws:s3tables:<region>"),
                e.getMessage());
    }

    @Test
    void otherCatalogsKeepThePipelinesOwnFilesBesideTheTable() {
        Map<String, String> env = Map.of(
                "STAGING_BUCKET",
                "staging-bucket",
                "TABLE_NAME",
                "orders",
                "GLUE_CATALOG_ID",
                "111122223333",
                "AWS_REGION",
                "eu-west-1");
        assertNull(MergerSettings.from(new Environment(env)).table().derivedFilesLocation());
    }
}
