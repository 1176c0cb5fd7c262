package dev.ddb2iceberg.maintainer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.LocalContext;
import dev.ddb2iceberg.embedded.MetricLines;
import dev.ddb2iceberg.embedded.ProjectFiles;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.function.MaintenanceSettings;
import dev.ddb2iceberg.maintenance.MaintenanceTask;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.merge.Merger;
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
import java.time.Clock;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** The maintenance function's inputs (schedule event, Scheduler input, task list, dry run) and errors. */
@ExtendWith(S3ServerExtension.class)
class MaintenanceHandlerTest {
    /** Merges that leave their small files and delete files, as before folding: work for maintenance. */
    private static final MergeOptions UNFOLDED = MergeOptions.DEFAULTS.withRewriteFilesBelow(0);

    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;

    private MaintenanceSettings settings;
    private EmbeddedS3Server server;

    @BeforeEach
    void setUp(EmbeddedS3Server server) {
        this.server = server;
        Map<String, String> env =
                new LocalStack(server, S3ServerExtension.newBucket(server), dir).environment("orders");
        settings = MaintenanceSettings.from(new Environment(env));
    }

    private JsonNode invoke(byte[] input) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        new MaintenanceHandler(settings, Clock.systemUTC()).handleRequest(new ByteArrayInputStream(input), out, null);
        return JSON.readTree(out.toByteArray());
    }

    private void buildTable() {
        StagingStore store = new StagingStore(server.newClient(), settings.staging());
        KeyedWorkload w = new KeyedWorkload(3, 100);
        for (int i = 0; i < 6; i++) {
            new BatchStager(store).stage(StreamEvents.batch(w.next(40)).getRecords());
            new Merger(settings.catalog().load(), settings.table(), store, UNFOLDED).run();
        }
    }

    @Test
    void beforeTheFirstMergeThereIsNothingToMaintain() throws Exception {
        JsonNode r = invoke(Files.readAllBytes(ProjectFiles.event("maintenance-schedule.json")));
        assertEquals(0, r.get("snapshotsExpired").asInt());
    }

    @Test
    void theScheduleEventRunsEveryTask() throws Exception {
        buildTable();
        JsonNode r = invoke(Files.readAllBytes(ProjectFiles.event("maintenance-schedule.json")));
        assertEquals(false, r.get("dryRun").asBoolean());
        assertEquals(0, r.get("conflicts").size());
        assertTrue(r.get("compaction").get("dataFilesBefore").asInt() > 0, r.toString());
    }

    @Test
    void eachRunLogsAJsonLineWithWhatItDidAndTheSnapshot() throws Exception {
        buildTable();
        LocalContext context = new LocalContext("ddb2iceberg-maintenance", 2048, 900);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        JsonNode line;
        try (LogCapture logs = LogCapture.json()) {
            new MaintenanceHandler(settings, Clock.systemUTC())
                    .handleRequest(new ByteArrayInputStream("{\"tasks\": [\"compact\"]}".getBytes()), out, context);
            line = logs.line(context.getAwsRequestId(), "Maintenance run");
        }
        JsonNode c = JSON.readTree(out.toByteArray()).get("compaction");
        assertEquals("ddb2iceberg-maintenance", line.path("function").asText(), line.toString());
        assertEquals(
                c.get("filesRewritten").asInt(), line.path("filesRewritten").asInt(), line.toString());
        assertEquals(
                c.get("bytesRewritten").asLong(), line.path("bytesRewritten").asLong(), line.toString());
        assertTrue(line.path("snapshotId").isIntegralNumber(), line.toString());
        assertTrue(line.path("millis").isIntegralNumber(), line.toString());
    }

    @Test
    void aBadInputIsLoggedAsAnErrorNamingIt() {
        LocalContext context = new LocalContext("ddb2iceberg-maintenance", 2048, 900);
        JsonNode line;
        try (LogCapture logs = LogCapture.json()) {
            assertThrows(
                    IllegalArgumentException.class,
                    () -> new MaintenanceHandler(settings, Clock.systemUTC())
                            .handleRequest(
                                    new ByteArrayInputStream("{\"dryRun\": \"yes\"}".getBytes()),
                                    new ByteArrayOutputStream(),
                                    context));
            line = logs.line(context.getAwsRequestId(), "Maintenance run failed");
        }
        assertTrue(line.path("errorMessage").asText().contains("dryRun"), line.toString());
    }

    @Test
    void eachRunPrintsAnEmbeddedMetricLineWithWhatItRewroteAndRemoved() throws Exception {
        buildTable();
        List<String> lines = new ArrayList<>();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        new MaintenanceHandler(settings, Clock.systemUTC())
                .metricsTo(lines::add)
                .handleRequest(new ByteArrayInputStream("{\"tasks\": [\"compact\"]}".getBytes()), out, null);
        JsonNode result = JSON.readTree(out.toByteArray());
        JsonNode line = MetricLines.single(lines, "ddb2iceberg.orders");
        JsonNode c = result.get("compaction");
        assertEquals(
                c.get("filesRewritten").asLong(), line.path("FilesRewritten").asLong(), line.toString());
        assertEquals(
                c.get("bytesRewritten").asLong(), line.path("BytesRewritten").asLong());
        assertEquals(c.get("dataFilesAfter").asLong(), line.path("DataFiles").asLong());
        assertEquals(
                c.get("deleteFilesAfter").asLong(), line.path("DeleteFiles").asLong());
        assertTrue(line.path("FilesRewritten").asLong() > 0, "the small merges' files were compacted: " + line);
        assertEquals("Bytes", MetricLines.unit(line, "BytesRewritten"));
    }

    @Test
    void theStatusInputReportsTheTablesKnownCountsAndChangesNothing() throws Exception {
        buildTable();
        new BatchStager(new StagingStore(server.newClient(), settings.staging()))
                .stage(StreamEvents.batch(new KeyedWorkload(9, 100).next(10)).getRecords()); // waits for the next merge
        Table table = settings.catalog().load().loadTable(TableIdentifier.of("ddb2iceberg", "orders"));
        int dataFiles = 0;
        Set<String> deleteFiles = new HashSet<>();
        try (var tasks = table.newScan().planFiles()) {
            for (var t : tasks) {
                dataFiles++;
                t.deletes().forEach(d -> deleteFiles.add(d.location()));
            }
        }
        int snapshots = 0;
        for (var ignored : table.snapshots()) {
            snapshots++;
        }

        JsonNode status = invoke("{\"status\": true}".getBytes());
        assertEquals("ddb2iceberg.orders", status.get("table").asText());
        assertTrue(status.get("exists").asBoolean());
        assertEquals(
                table.currentSnapshot().snapshotId(),
                status.get("currentSnapshotId").asLong());
        assertEquals(snapshots, status.get("snapshots").asInt());
        assertEquals(1, status.get("appliedObjectsInCheckpoint").asInt(), "the last merge's object: " + status);
        assertEquals(1, status.get("pendingObjects").asInt());
        assertEquals(dataFiles, status.get("dataFiles").asInt());
        assertEquals(deleteFiles.size(), status.get("deleteFiles").asInt());
        assertTrue(deleteFiles.size() > 0, "six merges of updates leave delete files");
        JsonNode scan = status.get("scan"); // what a full scan opens, and about what the rows take compacted
        assertEquals(dataFiles, scan.get("dataFiles").asInt(), scan.toString());
        assertEquals(deleteFiles.size(), scan.get("deleteFiles").asInt(), scan.toString());
        assertEquals(
                scan.get("partitions").asInt(),
                scan.get("compactedFiles").asInt(),
                "a small table compacts to one file per partition: " + scan);
        assertEquals(dataFiles, status.get("smallDataFiles").asInt(), "every file of a small table is small");
        assertTrue(status.get("lastCompactionAt").isNull());
        assertEquals(
                table.currentSnapshot().snapshotId(),
                settings.catalog()
                        .load()
                        .loadTable(TableIdentifier.of("ddb2iceberg", "orders"))
                        .currentSnapshot()
                        .snapshotId(),
                "a status request changes nothing");

        invoke("{\"tasks\": [\"compact\"]}".getBytes());
        JsonNode compacted = invoke("{\"status\": true}".getBytes());
        assertTrue(compacted.get("lastCompactionAt").isTextual(), compacted.toString());
        assertEquals(0, compacted.get("deleteFiles").asInt(), compacted.toString());
        // The planner leaves a partition with fewer than COMPACTION_MIN_INPUT_FILES small files alone,
        // so the table may keep more files than a full compaction would leave.
        JsonNode after = compacted.get("scan");
        assertEquals(0, after.get("deleteFiles").asInt(), after.toString());
        assertTrue(after.get("compactedFiles").asInt() <= after.get("dataFiles").asInt(), after.toString());
        assertEquals(
                after.get("partitions").asInt(), after.get("compactedFiles").asInt(), after.toString());
    }

    @Test
    void theDryRunSampleChangesNothing() throws Exception {
        buildTable();
        JsonNode r = invoke(Files.readAllBytes(ProjectFiles.event("maintenance-dry-run.json")));
        assertEquals(true, r.get("dryRun").asBoolean());
        assertEquals(
                r.get("compaction").get("dataFilesBefore"), r.get("compaction").get("dataFilesAfter"));
    }

    @Test
    void inputsAreReadAndBadOnesNamed() {
        assertEquals(
                new MaintenanceHandler.Request(EnumSet.of(MaintenanceTask.EXPIRE, MaintenanceTask.ORPHANS), true),
                MaintenanceHandler.request(
                        "{\"detail-type\":\"Scheduled Event\",\"detail\":{\"tasks\":[\"expire\",\"orphans\"],\"dryRun\":true}}"
                                .getBytes()));
        assertEquals(
                new MaintenanceHandler.Request(EnumSet.allOf(MaintenanceTask.class), false),
                MaintenanceHandler.request(new byte[0]));
        IllegalArgumentException task = assertThrows(
                IllegalArgumentException.class,
                () -> MaintenanceHandler.request("{\"tasks\":[\"vacuum\"]}".getBytes()));
        assertTrue(task.getMessage().contains("Unknown maintenance task 'vacuum'"), task.getMessage());
        IllegalArgumentException field = assertThrows(
                IllegalArgumentException.class, () -> MaintenanceHandler.request("{\"dry_run\":true}".getBytes()));
        assertTrue(field.getMessage().contains("'dry_run'"), field.getMessage());
        IllegalArgumentException dry = assertThrows(
                IllegalArgumentException.class, () -> MaintenanceHandler.request("{\"dryRun\":\"yes\"}".getBytes()));
        assertTrue(dry.getMessage().contains("dryRun"), dry.getMessage());
        IllegalArgumentException stream = assertThrows(
                IllegalArgumentException.class, () -> MaintenanceHandler.request("{\"Records\":[]}".getBytes()));
        assertTrue(stream.getMessage().contains("batches go to the stager"), stream.getMessage());
    }
}
