package dev.ddb2iceberg.observe;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.slf4j.event.KeyValuePair;
import org.slf4j.event.Level;

/**
 * One log record, written as one JSON object per line (for CloudWatch Logs Insights: its field
 * names follow Lambda's own JSON logs — {@code timestamp}, {@code level}, {@code message},
 * {@code requestId}, {@code errorType}, {@code errorMessage}, {@code stackTrace}) or as one line of
 * text with {@code key=value} pairs for people at a terminal.
 */
record LogLine(
        Level level,
        String logger,
        String message,
        Map<String, String> context,
        List<KeyValuePair> pairs,
        Throwable error) {
    private static final JsonFactory JSON = new JsonFactory();
    private static final DateTimeFormatter TIME =
            DateTimeFormatter.ofPattern("HH:mm:ss.SSS").withZone(ZoneId.systemDefault());
    /** Stack frames kept per exception: enough to place it, short enough to read in a log. */
    static final int FRAMES = 12;

    String format(LogSettings.Format format) {
        return format == LogSettings.Format.JSON ? json(Instant.now()) : text(Instant.now());
    }

    String json(Instant now) {
        StringWriter w = new StringWriter(256);
        try (JsonGenerator g = JSON.createGenerator(w)) {
            g.writeStartObject();
            g.writeStringField("timestamp", now.toString());
            g.writeStringField("level", level.name());
            g.writeStringField("logger", logger);
            g.writeStringField("message", message);
            if (context != null) {
                for (Map.Entry<String, String> e : context.entrySet()) {
                    g.writeStringField(e.getKey(), e.getValue());
                }
            }
            for (KeyValuePair p : pairs) {
                g.writeFieldName(p.key);
                writeValue(g, p.value);
            }
            if (error != null) {
                g.writeStringField("errorType", error.getClass().getName());
                g.writeStringField("errorMessage", String.valueOf(error.getMessage()));
                g.writeArrayFieldStart("stackTrace");
                for (String frame : stackTrace(error)) {
                    g.writeString(frame);
                }
                g.writeEndArray();
            }
            g.writeEndObject();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return w.toString();
    }

    /** Numbers and booleans stay JSON numbers and booleans, so Logs Insights can compute with them. */
    private static void writeValue(JsonGenerator g, Object v) throws IOException {
        if (v == null) {
            g.writeNull();
        } else if (v instanceof Integer || v instanceof Long || v instanceof Short || v instanceof Byte) {
            g.writeNumber(((Number) v).longValue());
        } else if (v instanceof Number && Double.isFinite(((Number) v).doubleValue())) {
            g.writeNumber(((Number) v).doubleValue());
        } else if (v instanceof Boolean) {
            g.writeBoolean((Boolean) v);
        } else {
            g.writeString(v.toString());
        }
    }

    String text(Instant now) {
        StringBuilder b = new StringBuilder(128)
                .append(TIME.format(now))
                .append(' ')
                .append(String.format("%-5s", level.name()))
                .append(' ')
                .append(logger.substring(logger.lastIndexOf('.') + 1))
                .append(" - ")
                .append(message);
        for (KeyValuePair p : pairs) {
            if (p.value == null) {
                continue;
            }
            b.append(' ').append(p.key).append('=').append(p.value);
        }
        if (error != null) {
            b.append(System.lineSeparator()).append(error);
            for (String frame : LogSettings.textStackTraces() ? stackTrace(error) : List.<String>of()) {
                b.append(System.lineSeparator()).append("    ").append(frame);
            }
        }
        return b.toString();
    }

    /**
     * The first {@link #FRAMES} frames of the error and of each cause, each cause introduced by a
     * "Caused by:" line as Java prints it.
     */
    static List<String> stackTrace(Throwable error) {
        List<String> lines = new ArrayList<>();
        Throwable t = error;
        for (int depth = 0; t != null && depth < 10; depth++, t = t.getCause()) {
            if (depth > 0) {
                lines.add("Caused by: " + t);
            }
            StackTraceElement[] frames = t.getStackTrace();
            for (int i = 0; i < Math.min(FRAMES, frames.length); i++) {
                lines.add("at " + frames[i]);
            }
            if (frames.length > FRAMES) {
                lines.add("... " + (frames.length - FRAMES) + " more");
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return lines;
    }
}
