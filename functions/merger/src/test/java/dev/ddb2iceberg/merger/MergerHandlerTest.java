package dev.ddb2iceberg.merger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ddb2iceberg.config.ConfigurationException;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.FaultInjectingBlobStore.Operation;
import dev.ddb2iceberg.embedded.LocalContext;
import dev.ddb2iceberg.embedded.MetricLines;
import dev.ddb2iceberg.embedded.ProjectFiles;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.function.MergerSettings;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.testkit.KeyedWorkload;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.LogCapture;
import dev.ddb2iceberg.testkit.StreamEvents;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** The merger's Lambda handler: the inputs EventBridge sends, its output, and its errors. */
@ExtendWith(S3ServerExtension.class)
class MergerHandlerTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;

    private final Map<String, String> env = new HashMap<>();
    private EmbeddedS3Server server;

    @BeforeEach
    void setUp(EmbeddedS3Server server) {
        this.server = server;
        env.putAll(new LocalStack(server, S3ServerExtension.newBucket(server), dir).environment("orders"));
    }

    private MergerHandler handler() {
        MergerSettings settings = MergerSettings.from(new Environment(env));
        return new MergerHandler(settings, settings.catalog().load(), server.newClient());
    }

    private void stageSomeChanges(int batches) {
        MergerSettings settings = MergerSettings.from(new Environment(env));
        BatchStager stager = new BatchStager(new StagingStore(server.newClient(), settings.staging()));
        KeyedWorkload w = new KeyedWorkload(1, 50);
        for (int i = 0; i < batches; i++) {
            stager.stage(StreamEvents.batch(w.next(20)).getRecords());
        }
    }

    private JsonNode invoke(MergerHandler handler, byte[] input) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        handler.handleRequest(new ByteArrayInputStream(input), out, null);
        return JSON.readTree(out.toByteArray());
    }

    @Test
    void aScheduleRuleEventRunsAMergeAndReturnsItsSummary() throws Exception {
        stageSomeChanges(2);
        JsonNode result = invoke(handler(), Files.readAllBytes(ProjectFiles.event("merger-schedule.json")));
        assertEquals(40, result.get("changesRead").asInt());
        assertEquals(2, result.get("objectsApplied").asInt());
        assertTrue(result.get("snapshotId").isNumber(), result.toString());
        assertEquals(1, result.get("commitAttempts").asInt());
        assertEquals(0, result.get("backlogObjects").asInt());
    }

    @Test
    void theSchedulerPlainInputSetsTheRunsBound() throws Exception {
        stageSomeChanges(3);
        JsonNode result = invoke(handler(), "{\"maxChanges\": 30}".getBytes());
        assertEquals(1, result.get("objectsApplied").asInt(), "20 changes fit under 30, 40 would not");
        assertEquals(2, result.get("backlogObjects").asInt());
        JsonNode sample = JSON.readTree(Files.readAllBytes(ProjectFiles.event("merger-scheduler-input.json")));
        assertEquals(50000, sample.get("maxChanges").asInt(), "the sample input file is valid");
        invoke(handler(), Files.readAllBytes(ProjectFiles.event("merger-scheduler-input.json")));
    }

    @Test
    void aScheduledRunThatLeavesABacklogMergesAgainUntilTheBacklogIsGone() throws Exception {
        env.put("MAX_CHANGES_PER_RUN", "20");
        stageSomeChanges(5);
        List<String> lines = new ArrayList<>();
        JsonNode result =
                invoke(handler().metricsTo(lines::add), Files.readAllBytes(ProjectFiles.event("merger-schedule.json")));
        assertEquals(5, result.get("objectsApplied").asInt(), "five merges of one object each: " + result);
        assertEquals(100, result.get("changesRead").asInt(), result.toString());
        assertEquals(0, result.get("backlogObjects").asInt(), result.toString());
        assertEquals(5, result.get("commitAttempts").asInt(), "one commit a merge: " + result);
        assertEquals(5, lines.size(), "each merge prints its own metric line: " + lines);
    }

    @Test
    void aScheduledRunPastItsDeadlineLeavesTheBacklogToTheNextRun() throws Exception {
        env.put("MAX_CHANGES_PER_RUN", "20");
        stageSomeChanges(5);
        // Scheduled long ago: its deadline (the scheduled time plus MERGE_RUN_SECONDS) has passed,
        // so after the merge every run makes, no other would commit in time.
        JsonNode result = invoke(handler(), "{\"scheduledTime\": \"2026-01-01T00:00:00Z\"}".getBytes());
        assertEquals(1, result.get("objectsApplied").asInt(), result.toString());
        assertEquals(4, result.get("backlogObjects").asInt(), result.toString());
    }

    @Test
    void aRunGivenMaxChangesIsOneMergeOfThatBoundEvenWithABacklog() throws Exception {
        stageSomeChanges(5);
        JsonNode result = invoke(handler(), "{\"maxChanges\": 20}".getBytes());
        assertEquals(1, result.get("objectsApplied").asInt(), result.toString());
        assertEquals(4, result.get("backlogObjects").asInt(), result.toString());
    }

    @Test
    void eachRunPrintsAnEmbeddedMetricLineWithTheFreshnessLagTheAlarmWatches() throws Exception {
        stageSomeChanges(3);
        List<String> lines = new ArrayList<>();
        JsonNode result = invoke(handler().metricsTo(lines::add), "{\"maxChanges\": 30}".getBytes());
        JsonNode line = MetricLines.single(lines, "ddb2iceberg.orders");
        List<String> declared = MetricLines.declared(line);
        assertTrue(declared.contains("FreshnessLagSeconds"), "the lag alarm's metric: " + declared);
        assertTrue(
                declared.containsAll(List.of("ItemsWritten", "RowsReplaced", "ItemsRemoved")),
                "merge counts: " + declared);
        assertEquals(
                result.get("changesApplied").asLong(),
                line.path("ChangesMerged").asLong(),
                line.toString());
        assertEquals(
                result.get("itemsWritten").asLong(), line.path("ItemsWritten").asLong(), line.toString());
        assertEquals(
                result.get("rowsReplaced").asLong(), line.path("RowsReplaced").asLong(), line.toString());
        assertEquals(
                result.get("itemsRemoved").asLong(), line.path("ItemsRemoved").asLong(), line.toString());
        assertEquals(2, line.path("BacklogObjects").asInt(), "two batches left for the next run");
        assertTrue(line.path("FreshnessLagSeconds").asLong() >= 0);
    }

    @Test
    void eachRunLogsAJsonLineWithTheSnapshotAndTheStagedObjectsItApplied() throws Exception {
        stageSomeChanges(2);
        LocalContext context = new LocalContext("ddb2iceberg-merger", 1024, 300);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        JsonNode line;
        try (LogCapture logs = LogCapture.json()) {
            handler().handleRequest(new ByteArrayInputStream(new byte[0]), out, context);
            line = logs.line(context.getAwsRequestId(), "Merge run");
        }
        JsonNode result = JSON.readTree(out.toByteArray());
        assertEquals("ddb2iceberg-merger", line.path("function").asText(), line.toString());
        assertEquals(result.get("snapshotId").asLong(), line.path("snapshotId").asLong(), line.toString());
        assertEquals(
                result.get("changesApplied").asLong(),
                line.path("changesApplied").asLong(),
                line.toString());
        assertEquals(2, line.path("objectsApplied").asInt(), line.toString());
        assertTrue(line.path("firstStagedObject").asText().startsWith("staging/"), line.toString());
        assertTrue(line.path("millis").isIntegralNumber(), line.toString());
    }

    @Test
    void aFailedRunLogsTheErrorWithItsCause() throws Exception {
        stageSomeChanges(1);
        server.faults().failFrom(Operation.GET, 1, key -> key.startsWith("staging/"));
        LocalContext context = new LocalContext("ddb2iceberg-merger", 1024, 300);
        JsonNode line;
        try (LogCapture logs = LogCapture.json()) {
            assertThrows(
                    RuntimeException.class,
                    () -> handler()
                            .handleRequest(
                                    new ByteArrayInputStream(new byte[0]), new ByteArrayOutputStream(), context));
            line = logs.line(context.getAwsRequestId(), "Merge run failed");
        }
        assertEquals("ERROR", line.path("level").asText(), line.toString());
        assertFalse(line.path("errorType").asText().isEmpty(), line.toString());
        assertTrue(line.path("stackTrace").size() > 0, line.toString());
    }

    @Test
    void anEmptyInputRunsWithTheConfiguredBounds() throws Exception {
        JsonNode result = invoke(handler(), new byte[0]);
        assertEquals(0, result.get("changesRead").asInt());
        assertTrue(result.get("snapshotId").isNull());
    }

    @Test
    void aStreamBatchSentToTheMergerIsRejectedWithTheReason() {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> invoke(handler(), Files.readAllBytes(ProjectFiles.event("stager-batch.json"))));
        assertTrue(e.getMessage().contains("batches go to the stager"), e.getMessage());
    }

    @Test
    void unknownOrBadInputFieldsAreNamed() {
        IllegalArgumentException unknown =
                assertThrows(IllegalArgumentException.class, () -> invoke(handler(), "{\"maxChangez\": 5}".getBytes()));
        assertTrue(unknown.getMessage().contains("'maxChangez'"), unknown.getMessage());
        IllegalArgumentException bad = assertThrows(
                IllegalArgumentException.class,
                () -> invoke(
                        handler(),
                        "{\"detail-type\": \"Scheduled Event\", \"detail\": {\"maxChanges\": -1}}".getBytes()));
        assertTrue(bad.getMessage().contains("maxChanges=-1"), bad.getMessage());
        IllegalArgumentException notJson =
                assertThrows(IllegalArgumentException.class, () -> invoke(handler(), "{oops".getBytes()));
        assertTrue(notJson.getMessage().contains("not JSON"), notJson.getMessage());
    }

    @Test
    void badSettingsAreNamedAtColdStart() {
        env.remove("TABLE_NAME");
        assertSettingError("TABLE_NAME");
        env.put("TABLE_NAME", "Orders");
        assertSettingError("TABLE_NAME='Orders' must be lower-case");
        env.put("TABLE_NAME", "orders");
        env.put("CATALOG_TYPE", "hive");
        assertSettingError("CATALOG_TYPE='hive'");
        env.put("CATALOG_TYPE", "jdbc");
        env.put("TABLE_FORMAT_VERSION", "4");
        assertSettingError("TABLE_FORMAT_VERSION=4");
        env.put("TABLE_FORMAT_VERSION", "2");
        env.put("MAX_CHANGES_PER_RUN", "lots");
        assertSettingError("MAX_CHANGES_PER_RUN='lots'");
        env.put("MAX_CHANGES_PER_RUN", "10");
        env.put("CATALOG_PROPERTIES", "a=b,nonsense");
        assertSettingError("'nonsense'");
    }

    private void assertSettingError(String expected) {
        ConfigurationException e =
                assertThrows(ConfigurationException.class, () -> MergerSettings.from(new Environment(env)));
        assertTrue(e.getMessage().contains(expected), "expected '" + expected + "' in: " + e.getMessage());
    }
}
