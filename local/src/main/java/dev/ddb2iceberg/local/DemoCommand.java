package dev.ddb2iceberg.local;

import com.amazonaws.services.lambda.runtime.RequestHandler;
import com.amazonaws.services.lambda.runtime.events.DynamodbEvent;
import com.amazonaws.services.lambda.runtime.events.StreamsEventResponse;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ddb2iceberg.config.CatalogSettings;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.S3Settings;
import dev.ddb2iceberg.config.Settings;
import dev.ddb2iceberg.config.StagingSettings;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.LocalContext;
import dev.ddb2iceberg.maintenance.MaintenanceOptions;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbJson;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.observe.LogSettings;
import dev.ddb2iceberg.status.ScanShape;
import dev.ddb2iceberg.table.TableLayout;
import dev.ddb2iceberg.table.TableSettings;
import dev.ddb2iceberg.testkit.ExpectedTable;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.OrderWorkload;
import dev.ddb2iceberg.testkit.StreamEvents;
import dev.ddb2iceberg.testkit.TableItems;
import java.io.Closeable;
import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.slf4j.event.Level;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code demo}: the whole pipeline on a generated workload. An embedded S3 server and an SQLite
 * catalog start in a work folder; the stream is fed to the stager in Lambda-sized batches, shard by
 * shard; the merger runs once per simulated minute and maintenance once at the end; then the table
 * is read back as a query engine would and checked against the source table the workload describes.
 */
@Command(
        name = "demo",
        mixinStandardHelpOptions = true,
        description = "Runs the whole pipeline locally on a generated workload and checks the result.")
final class DemoCommand implements Callable<Integer> {
    private static final String BUCKET = "demo";
    private static final String TABLE = "demo_orders";
    /** Where the demo's closing lines suggest serving its folder with up: beside up's default 9321. */
    private static final int LOOK_PORT = 9322;

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String MARKER = ".ddb2iceberg-demo";

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Option(names = "--items", defaultValue = "2000", description = "distinct items (default: ${DEFAULT-VALUE})")
    int items;

    @Option(
            names = "--changes",
            defaultValue = "20000",
            description = "stream records in all (default: ${DEFAULT-VALUE})")
    int changes;

    @Option(
            names = "--minutes",
            defaultValue = "10",
            description = "simulated minutes, one merge each (default: ${DEFAULT-VALUE})")
    int minutes;

    @Option(
            names = "--batch-size",
            defaultValue = "100",
            description = "records per stager invocation (default: ${DEFAULT-VALUE})")
    int batchSize;

    @Option(names = "--seed", defaultValue = "1", description = "workload seed (default: ${DEFAULT-VALUE})")
    long seed;

    @Option(
            names = "--work-dir",
            defaultValue = ".local/demo",
            description = "work folder, emptied first (default: ${DEFAULT-VALUE})")
    Path workDir;

    @Option(
            names = {"-t", "--template"},
            defaultValue = "template.yaml",
            description = "the SAM template (default: ${DEFAULT-VALUE})")
    Path template;

    @Option(
            names = "--verbose",
            description = "show the functions' metric lines (CloudWatch EMF JSON) on stderr"
                    + " instead of writing them to <work-dir>/metrics.log")
    boolean verbose;

    @Override
    @SuppressWarnings("unchecked")
    public Integer call() throws Exception {
        if (items < 1 || changes < 1 || minutes < 1 || batchSize < 1) {
            throw new UserError("--items, --changes, --minutes and --batch-size must be at least 1");
        }
        PrintWriter out = spec.commandLine().getOut();
        // The functions log every batch and merge; the demo shows progress instead (unless asked otherwise).
        LogSettings.defaultPipelineLevel(Level.WARN);
        SamTemplate sam = SamTemplate.read(template);
        prepare(workDir);
        out.printf(
                "Demo: %,d changes to %,d items over %d simulated minutes (seed %d), in %s%n",
                changes, items, minutes, seed, workDir);
        long started = System.nanoTime();
        Path metricsLog = workDir.resolve("metrics.log");
        // The functions print a metric line per run on their stdout, for CloudWatch; the terminal keeps
        // to the demo's story.
        try (EmbeddedS3Server server = EmbeddedS3Server.onDisk(workDir.resolve("s3"));
                PrintStream metrics = verbose
                        ? FunctionStreams.lines(spec.commandLine().getErr())
                        : new PrintStream(Files.newOutputStream(metricsLog), true, StandardCharsets.UTF_8);
                FunctionStreams redirected = FunctionStreams.redirect(metrics, System.err)) {
            server.ensureBucket(BUCKET);
            Map<String, String> env = new LocalStack(server, BUCKET, workDir).environment(TABLE);
            out.println("S3 endpoint " + server.endpoint() + ", catalog " + env.get(Settings.CATALOG_URI.name()));
            out.println("Metric lines (CloudWatch EMF) go to "
                    + (verbose ? "stderr" : metricsLog + " (--verbose shows them on stderr)"));
            RequestHandler<DynamodbEvent, StreamsEventResponse> stager =
                    (RequestHandler<DynamodbEvent, StreamsEventResponse>) LocalInvoker.newHandler(
                            sam.function("Stager").handler(),
                            with(sam.function("Stager").environment(), env));
            Object merger = LocalInvoker.newHandler(
                    sam.function("Merger").handler(),
                    with(sam.function("Merger").environment(), env));
            LocalContext context = new LocalContext("demo", 1024, 300);

            OrderWorkload workload = new OrderWorkload(seed, items);
            ExpectedTable expected = new ExpectedTable();
            int staged = 0;
            ScanShape shape = new ScanShape(0, 0, 0, 0, 0); // the table after the latest merge
            for (int minute = 1; minute <= minutes; minute++) {
                int count = changes / minutes + (minute <= changes % minutes ? 1 : 0);
                int batches = 0;
                for (OrderWorkload.ShardChanges shard : workload.minute(count, changes)) {
                    List<Change> all = shard.changes();
                    for (int i = 0; i < all.size(); i += batchSize) {
                        List<Change> batch = all.subList(i, Math.min(all.size(), i + batchSize));
                        StreamsEventResponse response = stager.handleRequest(StreamEvents.batch(batch), context);
                        if (!response.getBatchItemFailures().isEmpty()) {
                            throw new IllegalStateException(
                                    "the stager reported failures: " + response.getBatchItemFailures());
                        }
                        expected.apply(batch);
                        batches++;
                    }
                }
                staged += count;
                JsonNode merged = JSON.readTree(LocalInvoker.invoke(merger, "{}".getBytes(), context));
                shape = shape(env);
                out.printf(
                        "minute %2d/%d  staged %,6d records in %3d batches  merged %,6d changes: %,d items written"
                                + " (%,d replaced a row), %,d items removed, in %,d ms; a scan opens %d files%n",
                        minute,
                        minutes,
                        count,
                        batches,
                        merged.path("changesRead").asLong(),
                        merged.path("itemsWritten").asLong(),
                        merged.path("rowsReplaced").asLong(),
                        merged.path("itemsRemoved").asLong(),
                        merged.path("millis").asLong(),
                        shape.filesOpened());
                out.flush();
            }
            out.println("before maintenance: " + shape.text());
            Object maintenance = LocalInvoker.newHandler(
                    sam.function("Maintenance").handler(),
                    with(sam.function("Maintenance").environment(), env));
            JsonNode maintained = JSON.readTree(LocalInvoker.invoke(maintenance, "{}".getBytes(), context));
            JsonNode compaction = maintained.path("compaction");
            out.printf(
                    "maintenance  compacted %d files into %d (data files %d -> %d, delete files %d -> %d),"
                            + " %d manifests rewritten, %d snapshots expired, %d orphans, in %,d ms%n",
                    compaction.path("filesRewritten").asInt(),
                    compaction.path("filesWritten").asInt(),
                    compaction.path("dataFilesBefore").asInt(),
                    compaction.path("dataFilesAfter").asInt(),
                    compaction.path("deleteFilesBefore").asInt(),
                    compaction.path("deleteFilesAfter").asInt(),
                    maintained.path("manifestsRewritten").asInt(),
                    maintained.path("snapshotsExpired").asInt(),
                    maintained.path("orphans").size(),
                    maintained.path("millis").asLong());
            for (Object handler : List.of(stager, merger, maintenance)) {
                LocalInvoker.close(handler);
            }
            return report(out, env, expected, staged, started);
        }
    }

    /** What a full scan of the demo's table opens now (the table's shape), and about what it would once compacted. */
    private static ScanShape shape(Map<String, String> envMap) throws IOException {
        Environment env = new Environment(envMap);
        StagingSettings staging = StagingSettings.from(env);
        TableSettings tableSettings = TableSettings.from(env);
        Catalog catalog =
                CatalogSettings.from(env, staging, S3Settings.from(env)).load();
        try {
            return ScanShape.of(
                    catalog.loadTable(TableIdentifier.of(tableSettings.namespace(), tableSettings.name())),
                    MaintenanceOptions.from(env).targetFileSizeBytes());
        } finally {
            if (catalog instanceof Closeable c) {
                c.close();
            }
        }
    }

    private int report(PrintWriter out, Map<String, String> envMap, ExpectedTable expected, int staged, long started)
            throws IOException {
        Environment env = new Environment(envMap);
        StagingSettings staging = StagingSettings.from(env);
        TableSettings tableSettings = TableSettings.from(env);
        Catalog catalog =
                CatalogSettings.from(env, staging, S3Settings.from(env)).load();
        try {
            Table table = catalog.loadTable(TableIdentifier.of(tableSettings.namespace(), tableSettings.name()));
            var actual = TableItems.read(table);
            var wanted = expected.items();
            Snapshot current = table.currentSnapshot();
            Map<String, String> summary = current.summary();
            out.println();
            out.printf("What a query of %s.%s sees:%n", tableSettings.namespace(), tableSettings.name());
            out.printf(
                    "  %,d rows; columns %s%n",
                    actual.size(),
                    table.schema().columns().stream()
                            .map(f -> f.name() + " " + f.type())
                            .toList());
            actual.values().stream().limit(3).forEach(item -> out.println("  " + abbreviate(DdbJson.writeItem(item))));
            out.printf(
                    "  %s data files, %s delete files (%s position deletes), %s bytes; %d snapshots%n",
                    summary.get("total-data-files"),
                    summary.get("total-delete-files"),
                    summary.get("total-position-deletes"),
                    summary.get("total-files-size"),
                    count(table.snapshots()));
            out.println("  "
                    + ScanShape.of(table, MaintenanceOptions.from(env).targetFileSizeBytes())
                            .text());
            out.printf("Source table after %,d stream records: %,d items%n", staged, wanted.size());
            out.printf("Done in %.1f s%n", (System.nanoTime() - started) / 1e9);
            if (!wanted.equals(actual)) {
                out.println("MISMATCH: the Iceberg table differs from the source table: "
                        + ExpectedTable.diff(wanted, actual));
                return 1;
            }
            out.println("OK: the Iceberg table equals the source table, item for item, value for value.");
            out.println();
            // The demo's server stops with it; up serves the same folder again (on a port of its own,
            // so that it runs beside the default stack) and writes the env-vars file for it.
            out.println("To look at the table: ./ddb2iceberg up --work-dir " + workDir + " --port " + LOOK_PORT
                    + " --bucket " + BUCKET + " --table " + TABLE
                    + "   (it runs until Ctrl-C), then in another terminal:");
            out.println("  ./ddb2iceberg status -n " + workDir.resolve("env-vars.json"));
            Map<String, DdbValue> key = actual.keySet().iterator().next();
            out.println("  ./ddb2iceberg get "
                    + TableLayout.of(table).keyAttributes().stream()
                            .map(k -> key.get(k) instanceof DdbValue.N n ? n.text() : ((DdbValue.S) key.get(k)).value())
                            .collect(Collectors.joining(" "))
                    + " -n " + workDir.resolve("env-vars.json"));
            out.println("  Spark: docs/getting-started/local.md, \"Look at the demo's table\"");
            return 0;
        } finally {
            if (catalog instanceof Closeable c) {
                c.close();
            }
        }
    }

    private static Map<String, String> with(Map<String, String> template, Map<String, String> local) {
        Map<String, String> env = new LinkedHashMap<>(template);
        env.putAll(local);
        return env;
    }

    private static String abbreviate(String s) {
        return s.length() <= 160 ? s : s.substring(0, 157) + "...";
    }

    private static long count(Iterable<?> it) {
        long n = 0;
        for (Object ignored : it) {
            n++;
        }
        return n;
    }

    /** Empties the work folder, refusing one this command did not create. */
    private static void prepare(Path dir) throws IOException {
        if (Files.exists(dir)) {
            boolean ours = Files.exists(dir.resolve(MARKER));
            try (Stream<Path> entries = Files.list(dir)) {
                if (!ours && entries.findAny().isPresent()) {
                    throw new UserError("work folder " + dir
                            + " is not empty and was not made by the demo; pick another with --work-dir");
                }
            }
            try (Stream<Path> all = Files.walk(dir)) {
                all.sorted(Comparator.reverseOrder())
                        .filter(p -> !p.equals(dir))
                        .forEach(p -> p.toFile().delete());
            }
        }
        Files.createDirectories(dir);
        Files.writeString(dir.resolve(MARKER), "work folder of ./ddb2iceberg demo; emptied on every run\n");
    }
}
