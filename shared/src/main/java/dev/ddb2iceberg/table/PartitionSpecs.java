package dev.ddb2iceberg.table;

import dev.ddb2iceberg.config.ConfigurationException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;

/**
 * Parses a partition spec written the way Iceberg's SQL writes it: {@code bucket(16, pk)},
 * {@code truncate(4, sku), day(created_at)}, a bare column for identity, or {@code none}.
 */
public final class PartitionSpecs {
    private static final Pattern TERM =
            Pattern.compile("\\s*(\\w+)\\s*(?:\\(\\s*(?:(\\d+)\\s*,\\s*)?([^()\\s,]+)\\s*\\))?\\s*");

    private PartitionSpecs() {}

    /** The default: 16 hash buckets of the partition key, as AWS Glue zero-ETL does. */
    public static String defaultFor(String partitionKey) {
        return "bucket(16, " + partitionKey + ")";
    }

    /**
     * The spec {@code text} describes for a table laid out as {@code layout}. A term may name a
     * column or an attribute (say {@code bucket(16, customerId)} for the column {@code customerid}).
     */
    public static PartitionSpec parse(String text, TableLayout layout) {
        Schema schema = layout.schema();
        PartitionSpec.Builder spec = PartitionSpec.builderFor(schema);
        if (text.isBlank() || text.trim().equalsIgnoreCase("none")) {
            return spec.build();
        }
        for (String term : text.split(",(?![^(]*\\))")) {
            Matcher m = TERM.matcher(term);
            if (!m.matches()) {
                throw bad(text, "cannot read '" + term.trim() + "'");
            }
            String fn = m.group(1).toLowerCase();
            String width = m.group(2);
            String column = m.group(3);
            if (column == null) { // a bare column name: identity
                column = m.group(1);
                fn = "identity";
            }
            if (schema.findField(column) == null && layout.columnOf(column) != null) {
                column = layout.columnOf(column).name(); // an attribute's name: its column
            }
            if (schema.findField(column) == null) {
                throw bad(
                        text,
                        "column '" + column + "' is not in the table (the key columns and attributes seen so far are "
                                + schema.columns().stream().map(f -> f.name()).toList() + ")");
            }
            try {
                switch (fn) {
                    case "identity":
                        spec.identity(column);
                        break;
                    case "bucket":
                        spec.bucket(column, Integer.parseInt(required(width, text, fn)));
                        break;
                    case "truncate":
                        spec.truncate(column, Integer.parseInt(required(width, text, fn)));
                        break;
                    case "year":
                    case "years":
                        spec.year(column);
                        break;
                    case "month":
                    case "months":
                        spec.month(column);
                        break;
                    case "day":
                    case "days":
                        spec.day(column);
                        break;
                    case "hour":
                    case "hours":
                        spec.hour(column);
                        break;
                    default:
                        throw bad(text, "unknown transform '" + fn + "'");
                }
            } catch (IllegalArgumentException e) {
                if (e instanceof ConfigurationException) {
                    throw e;
                }
                throw bad(text, e.getMessage());
            }
        }
        return spec.build();
    }

    private static String required(String width, String text, String fn) {
        if (width == null) {
            throw bad(text, fn + " needs a number first, e.g. " + fn + "(16, column)");
        }
        return width;
    }

    private static ConfigurationException bad(String text, String why) {
        return new ConfigurationException("PARTITION_SPEC='" + text + "': " + why
                + ". Examples: 'bucket(16, pk)', 'truncate(4, sku), bucket(8, pk)', 'none'.");
    }
}
