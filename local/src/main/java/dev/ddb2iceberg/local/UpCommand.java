package dev.ddb2iceberg.local;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ddb2iceberg.config.CatalogSettings;
import dev.ddb2iceberg.config.Settings;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.testkit.LocalStack;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.stream.Collectors;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import software.amazon.awssdk.services.s3.S3Client;

/** {@code up}: the local S3-compatible server and catalog, running until Ctrl-C. */
@Command(
        name = "up",
        mixinStandardHelpOptions = true,
        description = "Starts the embedded S3-compatible server and the SQLite catalog and keeps them running, so"
                + " functions can be invoked against them and Spark or other tools can read the table.")
final class UpCommand implements Callable<Integer> {
    static final String DEFAULT_WORK_DIR = ".local";
    static final int DEFAULT_PORT = 9321;
    static final String DEFAULT_BUCKET = "local";
    static final String DEFAULT_TABLE = "orders";

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Option(
            names = "--work-dir",
            defaultValue = DEFAULT_WORK_DIR,
            description = "where S3 objects and the catalog live (default: ${DEFAULT-VALUE})")
    Path workDir;

    @Option(
            names = "--port",
            defaultValue = "" + DEFAULT_PORT,
            description = "S3 endpoint port on 127.0.0.1 (default: ${DEFAULT-VALUE})")
    int port;

    @Option(names = "--bucket", defaultValue = DEFAULT_BUCKET, description = "the bucket (default: ${DEFAULT-VALUE})")
    String bucket;

    @Option(
            names = "--table",
            defaultValue = DEFAULT_TABLE,
            description = "the Iceberg table name (default: ${DEFAULT-VALUE})")
    String table;

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        Files.createDirectories(workDir);
        EmbeddedS3Server server;
        try {
            server = EmbeddedS3Server.onDisk(workDir.resolve("s3"), port);
        } catch (RuntimeException e) {
            throw new UserError("cannot start the S3 server on 127.0.0.1:" + port + " (" + LocalInvoker.rootMessage(e)
                    + "); is another one running? Use --port to pick another.");
        }
        server.ensureBucket(bucket);
        String sampleExport;
        try (S3Client s3 = server.newClient()) {
            sampleExport = SampleExport.write(s3, bucket, Instant.now());
        }
        LocalStack stack = new LocalStack(server, bucket, workDir);
        Map<String, String> env = stack.environment(table);
        Path envFile = workDir.resolve("env-vars.json");
        new ObjectMapper().writerWithDefaultPrettyPrinter().writeValue(envFile.toFile(), Map.of("Parameters", env));
        out.println("S3 endpoint     " + server.endpoint() + "  (path-style, region " + EmbeddedS3Server.REGION + ")");
        out.println("credentials     " + EmbeddedS3Server.ACCESS_KEY + " / " + EmbeddedS3Server.SECRET_KEY);
        out.println("bucket          " + bucket);
        out.println("catalog         " + env.get(Settings.CATALOG_URI.name()) + "  (Iceberg JdbcCatalog named "
                + CatalogSettings.DEFAULT_NAME + ", jdbc.schema-version=V1)");
        out.println("warehouse       " + env.get(Settings.CATALOG_WAREHOUSE.name()));
        out.println("table           " + env.get(Settings.TABLE_NAMESPACE.name()) + "." + table);
        out.println("env-vars file   " + envFile + "   e.g. ./ddb2iceberg invoke Stager -e events/stager-batch.json -n "
                + envFile);
        out.println("sample export   " + sampleExport + "  (" + SampleExport.ITEMS
                + " items, dated now: what events/merger-load-export.json loads)");
        out.println();
        // The spark-sql command of docs/getting-started/local.md shows the same settings, with the packages to add.
        out.println("Spark settings (docs/getting-started/local.md, \"Query the table with Spark\"); the table is "
                + CatalogSettings.DEFAULT_NAME + "." + env.get(Settings.TABLE_NAMESPACE.name()) + "." + table + ":");
        out.println(stack.sparkSettings().entrySet().stream()
                .map(e -> "  --conf " + e.getKey() + "=" + e.getValue())
                .collect(Collectors.joining(" \\\n")));
        out.println();
        out.println("Running; press Ctrl-C to stop.");
        out.flush();
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            server.close();
            stopped.countDown();
        }));
        stopped.await();
        return 0;
    }
}
