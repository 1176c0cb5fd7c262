package dev.ddb2iceberg.benchmarks;

import dev.ddb2iceberg.config.CatalogSettings;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.S3Settings;
import dev.ddb2iceberg.config.StagingSettings;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.table.TableSettings;
import dev.ddb2iceberg.testkit.LocalStack;
import java.io.Closeable;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.iceberg.catalog.Catalog;

/**
 * The local stack a benchmark that needs only a catalog and a table's settings runs on: an
 * embedded S3 server on disk and a SQLite catalog in a temporary folder, removed afterwards.
 */
final class LocalCatalog {
    private LocalCatalog() {}

    /** What a benchmark runs with the catalog. */
    interface Body {
        void run(Catalog catalog, TableSettings settings) throws Exception;
    }

    /** Runs {@code body} against a new local stack whose table is named {@code table}. */
    static void run(String table, Body body) throws Exception {
        Path dir = Files.createTempDirectory(table + "-bench");
        try (EmbeddedS3Server server = EmbeddedS3Server.onDisk(dir.resolve("s3"))) {
            server.createBucket("bench");
            LocalStack stack = new LocalStack(server, "bench", dir);
            Environment env = new Environment(stack.environment(table));
            StagingSettings staging = new StagingSettings("bench", "staging/", "quarantine/");
            Catalog catalog =
                    CatalogSettings.from(env, staging, S3Settings.from(env)).load();
            try {
                body.run(catalog, TableSettings.from(env));
            } finally {
                ((Closeable) catalog).close();
            }
        } finally {
            MergeThroughput.deleteRecursively(dir);
        }
    }
}
