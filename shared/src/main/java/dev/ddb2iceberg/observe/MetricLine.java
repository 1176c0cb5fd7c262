package dev.ddb2iceberg.observe;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Clock;

/**
 * One CloudWatch Embedded Metric Format line: printed to standard output, Lambda's log pipeline
 * turns its values into metrics in the {@code ddb2iceberg} namespace, with the table as the
 * dimension, at no API cost and with no IAM permission. The alarms in template.yaml read them.
 */
public final class MetricLine {
    public static final String NAMESPACE = "ddb2iceberg";
    private static final ObjectMapper JSON = new ObjectMapper();

    private final ObjectNode root = JSON.createObjectNode();
    private final ArrayNode definitions;

    private MetricLine(String table, Clock clock) {
        ObjectNode aws = root.putObject("_aws");
        aws.put("Timestamp", clock.millis());
        ObjectNode directive = aws.putArray("CloudWatchMetrics").addObject();
        directive.put("Namespace", NAMESPACE);
        directive.putArray("Dimensions").addArray().add("Table");
        definitions = directive.putArray("Metrics");
        root.put("Table", table);
    }

    /** A line for the given table ({@code namespace.name}). */
    public static MetricLine forTable(String table, Clock clock) {
        return new MetricLine(table, clock);
    }

    public MetricLine count(String name, long value) {
        return metric(name, value, "Count");
    }

    public MetricLine seconds(String name, long value) {
        return metric(name, value, "Seconds");
    }

    public MetricLine bytes(String name, long value) {
        return metric(name, value, "Bytes");
    }

    public MetricLine milliseconds(String name, long value) {
        return metric(name, value, "Milliseconds");
    }

    private MetricLine metric(String name, long value, String unit) {
        definitions.addObject().put("Name", name).put("Unit", unit);
        root.put(name, value);
        return this;
    }

    /** The line, one JSON object without line breaks, as EMF requires. */
    @Override
    public String toString() {
        return root.toString();
    }
}
