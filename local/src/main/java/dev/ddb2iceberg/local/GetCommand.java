package dev.ddb2iceberg.local;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.function.MergerSettings;
import dev.ddb2iceberg.model.DdbJson;
import dev.ddb2iceberg.model.DdbNumbers;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.table.TableCreator;
import dev.ddb2iceberg.table.TableLayout;
import dev.ddb2iceberg.table.TypeMapping;
import java.io.Closeable;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * {@code get <pk> [<sk>]}: the table's row for one item, as DynamoDB JSON in the shape
 * {@code aws dynamodb get-item} prints, so it can be set beside the source item. Only that row is
 * read: the scan filters on the key columns, which prunes files by partition and key bounds. The
 * catalog and table are the Merger function's settings (template and env-vars file).
 */
@Command(
        name = "get",
        mixinStandardHelpOptions = true,
        description =
                "Print the table's row for one item as DynamoDB JSON, in the shape `aws dynamodb get-item` prints.")
final class GetCommand implements Callable<Integer> {
    private static final ObjectMapper JSON = new ObjectMapper();

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Parameters(
            index = "0",
            paramLabel = "PK",
            description = "the partition key's value: text, a number as written (7, 12.5), a binary as base64")
    String partitionKey;

    @Parameters(
            index = "1",
            arity = "0..1",
            paramLabel = "SK",
            description = "the sort key's value, if the table has a sort key")
    String sortKey;

    @CommandLine.Mixin
    LocalStackOptions stack;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        MergerSettings settings = MergerSettings.from(new Environment(stack.environment("Merger", err)));
        TableIdentifier id = TableIdentifier.of(
                settings.table().namespace(), settings.table().name());
        Catalog catalog = stack.reach(() -> settings.catalog().load());
        try {
            Table table = stack.reach(() -> TableCreator.loadIfExists(catalog, id));
            if (table == null) {
                err.println("No table " + id + " yet: the merger creates it on its first run.");
                return 1;
            }
            TableLayout layout = TableLayout.of(table);
            Map<String, DdbValue> key = key(layout, id);
            Snapshot snapshot = table.currentSnapshot();
            String item = "item with " + describe(key) + " in " + id
                    + (snapshot == null ? " (no snapshot yet)" : " (snapshot " + snapshot.snapshotId() + ")");

            Expression filter = Expressions.alwaysTrue();
            for (Map.Entry<String, DdbValue> k : key.entrySet()) {
                Types.NestedField keyColumn = layout.columnOf(k.getKey());
                Object column = TypeMapping.keyToColumn(keyColumn.type(), layout.keyDdbType(k.getKey()), k.getValue());
                if (column == TypeMapping.DOES_NOT_FIT) {
                    err.println("No " + item + ": its " + k.getKey() + " column ("
                            + keyColumn.type()
                            + ") cannot hold " + DdbJson.write(k.getValue())
                            + "; the merger sets such changes aside under"
                            + " quarantine/merger/.");
                    return 1;
                }
                filter = Expressions.and(filter, Expressions.equal(keyColumn.name(), column));
            }
            if (snapshot == null) {
                err.println("No " + item);
                return 1;
            }
            Expression where = filter;
            List<Record> rows = stack.reach(() -> read(table, snapshot, where));
            if (rows.isEmpty()) {
                err.println("No " + item);
                return 1;
            }
            if (rows.size() > 1) {
                throw new IllegalStateException(
                        rows.size() + " live rows for the " + item + "; the table should hold one per item");
            }
            err.println(id + " at snapshot " + snapshot.snapshotId() + " (committed "
                    + Instant.ofEpochMilli(snapshot.timestampMillis()) + ")");
            ObjectNode doc = JSON.createObjectNode();
            doc.set("Item", JSON.readTree(DdbJson.writeItem(layout.toItem(rows.get(0)))));
            out.println(awsCliJson(doc));
            out.flush();
            return 0;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            if (catalog instanceof Closeable c) {
                try {
                    c.close();
                } catch (IOException ignored) {
                    // only a read was done
                }
            }
        }
    }

    /** The key from the command line, each value parsed by its DynamoDB type. */
    private Map<String, DdbValue> key(TableLayout layout, TableIdentifier id) {
        List<String> names = layout.keyAttributes();
        if (names.size() == 2 && sortKey == null) {
            throw new UserError(id + " has a sort key, " + names.get(1) + " (" + layout.keyDdbType(names.get(1))
                    + "): give it after the partition key, as in: get <" + names.get(0) + "> <" + names.get(1) + ">");
        }
        if (names.size() == 1 && sortKey != null) {
            throw new UserError(id + " has no sort key (its key is " + names.get(0)
                    + " alone): give only the partition key," + " not '" + sortKey + "'");
        }
        Map<String, DdbValue> key = new LinkedHashMap<>();
        key.put(names.get(0), parse(names.get(0), layout.keyDdbType(names.get(0)), partitionKey));
        if (sortKey != null) {
            key.put(names.get(1), parse(names.get(1), layout.keyDdbType(names.get(1)), sortKey));
        }
        return key;
    }

    /** A key value from its text; a mistake is a UserError saying what to give instead. */
    static DdbValue parse(String name, String ddbType, String text) {
        switch (ddbType) {
            case "N": {
                BigDecimal n;
                try {
                    n = DdbNumbers.check(text);
                } catch (IllegalArgumentException e) {
                    throw new UserError(name + " is a number key (N), and '" + text + "' is not a DynamoDB number ("
                            + e.getMessage() + "); give it as written in DynamoDB, such as 7 or -12.5");
                }
                // DynamoDB's own text for the number (7 for 007 or 7.0), which is what the table holds.
                return new DdbValue.N(
                        n.signum() == 0 ? "0" : n.stripTrailingZeros().toPlainString());
            }
            case "B":
                try {
                    return new DdbValue.B(Base64.getDecoder().decode(text));
                } catch (IllegalArgumentException e) {
                    throw new UserError(name + " is a binary key (B), and '" + text + "' is not base64 ("
                            + e.getMessage() + "); give the bytes in base64, as get-item shows them, such as AQID");
                }
            default:
                return new DdbValue.S(text);
        }
    }

    private static List<Record> read(Table table, Snapshot snapshot, Expression filter) {
        List<Record> rows = new ArrayList<>();
        try (CloseableIterable<Record> found = IcebergGenerics.read(table)
                .useSnapshot(snapshot.snapshotId())
                .where(filter)
                .build()) {
            found.forEach(rows::add);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return rows;
    }

    /** {@code customer_id=C-1, order_id=7}; binaries in base64. */
    private static String describe(Map<String, DdbValue> key) {
        List<String> parts = new ArrayList<>();
        key.forEach((name, v) -> parts.add(name + "="
                + (v instanceof DdbValue.S s
                        ? s.value()
                        : v instanceof DdbValue.N n
                                ? n.text()
                                : Base64.getEncoder().encodeToString(((DdbValue.B) v).bytes()))));
        return String.join(", ", parts);
    }

    /** JSON laid out as the AWS CLI prints it (Python's json.dumps, indent 4): {@code "name": value}. */
    static String awsCliJson(JsonNode node) {
        StringBuilder out = new StringBuilder();
        pretty(node, "", out);
        return out.toString();
    }

    private static void pretty(JsonNode node, String indent, StringBuilder out) {
        if (!node.isContainerNode()) {
            out.append(node); // a scalar as JSON text
            return;
        }
        boolean object = node.isObject();
        if (node.isEmpty()) {
            out.append(object ? "{}" : "[]");
            return;
        }
        List<Map.Entry<String, JsonNode>> entries = new ArrayList<>();
        if (object) {
            entries.addAll(node.properties());
        } else {
            node.elements().forEachRemaining(e -> entries.add(Map.entry("", e)));
        }
        String inner = indent + "    ";
        out.append(object ? "{\n" : "[\n");
        for (int i = 0; i < entries.size(); i++) {
            out.append(inner);
            if (object) {
                out.append(TextNode.valueOf(entries.get(i).getKey())).append(": ");
            }
            pretty(entries.get(i).getValue(), inner, out);
            out.append(i + 1 < entries.size() ? ",\n" : "\n");
        }
        out.append(indent).append(object ? '}' : ']');
    }
}
