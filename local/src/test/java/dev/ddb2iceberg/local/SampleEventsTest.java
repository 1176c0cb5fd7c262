package dev.ddb2iceberg.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.ProjectFiles;
import dev.ddb2iceberg.local.AsMain.Run;
import dev.ddb2iceberg.testkit.LocalStack;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every file of events/ through the command docs/getting-started/local.md gives it, against a local
 * stack as {@code up} makes it: the embedded S3 server with the bucket {@code local} (the one the
 * export events name) and its sample export, and an SQLite catalog.
 */
class SampleEventsTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Path LOCAL_MD = ProjectFiles.root().resolve("docs/getting-started/local.md");

    @TempDir
    Path dir;

    private EmbeddedS3Server server;
    private Path envVars;

    @BeforeEach
    void startTheLocalStack() throws IOException {
        server = EmbeddedS3Server.inMemory();
        server.ensureBucket("local");
        try (var s3 = server.newClient()) {
            SampleExport.write(s3, "local", Instant.now());
        }
        envVars = dir.resolve("env-vars.json");
        JSON.writeValue(
                envVars.toFile(), Map.of("Parameters", new LocalStack(server, "local", dir).environment("orders")));
    }

    @AfterEach
    void stop() {
        server.close();
    }

    private Run run(String... args) {
        List<String> all = new ArrayList<>(List.of(args));
        all.addAll(List.of(
                "-n",
                envVars.toString(),
                "-t",
                ProjectFiles.root().resolve("template.yaml").toString()));
        return AsMain.run(all.toArray(String[]::new));
    }

    private Run invoke(String function, String event) {
        return run("invoke", function, "-e", ProjectFiles.event(event).toString());
    }

    /** The response on stdout, failing with what the command printed when it is not one JSON document. */
    private static JsonNode response(Run r, String what) throws IOException {
        assertEquals(0, r.exit(), what + " failed:\n" + r.err());
        return JSON.readTree(r.out());
    }

    @Test
    void eachSampleEventGivesTheResponseLocalMdDescribes() throws IOException {
        List<String> tried = new ArrayList<>();

        JsonNode batch = response(invoke("Stager", "stager-batch.json"), "stager-batch.json");
        assertEquals(0, batch.path("batchItemFailures").size(), "every record staged: " + batch);
        tried.add("stager-batch.json");

        JsonNode ttl = response(invoke("Stager", "stager-ttl-removal.json"), "stager-ttl-removal.json");
        assertEquals(0, ttl.path("batchItemFailures").size(), ttl.toString());
        tried.add("stager-ttl-removal.json");

        Run poison = invoke("Stager", "stager-poison.json");
        assertEquals(
                0,
                response(poison, "stager-poison.json").path("batchItemFailures").size(),
                poison.out());
        assertTrue(poison.err().contains("Quarantined record"), "the undecodable record is set aside: " + poison.err());
        tried.add("stager-poison.json");

        Run merged = invoke("Merger", "merger-schedule.json");
        JsonNode merge = response(merged, "merger-schedule.json");
        assertEquals(3, merge.path("objectsApplied").asInt(), "the three staged batches: " + merge);
        assertTrue(merge.path("snapshotId").isNumber(), merge.toString());
        assertTrue(
                merged.err()
                                .contains("Note: lagSeconds "
                                        + merge.path("lagSeconds").asLong())
                        && merged.err().contains("on 2025-11-30"),
                "the lag is said to come from the events' own dates: " + merged.err());
        tried.add("merger-schedule.json");

        JsonNode again = response(invoke("Merger", "merger-scheduler-input.json"), "merger-scheduler-input.json");
        assertEquals(0, again.path("changesRead").asInt(), "nothing left to merge: " + again);
        tried.add("merger-scheduler-input.json");

        JsonNode load = response(invoke("Merger", "merger-load-export.json"), "merger-load-export.json");
        assertTrue(load.path("done").asBoolean(), "the sample export is in after one invocation: " + load);
        assertEquals(SampleExport.ITEMS, load.path("itemsLoaded").asInt(), load.toString());
        tried.add("merger-load-export.json");

        JsonNode dry = response(invoke("Maintenance", "maintenance-dry-run.json"), "maintenance-dry-run.json");
        assertTrue(dry.path("dryRun").asBoolean(), dry.toString());
        tried.add("maintenance-dry-run.json");

        JsonNode maintained = response(invoke("Maintenance", "maintenance-schedule.json"), "maintenance-schedule.json");
        assertEquals(0, maintained.path("conflicts").size(), maintained.toString());
        tried.add("maintenance-schedule.json");

        JsonNode compaction = response(invoke("CompactionWorker", "compaction-plan.json"), "compaction-plan.json");
        assertTrue(compaction.has("groups"), "a compaction plan: " + compaction);
        tried.add("compaction-plan.json");

        JsonNode fanOut = response(invoke("MergeFanOut", "merge-fan-out-plan.json"), "merge-fan-out-plan.json");
        assertTrue(fanOut.path("mergeId").isNull(), "a small backlog is left to the Merger: " + fanOut);
        tried.add("merge-fan-out-plan.json");

        Run execution = invoke("ExportLoad", "export-load-execution.json");
        assertEquals(1, execution.exit(), "the state machine's input is not one step's: " + execution.err());
        assertTrue(
                execution.err().contains("it is the export-load state machine's input")
                        && execution.err().contains("./ddb2iceberg load-export --input <this file>"),
                execution.err());
        tried.add("export-load-execution.json");
        tried.add("env-local.json"); // not an event: the env-vars file, checked below

        assertEquals(eventFiles(), new TreeSet<>(tried), "every file of events/ is tried here");
        String localMd = Files.readString(LOCAL_MD);
        List<String> undocumented = eventFiles().stream()
                .filter(f -> !localMd.contains("`events/" + f + "`"))
                .toList();
        assertEquals(List.of(), undocumented, "event files local.md's table does not list");
    }

    @Test
    void theStateMachinesSampleInputLoadsTheSampleExportThroughLoadExport() {
        assertEquals(0, invoke("Stager", "stager-batch.json").exit(), "the stream first");
        Run load = run(
                "load-export",
                "--input",
                ProjectFiles.event("export-load-execution.json").toString());
        assertEquals(0, load.exit(), load.err());
        assertTrue(load.out().contains("planned load " + SampleExport.ID), load.out());
        assertTrue(load.out().contains("is loaded: " + SampleExport.ITEMS + " rows"), load.out());
    }

    @Test
    void envLocalJsonNamesTheSettingsUpWritesWithItsDefaults() throws IOException {
        JsonNode sample =
                JSON.readTree(ProjectFiles.event("env-local.json").toFile()).path("Parameters");
        Map<String, String> up = new LocalStack(server, UpCommand.DEFAULT_BUCKET, Path.of(UpCommand.DEFAULT_WORK_DIR))
                .environment(UpCommand.DEFAULT_TABLE);
        assertEquals(new TreeSet<>(up.keySet()), new TreeSet<>(iterable(sample.fieldNames())), "the same settings");
        assertEquals(
                "http://127.0.0.1:" + UpCommand.DEFAULT_PORT,
                sample.path("S3_ENDPOINT").asText(),
                "up's default port");
        assertEquals(UpCommand.DEFAULT_TABLE, sample.path("TABLE_NAME").asText());
        assertEquals(UpCommand.DEFAULT_BUCKET, sample.path("STAGING_BUCKET").asText());
    }

    private static TreeSet<String> eventFiles() throws IOException {
        try (Stream<Path> files = Files.list(ProjectFiles.root().resolve("events"))) {
            return files.map(p -> p.getFileName().toString())
                    .filter(n -> n.endsWith(".json"))
                    .collect(java.util.stream.Collectors.toCollection(TreeSet::new));
        }
    }

    private static <T> List<T> iterable(java.util.Iterator<T> it) {
        List<T> list = new ArrayList<>();
        it.forEachRemaining(list::add);
        return list;
    }
}
