package dev.ddb2iceberg.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.RestCatalogServer;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.function.MergerSettings;
import dev.ddb2iceberg.merge.MergeResult;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.testkit.CommitHookCatalog;
import dev.ddb2iceberg.testkit.ExpectedTable;
import dev.ddb2iceberg.testkit.KeyedWorkload;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.StreamEvents;
import dev.ddb2iceberg.testkit.TableItems;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The default catalog setting, {@code CATALOG_TYPE=glue}: Glue's Iceberg REST endpoint with
 * SigV4-signed requests. Glue itself cannot run here, so a REST catalog server stands in for it
 * ({@link RestCatalogServer}, speaking the same protocol over HTTP, with the same catalog prefix).
 */
@ExtendWith(S3ServerExtension.class)
class GlueCatalogTest {
    @TempDir
    Path dir;

    private RestCatalogServer glue;
    private LocalStack stack;
    private EmbeddedS3Server server;
    private final ExpectedTable model = new ExpectedTable();

    @BeforeEach
    void setUp(EmbeddedS3Server server) {
        this.server = server;
        stack = new LocalStack(server, S3ServerExtension.newBucket(server), dir);
        glue = stack.startGlueStandIn();
    }

    @AfterEach
    void tearDown() {
        glue.close();
    }

    private Map<String, String> env() {
        Map<String, String> env = stack.glueEnvironment("orders", glue);
        env.put("TABLE_LOCATION", "s3://" + stack.bucket() + "/warehouse/sales/orders");
        env.put("TABLE_NAMESPACE", "sales");
        return env;
    }

    private void stage(MergerSettings settings, List<Change> changes) {
        BatchStager.Result r = new BatchStager(new StagingStore(server.newClient(), settings.staging()))
                .stage(StreamEvents.batch(changes).getRecords());
        assertTrue(r.complete(), r.failure());
        model.apply(changes);
    }

    @Test
    void mergesCreateAndUpdateTheTableThroughSignedRestRequests() {
        MergerSettings settings = MergerSettings.from(new Environment(env()));
        Catalog catalog = settings.catalog().load();
        KeyedWorkload w = new KeyedWorkload(21, 80);
        stage(settings, w.next(200));
        new Merger(
                        catalog,
                        settings.table(),
                        new StagingStore(server.newClient(), settings.staging()),
                        settings.options())
                .run();
        stage(settings, w.next(200)); // updates and deletes of the rows just written
        MergeResult second = new Merger(
                        catalog,
                        settings.table(),
                        new StagingStore(server.newClient(), settings.staging()),
                        settings.options())
                .run();
        assertEquals(1, second.commitAttempts());

        Table table = catalog.loadTable(TableIdentifier.of("sales", "orders"));
        assertEquals("s3://" + stack.bucket() + "/warehouse/sales/orders", table.location(), "TABLE_LOCATION is used");
        var actual = TableItems.read(table);
        assertTrue(model.items().equals(actual), () -> ExpectedTable.diff(model.items(), actual));

        assertFalse(glue.authorizations().isEmpty());
        assertEquals(
                List.of(),
                glue.requestsNotSignedFor("glue", EmbeddedS3Server.REGION, EmbeddedS3Server.ACCESS_KEY),
                "requests not SigV4-signed for glue in the stack's region");
    }

    @Test
    void aMergeThatLosesACommitRaceOnTheRestCatalogReplansAndAppliesEachChangeOnce() {
        MergerSettings settings = MergerSettings.from(new Environment(env()));
        Catalog catalog = settings.catalog().load();
        StagingStore store = new StagingStore(server.newClient(), settings.staging());
        KeyedWorkload w = new KeyedWorkload(22, 60);
        stage(settings, w.next(100));
        new Merger(catalog, settings.table(), store, settings.options()).run();
        stage(settings, w.next(100));
        MergeResult[] other = new MergeResult[1];
        Catalog hooked = CommitHookCatalog.beforeEachSnapshot(catalog, TableIdentifier.of("sales", "orders"), t -> {
            if (other[0] == null) {
                // a second merger commits first; the server rejects the stale commit (409)
                other[0] = new Merger(settings.catalog().load(), settings.table(), store, settings.options()).run();
            }
        });
        MergeResult r = new Merger(hooked, settings.table(), store, settings.options()).run();
        assertEquals(1, other[0].objectsApplied());
        assertEquals(2, r.commitAttempts(), "the first attempt lost the race");
        assertEquals(0, r.objectsApplied());
        var actual = TableItems.read(catalog.loadTable(TableIdentifier.of("sales", "orders")));
        assertTrue(model.items().equals(actual), () -> ExpectedTable.diff(model.items(), actual));
    }

    @Test
    void theGlueCatalogNeedsTheAccountId() {
        Map<String, String> env = env();
        env.remove("GLUE_CATALOG_ID");
        ConfigurationException e =
                assertThrows(ConfigurationException.class, () -> MergerSettings.from(new Environment(env)));
        assertTrue(e.getMessage().contains("GLUE_CATALOG_ID"), e.getMessage());
    }

    @Test
    void withoutAnEndpointOverrideTheGlueCatalogUsesTheRegionalGlueEndpoint() {
        Map<String, String> env = env();
        env.remove("CATALOG_URI");
        env.put("AWS_REGION", "eu-west-1");
        Map<String, String> props =
                MergerSettings.from(new Environment(env)).catalog().properties();
        assertEquals("https://glue.eu-west-1.amazonaws.com/iceberg", props.get("uri"));
        assertEquals(LocalStack.GLUE_CATALOG_ID, props.get("warehouse"));
        assertEquals("sigv4", props.get("rest.auth.type"));
        assertEquals("glue", props.get("rest.signing-name"));
        assertEquals("eu-west-1", props.get("rest.signing-region"));
    }
}
