package dev.ddb2iceberg.observe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;

class PipelineLoggerTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    private LogSettings before;

    @BeforeEach
    void capture() {
        before = LogSettings.use(LogSettings.Format.JSON, new PrintStream(bytes, true, StandardCharsets.UTF_8));
    }

    @AfterEach
    void restore() {
        LogSettings.restore(before);
    }

    private List<String> lines() {
        return bytes.toString(StandardCharsets.UTF_8).lines().toList();
    }

    private JsonNode onlyLine() {
        List<String> lines = lines();
        assertEquals(1, lines.size(), "one line: " + lines);
        try {
            return JSON.readTree(lines.get(0));
        } catch (IOException e) {
            throw new UncheckedIOException("not JSON: " + lines.get(0), e);
        }
    }

    @Test
    void slf4jFindsThePipelineBackend() {
        assertEquals(
                PipelineLogger.class,
                LoggerFactory.getLogger("dev.ddb2iceberg.x").getClass());
    }

    @Test
    void aLineCarriesTheInvocationTheKeyValuesAndTheErrorWithItsCause() {
        Logger log = LoggerFactory.getLogger("dev.ddb2iceberg.merge.Merger");
        IllegalStateException error = new IllegalStateException("commit refused", new IOException("HTTP 503"));
        try (Invocation invocation = Invocation.of("ddb2iceberg-merger", "req-1")) {
            log.atError()
                    .setCause(error)
                    .addKeyValue("snapshotId", 42L)
                    .addKeyValue("objects", 3)
                    .addKeyValue("stagedObject", "staging/a.gz")
                    .addKeyValue("dryRun", false)
                    .log("Merge run failed after {} attempts", 2);
        }
        JsonNode line = onlyLine();
        assertEquals("ERROR", line.path("level").asText());
        assertEquals("dev.ddb2iceberg.merge.Merger", line.path("logger").asText());
        assertEquals("Merge run failed after 2 attempts", line.path("message").asText());
        assertEquals("ddb2iceberg-merger", line.path("function").asText());
        assertEquals("req-1", line.path("requestId").asText());
        assertTrue(line.path("snapshotId").isIntegralNumber(), "numbers stay numbers: " + line);
        assertEquals(42, line.path("snapshotId").asLong());
        assertEquals(3, line.path("objects").asInt());
        assertEquals("staging/a.gz", line.path("stagedObject").asText());
        assertTrue(line.path("dryRun").isBoolean(), line.toString());
        assertEquals("java.lang.IllegalStateException", line.path("errorType").asText());
        assertEquals("commit refused", line.path("errorMessage").asText());
        String stack = line.path("stackTrace").toString();
        assertTrue(stack.contains("Caused by: java.io.IOException: HTTP 503"), "the cause is named: " + stack);
        assertTrue(stack.contains("PipelineLoggerTest"), "the frames say where: " + stack);
        assertTrue(line.path("timestamp").asText().endsWith("Z"), line.toString());
    }

    @Test
    void aThrowableAsTheLastArgumentOfAClassicCallIsTheError() {
        LoggerFactory.getLogger("dev.ddb2iceberg.x")
                .warn("Could not delete {}", "a.parquet", new RuntimeException("gone"));
        JsonNode line = onlyLine();
        assertEquals("Could not delete a.parquet", line.path("message").asText());
        assertEquals("gone", line.path("errorMessage").asText());
    }

    @Test
    void theInvocationIsForgottenAfterIt() {
        try (Invocation invocation = Invocation.of("f", "req-2")) {
            LoggerFactory.getLogger("dev.ddb2iceberg.x").info("inside");
        }
        LoggerFactory.getLogger("dev.ddb2iceberg.x").info("after");
        assertFalse(lines().get(1).contains("req-2"), lines().get(1));
    }

    @Test
    void thePipelineLogsAtInfoAndLibrariesOnlyWarn() {
        LoggerFactory.getLogger("dev.ddb2iceberg.x").info("ours");
        LoggerFactory.getLogger("dev.ddb2iceberg.x").debug("our debug");
        LoggerFactory.getLogger("org.apache.iceberg.SnapshotProducer").info("theirs");
        LoggerFactory.getLogger("org.apache.iceberg.SnapshotProducer").warn("their warning");
        LoggerFactory.getLogger("org.example.chatty.Server").warn("quieted by the class-path file");
        List<String> lines = lines();
        assertEquals(2, lines.size(), lines.toString());
        assertTrue(lines.get(0).contains("\"ours\"") && lines.get(1).contains("their warning"), lines.toString());
    }

    @Test
    void lambdaMeansJsonOnStandardOutputAndTheLevelComesFromLambdaOrLogLevel() {
        LogSettings lambda =
                LogSettings.fromEnvironment(Map.of("AWS_LAMBDA_FUNCTION_NAME", "f", "AWS_LAMBDA_LOG_LEVEL", "DEBUG"));
        assertEquals(LogSettings.Format.JSON, lambda.format());
        assertEquals(System.out, lambda.out());
        assertEquals(Level.DEBUG, lambda.levelFor("dev.ddb2iceberg.merge.Merger"));
        assertEquals(Level.WARN, lambda.levelFor("software.amazon.awssdk.request"));
        LogSettings local = LogSettings.fromEnvironment(Map.of("LOG_LEVEL", "error"));
        assertEquals(LogSettings.Format.TEXT, local.format());
        assertEquals(System.err, local.out(), "the CLI keeps standard output for its answers");
        assertEquals(Level.ERROR, local.levelFor("dev.ddb2iceberg.x"));
        assertEquals(Level.ERROR, local.levelFor("org.apache.iceberg.X"), "libraries never louder than the pipeline");
        assertEquals(
                LogSettings.Format.JSON,
                LogSettings.fromEnvironment(Map.of("LOG_FORMAT", "json")).format());
    }

    @Test
    void textLinesShowTheKeyValuesAndTheCause() {
        LogSettings.use(LogSettings.Format.TEXT, new PrintStream(bytes, true, StandardCharsets.UTF_8));
        LoggerFactory.getLogger("dev.ddb2iceberg.stager.StagerHandler")
                .atInfo()
                .addKeyValue("records", 10)
                .addKeyValue("resumeAt", (Object) null)
                .setCause(new RuntimeException("outer", new RuntimeException("inner")))
                .log("Staged the batch");
        String text = bytes.toString(StandardCharsets.UTF_8);
        assertTrue(text.contains("INFO  StagerHandler - Staged the batch records=10"), text);
        assertFalse(text.contains("resumeAt"), "absent values are left out of text: " + text);
        assertTrue(text.contains("Caused by: java.lang.RuntimeException: inner"), text);
    }
}
