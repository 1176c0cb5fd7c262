package dev.ddb2iceberg.testkit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ddb2iceberg.observe.LogSettings;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * For tests: switches the pipeline's logging to JSON, as in Lambda, and keeps the lines
 * ({@code try (LogCapture logs = LogCapture.json()) {…}}). Every line must parse as JSON; the
 * previous settings come back on close.
 */
public final class LogCapture implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    private final LogSettings before;

    private LogCapture() {
        before = LogSettings.use(LogSettings.Format.JSON, new PrintStream(bytes, true, StandardCharsets.UTF_8));
    }

    public static LogCapture json() {
        return new LogCapture();
    }

    /** The lines logged by the invocation with this request id (other threads may log meanwhile). */
    public List<JsonNode> lines(String requestId) {
        List<JsonNode> mine = new ArrayList<>();
        for (JsonNode line : all()) {
            if (requestId.equals(line.path("requestId").asText())) {
                mine.add(line);
            }
        }
        return mine;
    }

    /** The one line of this invocation whose message starts with {@code prefix}; fails naming what it saw. */
    public JsonNode line(String requestId, String prefix) {
        List<JsonNode> found = lines(requestId).stream()
                .filter(l -> l.path("message").asText().startsWith(prefix))
                .toList();
        if (found.size() != 1) {
            throw new AssertionError("expected one log line starting \"" + prefix + "\" for request " + requestId
                    + ", got " + found.size() + " among: " + lines(requestId));
        }
        return found.get(0);
    }

    public List<JsonNode> all() {
        List<JsonNode> lines = new ArrayList<>();
        for (String text : bytes.toString(StandardCharsets.UTF_8).split("\n")) {
            if (text.isBlank()) {
                continue;
            }
            try {
                lines.add(JSON.readTree(text));
            } catch (IOException e) {
                throw new UncheckedIOException("a log line is not JSON: " + text, e);
            }
        }
        return lines;
    }

    @Override
    public void close() {
        LogSettings.restore(before);
    }
}
