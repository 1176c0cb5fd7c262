package dev.ddb2iceberg.merger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.amazonaws.services.lambda.runtime.ClientContext;
import com.amazonaws.services.lambda.runtime.CognitoIdentity;
import com.amazonaws.services.lambda.runtime.Context;
import com.amazonaws.services.lambda.runtime.LambdaLogger;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ddb2iceberg.config.ConfigurationException;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.function.MergerSettings;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.testkit.ExpectedTable;
import dev.ddb2iceberg.testkit.KeyedWorkload;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.MovableClock;
import dev.ddb2iceberg.testkit.TableAssertions;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Continuous mode through the merger function's handler: the run's deadline from the scheduled time
 * and the Lambda's remaining time, and its input and settings refused by name. The fixture is
 * {@code dev.ddb2iceberg.merge.ContinuousMergeTest}'s (real merger, embedded S3 over HTTP, the
 * SQLite catalog, a clock the test moves); the library's side of continuous mode is tested there.
 */
@ExtendWith(S3ServerExtension.class)
class ContinuousMergeHandlerTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Instant T0 = Instant.parse("2026-11-30T12:00:00Z");

    @TempDir
    Path dir;

    private final Map<String, String> env = new HashMap<>();
    private final ExpectedTable model = new ExpectedTable();
    private final KeyedWorkload workload = new KeyedWorkload(7, 200);
    private MergerSettings settings;
    private Catalog catalog;
    private StagingStore store;
    private EmbeddedS3Server server;
    private final MovableClock clock = new MovableClock(T0);

    @BeforeEach
    void setUp(EmbeddedS3Server server) {
        this.server = server;
        env.putAll(new LocalStack(server, S3ServerExtension.newBucket(server), dir).environment("orders"));
        env.put("MERGE_MODE", "continuous");
        settings = MergerSettings.from(new Environment(env));
        catalog = settings.catalog().load();
        store = new StagingStore(server.newClient(), settings.staging());
    }

    /** One batch of the stream, staged as the stager would, and remembered in the model. */
    private void stageBatch(int changes) {
        List<Change> batch = workload.next(changes);
        TableAssertions.stage(store, batch);
        model.apply(batch);
    }

    private void assertTableEqualsModel() {
        TableAssertions.assertHolds(
                catalog.loadTable(TableIdentifier.of(
                        settings.table().namespace(), settings.table().name())),
                model);
    }

    // ------------------------------------------------------------------ the handler

    /** A Lambda context with a fixed remaining time. */
    private static Context remaining(Duration left) {
        return new Context() {
            public String getAwsRequestId() {
                return "test";
            }

            public String getLogGroupName() {
                return "test";
            }

            public String getLogStreamName() {
                return "test";
            }

            public String getFunctionName() {
                return "merger";
            }

            public String getFunctionVersion() {
                return "$LATEST";
            }

            public String getInvokedFunctionArn() {
                return "arn:aws:lambda:us-east-1:123456789012:function:merger";
            }

            public CognitoIdentity getIdentity() {
                return null;
            }

            public ClientContext getClientContext() {
                return null;
            }

            public int getRemainingTimeInMillis() {
                return (int) left.toMillis();
            }

            public int getMemoryLimitInMB() {
                return 2048;
            }

            public LambdaLogger getLogger() {
                return null;
            }
        };
    }

    private JsonNode invoke(String input, Context context) throws Exception {
        MergerHandler handler = new MergerHandler(settings, catalog, server.newClient())
                .timing(clock, clock::set)
                .metricsTo(line -> {});
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        handler.handleRequest(new ByteArrayInputStream(input.getBytes(StandardCharsets.UTF_8)), out, context);
        return JSON.readTree(out.toByteArray());
    }

    @Test
    void theHandlerEndsARunBeforeTheNextScheduledTimeAndWithinTheLambdasTime() throws Exception {
        stageBatch(20);
        // Delivered 52 s after its scheduled time: the 30 s a first merge is given do not fit before 57 s.
        clock.set(T0.plusSeconds(52));
        JsonNode late = invoke("{\"scheduledTime\": \"" + T0 + "\"}", remaining(Duration.ofMinutes(5)));
        assertEquals(T0.plusSeconds(57).toString(), late.get("deadline").asText(), late.toString());
        assertEquals("DEADLINE", late.get("stoppedBecause").asText());
        assertEquals(0, late.get("merges").size(), "no merge starts that could not commit before the next run");
        assertTrue(store.anyStaged(), "what was staged waits for the next run");

        // The next run, on time, with only 45 s of Lambda time left: the Lambda's time bounds it.
        Instant next = T0.plusSeconds(60);
        clock.set(next);
        JsonNode run = invoke("{\"scheduledTime\": \"" + next + "\"}", remaining(Duration.ofSeconds(45)));
        assertEquals(next.plusSeconds(40).toString(), run.get("deadline").asText(), "45 s left, less a 5 s reserve");
        assertEquals(1, run.get("commits").asInt(), run.toString());
        assertEquals(20, run.get("merges").get(0).get("changesRead").asInt(), "the first merge took the staged batch");
        assertTableEqualsModel();
    }

    @Test
    void aBadScheduledTimeOrModeIsRefusedNamingIt() {
        IllegalArgumentException e = Assertions.assertThrows(
                IllegalArgumentException.class, () -> invoke("{\"scheduledTime\": \"yesterday\"}", null));
        assertTrue(e.getMessage().contains("scheduledTime=\"yesterday\""), e.getMessage());
        env.put("MERGE_MODE", "streaming");
        ConfigurationException c =
                Assertions.assertThrows(ConfigurationException.class, () -> MergerSettings.from(new Environment(env)));
        assertTrue(c.getMessage().contains("MERGE_MODE='streaming'"), c.getMessage());
        env.put("MERGE_MODE", "continuous");
        env.put("MERGE_INTERVAL_SECONDS", "60");
        c = Assertions.assertThrows(ConfigurationException.class, () -> MergerSettings.from(new Environment(env)));
        assertTrue(c.getMessage().contains("MERGE_INTERVAL_SECONDS=60"), c.getMessage());
    }
}
