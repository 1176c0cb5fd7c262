package dev.ddb2iceberg.table;

import dev.ddb2iceberg.config.ConfigurationException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.iceberg.types.Types;

/**
 * A user's column types, which override inference, from a setting such as
 * {@code price=decimal(12,2), created_at=timestamp(epoch_millis), score=double, tags=json}.
 * Timestamps convert like zero-ETL's ConversionSpec: from epoch seconds or milliseconds (N) or
 * ISO-8601 text (S); the column is {@code timestamptz}, so it can be partitioned by {@code day()}.
 */
public final class TypeHints {
    private static final Pattern DECIMAL = Pattern.compile("decimal\\((\\d+),(\\d+)\\)");
    private static final Pattern TIMESTAMP = Pattern.compile("timestamp\\((epoch_seconds|epoch_millis|iso8601)\\)");
    private static final String TYPES = "string, long, double, decimal(p,s), boolean, binary, json, "
            + "timestamp(epoch_seconds), timestamp(epoch_millis) or timestamp(iso8601)";

    private TypeHints() {}

    /** Attribute name → column; empty for an empty setting. {@code setting} names the variable in errors. */
    public static Map<String, TypeMapping.Column> parse(String text, String setting) {
        Map<String, TypeMapping.Column> hints = new LinkedHashMap<>();
        for (String part : splitOutsideParentheses(text)) {
            if (part.isBlank()) {
                continue;
            }
            int eq = part.indexOf('=');
            if (eq <= 0) {
                throw new ConfigurationException(setting + " has '" + part.trim() + "', which is not attribute=type"
                        + " (e.g. 'price=decimal(12,2),created_at=timestamp(epoch_millis)').");
            }
            String name = part.substring(0, eq).trim();
            String type = part.substring(eq + 1).replace(" ", "").toLowerCase();
            if (name.isEmpty()) {
                throw new ConfigurationException(setting + " has '" + part.trim() + "', which names no attribute.");
            }
            hints.put(name, column(type, name, setting));
        }
        return Map.copyOf(hints);
    }

    private static TypeMapping.Column column(String type, String name, String setting) {
        switch (type) {
            case "string":
                return new TypeMapping.Column(Types.StringType.get(), "S");
            case "long":
                return new TypeMapping.Column(Types.LongType.get(), "N");
            case "double":
                return new TypeMapping.Column(Types.DoubleType.get(), "N");
            case "boolean":
                return new TypeMapping.Column(Types.BooleanType.get(), "BOOL");
            case "binary":
                return new TypeMapping.Column(Types.BinaryType.get(), "B");
            case "json":
                return new TypeMapping.Column(Types.StringType.get(), "JSON");
            default:
                break;
        }
        Matcher d = DECIMAL.matcher(type);
        if (d.matches()) {
            int precision = Integer.parseInt(d.group(1));
            int scale = Integer.parseInt(d.group(2));
            if (precision < 1 || precision > 38 || scale > precision) {
                throw new ConfigurationException(setting + ": " + name + "=" + type
                        + " is not a valid decimal: precision 1 to 38, scale at most the precision.");
            }
            return new TypeMapping.Column(Types.DecimalType.of(precision, scale), "N");
        }
        Matcher t = TIMESTAMP.matcher(type);
        if (t.matches()) {
            String shape = t.group(1).equals("iso8601") ? "S@iso8601" : "N@" + t.group(1);
            return new TypeMapping.Column(Types.TimestampType.withZone(), shape);
        }
        throw new ConfigurationException(
                setting + ": '" + type + "' for attribute " + name + " is not a type; use " + TYPES + ".");
    }

    private static List<String> splitOutsideParentheses(String text) {
        List<String> parts = new ArrayList<>();
        int depth = 0;
        StringBuilder current = new StringBuilder();
        for (char c : text.toCharArray()) {
            if (c == ',' && depth == 0) {
                parts.add(current.toString());
                current.setLength(0);
                continue;
            }
            depth += c == '(' ? 1 : c == ')' ? -1 : 0;
            current.append(c);
        }
        parts.add(current.toString());
        return parts;
    }
}
