package dev.ddb2iceberg.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.function.MergerSettings;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.testkit.KeyedWorkload;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.StreamEvents;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * A JDBC catalog files its tables under its own name, so another engine reading the same database
 * (Spark's {@code spark.sql.catalog.<name>}) finds them only under that name: CATALOG_NAME sets it.
 */
@ExtendWith(S3ServerExtension.class)
class CatalogNameTest {
    @TempDir
    Path dir;

    @Test
    void aTableMergedUnderCatalogNameIsFoundByACatalogOfThatNameOnly(EmbeddedS3Server server) {
        Map<String, String> env =
                new HashMap<>(new LocalStack(server, S3ServerExtension.newBucket(server), dir).environment("orders"));
        env.put("CATALOG_NAME", "lake");
        MergerSettings settings = MergerSettings.from(new Environment(env));
        assertEquals("lake", settings.catalog().name());
        StagingStore store = new StagingStore(server.newClient(), settings.staging());
        assertTrue(new BatchStager(store)
                .stage(StreamEvents.batch(new KeyedWorkload(1, 20).next(20)).getRecords())
                .complete());
        new Merger(settings.catalog().load(), settings.table(), store, settings.options()).run();

        TableIdentifier orders = TableIdentifier.of("ddb2iceberg", "orders");
        Map<String, String> props = settings.catalog().properties();
        Catalog sameName = CatalogUtil.buildIcebergCatalog("lake", props, null);
        Catalog otherName = CatalogUtil.buildIcebergCatalog("ddb2iceberg", props, null);
        assertTrue(sameName.tableExists(orders), "a catalog named 'lake' on the same database sees the table");
        assertFalse(otherName.tableExists(orders), "a catalog of another name on the same database does not");
    }

    @Test
    void theCatalogIsNamedDdb2icebergUnlessSet(EmbeddedS3Server server) {
        Map<String, String> env =
                new LocalStack(server, S3ServerExtension.newBucket(server), dir).environment("orders");
        assertEquals(
                "ddb2iceberg",
                MergerSettings.from(new Environment(env)).catalog().name());
    }
}
