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
import dev.ddb2iceberg.testkit.KeyedWorkload;
import dev.ddb2iceberg.testkit.MergerFixture;
import dev.ddb2iceberg.testkit.MovableClock;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Continuous mode through the merger function's handler: the run's deadline from the scheduled time
 * and the Lambda's remaining time, and its input and settings refused by name. The test kit's
 * {@code MergerFixture} (real merger, embedded S3 over HTTP, the SQLite catalog) and a clock the
 * test moves, as in {@code dev.ddb2iceberg.merge.ContinuousMergeTest}, where the library's side of
 * continuous mode is tested.
 */
@ExtendWith(S3ServerExtension.class)
class ContinuousMergeHandlerTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Instant T0 = Instant.parse("2026-11-30T12:00:00Z");

    @TempDir
    Path dir;

    private final KeyedWorkload workload = new KeyedWorkload(7, 200);
    private final MovableClock clock = new MovableClock(T0);
    private MergerFixture pipeline;

    @BeforeEach
    void setUp(EmbeddedS3Server server) {
        pipeline = new MergerFixture(server, dir, Map.of("MERGE_MODE", "continuous"));
    }

    /** One batch of the stream, staged as the stager would, and remembered in the model. */
    private void stageBatch(int changes) {
        pipeline.stage(workload.next(changes));
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
        MergerHandler handler = new MergerHandler(
                        pipeline.settings(),
                        pipeline.catalog(),
                        pipeline.server().newClient())
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
        assertTrue(pipeline.store().anyStaged(), "what was staged waits for the next run");

        // The next run, on time, with only 45 s of Lambda time left: the Lambda's time bounds it.
        Instant next = T0.plusSeconds(60);
        clock.set(next);
        JsonNode run = invoke("{\"scheduledTime\": \"" + next + "\"}", remaining(Duration.ofSeconds(45)));
        assertEquals(next.plusSeconds(40).toString(), run.get("deadline").asText(), "45 s left, less a 5 s reserve");
        assertEquals(1, run.get("commits").asInt(), run.toString());
        assertEquals(20, run.get("merges").get(0).get("changesRead").asInt(), "the first merge took the staged batch");
        pipeline.assertTableHoldsModel();
    }

    @Test
    void aBadScheduledTimeOrModeIsRefusedNamingIt() {
        IllegalArgumentException e = Assertions.assertThrows(
                IllegalArgumentException.class, () -> invoke("{\"scheduledTime\": \"yesterday\"}", null));
        assertTrue(e.getMessage().contains("scheduledTime=\"yesterday\""), e.getMessage());
        pipeline.env.put("MERGE_MODE", "streaming");
        ConfigurationException c = Assertions.assertThrows(
                ConfigurationException.class, () -> MergerSettings.from(new Environment(pipeline.env)));
        assertTrue(c.getMessage().contains("MERGE_MODE='streaming'"), c.getMessage());
        pipeline.env.put("MERGE_MODE", "continuous");
        pipeline.env.put("MERGE_INTERVAL_SECONDS", "60");
        c = Assertions.assertThrows(
                ConfigurationException.class, () -> MergerSettings.from(new Environment(pipeline.env)));
        assertTrue(c.getMessage().contains("MERGE_INTERVAL_SECONDS=60"), c.getMessage());
    }
}
