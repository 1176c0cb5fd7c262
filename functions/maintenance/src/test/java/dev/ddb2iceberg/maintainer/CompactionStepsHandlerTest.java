package dev.ddb2iceberg.maintainer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.ProjectFiles;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.function.MaintenanceSettings;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.testkit.KeyedWorkload;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.StreamEvents;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The compaction fan-out's function, driven through JSON as the state machine drives it: the plan
 * step's groups, one group step each (the map's workers), the finish step; and its refusals.
 */
@ExtendWith(S3ServerExtension.class)
class CompactionStepsHandlerTest {
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

    private JsonNode invoke(String input) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (CompactionStepsHandler handler =
                new CompactionStepsHandler(settings, settings.catalog().load())) {
            handler.handleRequest(new ByteArrayInputStream(input.getBytes()), out, null);
        }
        return JSON.readTree(out.toByteArray());
    }

    @Test
    void thePlansGroupsEachCompactedByAStepThenFinishLeaveFewerFilesAndNoDeletes() throws Exception {
        StagingStore store = new StagingStore(server.newClient(), settings.staging());
        KeyedWorkload w = new KeyedWorkload(3, 100);
        for (int i = 0; i < 8; i++) {
            new BatchStager(store).stage(StreamEvents.batch(w.next(40)).getRecords());
            new Merger(settings.catalog().load(), settings.table(), store, UNFOLDED).run();
        }
        JsonNode plan = invoke(Files.readString(ProjectFiles.event("compaction-plan.json")));
        assertEquals(4, plan.get("concurrency").asInt(), plan.toString());
        assertTrue(plan.get("groups").size() > 0, plan.toString());
        int before = -1;
        for (JsonNode group : plan.get("groups")) {
            JsonNode done = invoke(JSON.writeValueAsString(Map.of("step", "group", "files", group.get("files"))));
            assertEquals(1, done.get("compaction").get("groups").asInt(), done.toString());
            if (before < 0) {
                before = done.get("compaction").get("dataFilesBefore").asInt();
            }
        }
        JsonNode finish = invoke("{\"step\": \"finish\"}");
        assertTrue(finish.get("compaction").get("dataFilesAfter").asInt() < before, finish + " after " + before);
        JsonNode again = invoke("{\"step\": \"plan\", \"workers\": 3}");
        assertEquals(0, again.get("groups").size(), "nothing left to fan out: " + again);
    }

    @Test
    void beforeTheFirstMergeAnExecutionPlansNothingAndFinishesWithoutFailing() throws Exception {
        JsonNode plan = invoke("{\"step\": \"plan\", \"workers\": 3}");
        assertEquals(0, plan.get("groups").size(), plan.toString());
        JsonNode finish = invoke("{\"step\": \"finish\"}");
        assertEquals(0, finish.get("compaction").get("danglingDeletesRemoved").asInt(), finish.toString());
        assertEquals(0, finish.get("manifestsRewritten").asInt(), finish.toString());
    }

    @Test
    void aStepTheFunctionDoesNotKnowIsRefusedNamingTheSteps() {
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> invoke("{\"step\": \"compact\"}"));
        assertTrue(e.getMessage().contains("plan, group, finish"), e.getMessage());
    }
}
