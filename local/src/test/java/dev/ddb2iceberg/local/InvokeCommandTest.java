package dev.ddb2iceberg.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.MetricLines;
import dev.ddb2iceberg.embedded.ProjectFiles;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.local.AsMain.Run;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.observe.LogSettings;
import dev.ddb2iceberg.testkit.DynamoDbExportFiles;
import dev.ddb2iceberg.testkit.LocalStack;
import java.io.Closeable;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code invoke} on the sample events, as a user runs it: the template's handlers, the env-vars
 * file's settings pointing at a real (embedded) S3 server and SQLite catalog.
 */
@ExtendWith(S3ServerExtension.class)
class InvokeCommandTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;

    private Path envVars;
    private EmbeddedS3Server server;
    private String bucket;

    @BeforeEach
    void setUp(EmbeddedS3Server server) throws Exception {
        this.server = server;
        this.bucket = S3ServerExtension.newBucket(server);
        Map<String, String> env = new LocalStack(server, bucket, dir).environment("orders");
        envVars = dir.resolve("env.json");
        JSON.writeValue(envVars.toFile(), Map.of("Parameters", env));
    }

    private Run run(String... args) {
        String[] all = new String[args.length + 2];
        System.arraycopy(args, 0, all, 0, args.length);
        all[args.length] = "-t";
        all[args.length + 1] = ProjectFiles.root().resolve("template.yaml").toString();
        return AsMain.run(all);
    }

    private Run invoke(String function, String event) {
        return run("invoke", function, "-e", ProjectFiles.event(event).toString(), "-n", envVars.toString());
    }

    @Test
    void loadExportLoadsAnExportThroughTheMergerShowingProgressAndNeverTwice() {
        assertEquals(0, invoke("Stager", "stager-batch.json").exit()); // the stream first
        List<Map<String, DdbValue>> items = new ArrayList<>();
        for (int i = 0; i < 25; i++) {
            items.add(Map.of(
                    "customer_id",
                    new DdbValue.S("C-" + i),
                    "order_id",
                    new DdbValue.N(Integer.toString(i)),
                    "status",
                    new DdbValue.S("SHIPPED")));
        }
        String export = new DynamoDbExportFiles(server.newClient(), bucket, "exports/")
                .writeFull("01764460900000-abcdef12", Instant.now().minusSeconds(60), items, 3);

        Run load = run("load-export", export, "--keys", "customer_id,order_id", "-n", envVars.toString());
        assertEquals(0, load.exit(), load.err());
        assertTrue(load.out().contains("25 of 25 items loaded (4 of 4 data files)"), load.out());
        assertTrue(load.out().contains("is loaded"), load.out());

        Run status = run("status", "-n", envVars.toString());
        assertTrue(status.out().contains("export       01764460900000-abcdef12: loaded, 25 items"), status.out());

        Run again = run("load-export", export, "-n", envVars.toString());
        assertEquals(0, again.exit(), again.err());
        assertTrue(again.out().contains("loaded before"), again.out());

        Run bad = run("load-export", "s3://" + bucket + "/exports/AWSDynamoDB/missing/", "-n", envVars.toString());
        assertEquals(2, bad.exit(), "a user error: " + bad.err());
        assertTrue(bad.err().contains("is the export finished"), bad.err());
    }

    @Test
    void loadExportInParallelRunsTheStateMachinesStepsThroughTheExportLoadFunction() {
        assertEquals(0, invoke("Stager", "stager-batch.json").exit()); // the stream first
        List<Map<String, DdbValue>> items = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            items.add(Map.of(
                    "customer_id",
                    new DdbValue.S("C-" + i),
                    "order_id",
                    new DdbValue.N(Integer.toString(i)),
                    "status",
                    new DdbValue.S("OPEN")));
        }
        String export = new DynamoDbExportFiles(server.newClient(), bucket, "exports/")
                .writeFull("01764460900000-parallel", Instant.now().minusSeconds(60), items, 4);

        Run load = run(
                "load-export", export, "--keys", "customer_id,order_id", "--parallel", "2", "-n", envVars.toString());
        assertEquals(0, load.exit(), load.err());
        assertTrue(load.out().contains("planned load 01764460900000-parallel-"), load.out());
        assertTrue(load.out().contains("of 40 items, 2 of 2 work items"), load.out());
        assertTrue(load.out().contains("is loaded: 40 rows"), load.out());

        Run status = run("status", "-n", envVars.toString());
        assertTrue(status.out().contains("export       01764460900000-parallel: loaded, 40 items"), status.out());
        assertFalse(status.out().contains("loading      parallel load"), status.out());

        Run again = run("load-export", export, "--parallel", "2", "-n", envVars.toString());
        assertEquals(2, again.exit(), "a user error: " + again.err());
        assertTrue(again.err().contains("was loaded before"), again.err());
    }

    @Test
    void fanOutMergesTheStagedBacklogThroughTheMergeFanOutFunction() {
        assertEquals(0, invoke("Stager", "stager-batch.json").exit());
        assertEquals(0, invoke("Merger", "merger-schedule.json").exit()); // the table and its key index
        assertEquals(0, invoke("Stager", "stager-ttl-removal.json").exit());

        Run small = run("fan-out", "--workers", "2", "-n", envVars.toString());
        assertEquals(0, small.exit(), small.err());
        assertTrue(small.out().contains("scheduled merges keep up, nothing fanned out"), small.out());

        Run plan = invoke("MergeFanOut", "merge-fan-out-plan.json");
        assertEquals(0, plan.exit(), plan.err());
        assertTrue(plan.out().contains("\"mergeId\":null"), "the sample plan step on a small backlog: " + plan.out());

        Run fanOut = run("fan-out", "--workers", "2", "--any-backlog", "-n", envVars.toString());
        assertEquals(0, fanOut.exit(), fanOut.err());
        assertTrue(fanOut.out().contains("2 key ranges"), fanOut.out());
        assertTrue(fanOut.out().contains("committed snapshot"), fanOut.out());
        Run status = run("status", "-n", envVars.toString());
        assertTrue(status.out().contains("waiting      0 staged objects, 0 bytes"), status.out());
    }

    @Test
    void statusShowsWhatWaitsBeforeTheFirstMergeAndTheTableAfterIt() throws Exception {
        assertEquals(0, invoke("Stager", "stager-batch.json").exit());
        Run before = run("status", "-n", envVars.toString());
        assertEquals(0, before.exit(), before.err());
        assertTrue(
                before.out().contains("ddb2iceberg.orders (does not exist yet: the merger creates it)"), before.out());
        assertTrue(before.out().contains("waiting      1 staged objects"), before.out());

        assertEquals(0, invoke("Merger", "merger-schedule.json").exit());
        Run after = run("status", "-n", envVars.toString(), "--json");
        assertEquals(0, after.exit(), after.err());
        JsonNode status = JSON.readTree(after.out());
        assertTrue(status.get("exists").asBoolean(), after.out());
        assertEquals(0, status.get("pendingObjects").asInt(), "the merge took the staged batch");
        assertEquals(1, status.get("appliedObjectsInCheckpoint").asInt());
        assertTrue(status.get("dataFiles").asInt() > 0, after.out());
        assertTrue(status.get("currentSnapshotId").isNumber(), after.out());
        assertTrue(status.get("lastCompactionAt").isNull(), "not compacted yet");
    }

    @Test
    void statusBeforeTheInitialLoadSaysThatMergesAreHeldAndWhy() throws Exception {
        Map<String, String> env = new HashMap<>(new LocalStack(server, bucket, dir).environment("orders"));
        env.put("INITIAL_LOAD", "ParallelExport"); // the template parameter's spelling
        JSON.writeValue(envVars.toFile(), Map.of("Parameters", env));
        assertEquals(0, invoke("Stager", "stager-batch.json").exit());
        Run merged = invoke("Merger", "merger-schedule.json");
        assertEquals(0, merged.exit(), merged.err());
        String why = JSON.readTree(merged.out()).path("heldBecause").asText();
        assertTrue(why.startsWith("INITIAL_LOAD=parallel-export: merges wait"), merged.out());

        Run status = run("status", "-n", envVars.toString());
        assertEquals(0, status.exit(), status.err());
        assertTrue(
                status.out()
                        .startsWith("table        ddb2iceberg.orders (does not exist yet: the export load creates it)\n"
                                + "merges held  " + why + "\n"),
                "status gives the merger's reason: " + status.out());
        Run json = run("status", "-n", envVars.toString(), "--json");
        assertEquals(why, JSON.readTree(json.out()).path("mergesHeldBecause").asText(), json.out());
    }

    @Test
    void stagerThenMergerOnTheSampleEventsGiveTheDocumentedResponses() throws Exception {
        Run staged = invoke("Stager", "stager-batch.json");
        assertEquals(0, staged.exit(), staged.err());
        assertEquals(JSON.readTree("{\"batchItemFailures\":[]}"), JSON.readTree(staged.out()));
        assertTrue(staged.err().contains("START RequestId") && staged.err().contains("END RequestId"), staged.err());

        Run poison = invoke("Stager", "stager-poison.json");
        assertEquals(0, poison.exit(), poison.err());
        assertEquals(JSON.readTree("{\"batchItemFailures\":[]}"), JSON.readTree(poison.out()));
        assertTrue(poison.err().contains("Quarantined record"), "the function's log is shown: " + poison.err());

        Run ttl = invoke("Stager", "stager-ttl-removal.json");
        assertEquals(0, ttl.exit(), ttl.err());

        Run merged = invoke("Merger", "merger-schedule.json");
        assertEquals(0, merged.exit(), merged.err());
        JsonNode result = JSON.readTree(merged.out());
        assertEquals(5 + 2 + 1, result.get("changesRead").asInt(), merged.out());
        assertEquals(3, result.get("objectsApplied").asInt());
        assertTrue(result.get("snapshotId").isNumber());

        Run again = invoke("Merger", "merger-scheduler-input.json");
        assertEquals(0, again.exit(), again.err());
        assertEquals(0, JSON.readTree(again.out()).get("changesRead").asInt(), "nothing left to merge");

        Run dry = invoke("Maintenance", "maintenance-dry-run.json");
        assertEquals(0, dry.exit(), dry.err());
        assertTrue(JSON.readTree(dry.out()).get("dryRun").asBoolean(), dry.out());
        Run maintained = invoke("Maintenance", "maintenance-schedule.json");
        assertEquals(0, maintained.exit(), maintained.err());
        assertEquals(0, JSON.readTree(maintained.out()).get("conflicts").size(), maintained.out());
    }

    /**
     * A user trying the removal settings and the change history locally: the settings in the
     * env-vars file, the sample events staged and merged, then maintenance.
     */
    @Test
    void theSampleEventsThroughAMergerThatKeepsRemovalsAndAChangeHistory() throws Exception {
        Map<String, String> env = new HashMap<>(new LocalStack(server, bucket, dir).environment("orders"));
        env.put("TTL_EXPIRIES", "mark");
        env.put("DELETES", "soft");
        env.put("HISTORY_TABLE", "orders_history");
        JSON.writeValue(envVars.toFile(), Map.of("Parameters", env));
        assertEquals(0, invoke("Stager", "stager-batch.json").exit());
        assertEquals(0, invoke("Stager", "stager-ttl-removal.json").exit());
        Run merged = invoke("Merger", "merger-schedule.json");
        assertEquals(0, merged.exit(), merged.err());
        int changes = JSON.readTree(merged.out()).get("changesRead").asInt();

        Catalog catalog = dev.ddb2iceberg.function.MergerSettings.from(new dev.ddb2iceberg.config.Environment(env))
                .catalog()
                .load();
        var history = catalog.loadTable(TableIdentifier.of("ddb2iceberg", "orders_history"));
        var rows = dev.ddb2iceberg.history.ChangeHistory.changes(history);
        // The TTL sample is the batch's last record delivered again: six read, five changes, each once.
        assertEquals(6, changes, merged.out());
        assertEquals(5, rows.size(), "each change the stream delivered, once: " + rows);
        assertTrue(
                rows.stream().anyMatch(dev.ddb2iceberg.model.Change::ttlExpiry), "the TTL removal, flagged: " + rows);
        var table = catalog.loadTable(TableIdentifier.of("ddb2iceberg", "orders"));
        assertTrue(
                table.schema().findField("_ddb_expired_at") != null
                        && table.schema().findField("_ddb_deleted_at") != null,
                "the mark columns: " + table.schema());
        ((Closeable) catalog).close(); // left open, it would warn later on whatever stdout is then

        Run status = run("status", "-n", envVars.toString());
        assertEquals(0, status.exit(), status.err());
        assertTrue(status.out().contains("removals     TTL_EXPIRIES=mark, DELETES=soft"), status.out());
        assertTrue(status.out().contains("history      ddb2iceberg.orders_history: 5 changes in"), status.out());

        Run maintained = invoke("Maintenance", "maintenance-schedule.json");
        assertEquals(0, maintained.exit(), maintained.err());
        assertEquals(
                0,
                JSON.readTree(maintained.out())
                        .path("history")
                        .path("conflicts")
                        .size(),
                maintained.out());
        assertTrue(
                JSON.readTree(maintained.out()).path("history").isObject(),
                "the history is maintained: " + maintained.out());
    }

    @Test
    void stdoutHoldsTheResponseAloneAndWhatTheFunctionPrintsGoesToStderr() throws Exception {
        Run staged = invoke("Stager", "stager-batch.json");
        assertEquals(0, staged.exit(), staged.err());
        assertEquals(
                List.of(JSON.readTree("{\"batchItemFailures\":[]}")),
                documents(staged.out()),
                "stdout is exactly the response, nothing else");
        JsonNode stagerLine = MetricLines.single(metricLines(staged.err()), "ddb2iceberg.orders");
        assertEquals(5, stagerLine.path("StagedRecords").asInt(), stagerLine.toString());

        // With JSON logs (LOG_FORMAT=json), which a function prints on its stdout as in Lambda.
        LogSettings before = LogSettings.use(LogSettings.Format.JSON, null);
        Run merged;
        try {
            merged = invoke("Merger", "merger-schedule.json");
        } finally {
            LogSettings.restore(before);
        }
        assertEquals(0, merged.exit(), merged.err());
        List<JsonNode> out = documents(merged.out());
        assertEquals(1, out.size(), "stdout holds one JSON document, the response: " + merged.out());
        JsonNode response = out.get(0);
        assertEquals(5, response.path("changesRead").asInt(), response.toString());
        JsonNode mergerLine = MetricLines.single(metricLines(merged.err()), "ddb2iceberg.orders");
        assertEquals(
                response.path("changesApplied").asLong(),
                mergerLine.path("ChangesMerged").asLong(),
                mergerLine.toString());
        assertTrue(
                merged.err().lines().anyMatch(l -> l.contains("\"message\":\"Merge run committed a snapshot\"")),
                "the JSON log line is on stderr: " + merged.err());
    }

    /** The JSON documents in a text, one after another; fails on anything that is not JSON. */
    private static List<JsonNode> documents(String text) throws IOException {
        List<JsonNode> docs = new ArrayList<>();
        try (MappingIterator<JsonNode> it = JSON.readerFor(JsonNode.class).readValues(text)) {
            it.forEachRemaining(docs::add);
        }
        return docs;
    }

    private static List<String> metricLines(String text) {
        return text.lines().filter(l -> l.startsWith("{\"_aws\"")).toList();
    }

    @Test
    void anUnknownLogicalIdIsAOneLineErrorNamingTheFunctions() {
        Run r = invoke("Stagr", "stager-batch.json");
        assertEquals(2, r.exit());
        assertEquals(
                "Error: no function 'Stagr' in " + ProjectFiles.root().resolve("template.yaml")
                        + "; its functions are [Stager, Merger, ExportLoad, MergeFanOut, Maintenance, CompactionWorker]",
                r.err().strip());
    }

    @Test
    void aMissingEventFileIsAOneLineError() {
        Run r = run("invoke", "Stager", "-e", "events/nope.json", "-n", envVars.toString());
        assertEquals(2, r.exit());
        assertEquals("Error: event file events/nope.json not found", r.err().strip());
    }

    @Test
    void anEventOfTheWrongTypeIsAFunctionErrorWithAClearMessage() throws Exception {
        Run r = invoke("Stager", "merger-schedule.json");
        assertEquals(1, r.exit());
        String lastLine = r.err().strip().lines().reduce((a, b) -> b).orElse("");
        assertTrue(
                r.err().contains("Error: The stager was invoked with an event that is not a DynamoDB Streams batch"),
                r.err());
        assertTrue(lastLine.startsWith("END RequestId"), lastLine);
        assertEquals(
                "java.lang.IllegalArgumentException",
                JSON.readTree(r.out()).get("errorType").asText());

        Run merger = invoke("Merger", "stager-batch.json");
        assertEquals(1, merger.exit());
        assertTrue(merger.err().contains("batches go to the stager"), merger.err());
    }

    @Test
    void anEventThatIsNotJsonIsAOneLineError() throws Exception {
        Path bad = dir.resolve("bad.json");
        Files.writeString(bad, "{\"Records\": [");
        Run r = run("invoke", "Stager", "-e", bad.toString(), "-n", envVars.toString());
        assertEquals(2, r.exit(), r.err());
        assertTrue(
                r.err().strip().lines().anyMatch(l -> l.startsWith("Error: the event is not a valid DynamodbEvent")),
                r.err());
    }
}
