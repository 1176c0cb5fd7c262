package dev.ddb2iceberg.embedded;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;

/**
 * For tests: reads the one CloudWatch Embedded Metric Format line a function printed for a run, and
 * checks it is well formed (our namespace, the Table dimension, a number for every declared metric).
 */
public final class MetricLines {
    private static final ObjectMapper JSON = new ObjectMapper();

    private MetricLines() {}

    /** The single line in {@code lines}, checked; throws AssertionError saying what is wrong. */
    public static JsonNode single(List<String> lines, String table) {
        if (lines.size() != 1) {
            throw new AssertionError("expected one metric line per run, got " + lines.size() + ": " + lines);
        }
        JsonNode line;
        try {
            line = JSON.readTree(lines.get(0));
        } catch (IOException e) {
            throw new UncheckedIOException("the metric line is not JSON: " + lines.get(0), e);
        }
        JsonNode directive = line.path("_aws").path("CloudWatchMetrics").path(0);
        check("ddb2iceberg".equals(directive.path("Namespace").asText()), "namespace", line);
        check("[[\"Table\"]]".equals(directive.path("Dimensions").toString()), "dimensions", line);
        check(table.equals(line.path("Table").asText()), "Table dimension value " + table, line);
        check(line.path("_aws").path("Timestamp").asLong() > 0, "timestamp", line);
        for (JsonNode m : directive.path("Metrics")) {
            check(line.path(m.path("Name").asText()).isNumber(), m + " has a value", line);
        }
        return line;
    }

    /** The unit a line declares for {@code metric}, or "(not declared)". */
    public static String unit(JsonNode line, String metric) {
        for (JsonNode m : line.path("_aws").path("CloudWatchMetrics").path(0).path("Metrics")) {
            if (m.path("Name").asText().equals(metric)) {
                return m.path("Unit").asText();
            }
        }
        return "(not declared)";
    }

    /** The metric names a line declares. */
    public static List<String> declared(JsonNode line) {
        List<String> names = new ArrayList<>();
        line.path("_aws")
                .path("CloudWatchMetrics")
                .path(0)
                .path("Metrics")
                .forEach(m -> names.add(m.path("Name").asText()));
        return names;
    }

    private static void check(boolean ok, String what, JsonNode line) {
        if (!ok) {
            throw new AssertionError("metric line: wrong or missing " + what + ": " + line);
        }
    }
}
