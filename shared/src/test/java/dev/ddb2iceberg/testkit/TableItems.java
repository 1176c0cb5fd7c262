package dev.ddb2iceberg.testkit;

import dev.ddb2iceberg.config.RemovalPolicy;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.table.TableLayout;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.OffsetDateTime;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;

/**
 * Reads the whole table back as DynamoDB items, the way a query engine sees it (deletes applied):
 * for tests, the local demo and status checks, never on the merge path.
 */
public final class TableItems {
    private TableItems() {}

    /** Items by their key attributes; a key held by two live rows is an error, reported by name. */
    public static Map<Map<String, DdbValue>, Map<String, DdbValue>> read(Table table) {
        table.refresh();
        TableLayout layout = TableLayout.of(table);
        Map<Map<String, DdbValue>, Map<String, DdbValue>> items = new LinkedHashMap<>();
        try (CloseableIterable<Record> rows = IcebergGenerics.read(table).build()) {
            for (Record row : rows) {
                Map<String, DdbValue> item = layout.toItem(row);
                Map<String, DdbValue> key = new LinkedHashMap<>();
                layout.keyAttributes().forEach(k -> key.put(k, item.get(k)));
                if (items.put(key, item) != null) {
                    throw new IllegalStateException("duplicate rows for key " + key + " in table " + table.name());
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return items;
    }

    /**
     * The removal marks of the table's rows, by key: {@link RemovalPolicy#EXPIRED_AT} and {@link
     * RemovalPolicy#DELETED_AT} (those set) as epoch milliseconds; rows without marks are absent.
     */
    public static Map<Map<String, DdbValue>, Map<String, Long>> marks(Table table) {
        table.refresh();
        TableLayout layout = TableLayout.of(table);
        Map<Map<String, DdbValue>, Map<String, Long>> out = new LinkedHashMap<>();
        try (CloseableIterable<Record> rows = IcebergGenerics.read(table).build()) {
            for (Record row : rows) {
                Map<String, Long> marks = new LinkedHashMap<>();
                for (String column : new String[] {RemovalPolicy.EXPIRED_AT, RemovalPolicy.DELETED_AT}) {
                    if (table.schema().findField(column) != null && row.getField(column) != null) {
                        marks.put(
                                column,
                                ((OffsetDateTime) row.getField(column))
                                        .toInstant()
                                        .toEpochMilli());
                    }
                }
                if (!marks.isEmpty()) {
                    Map<String, DdbValue> item = layout.toItem(row);
                    Map<String, DdbValue> key = new LinkedHashMap<>();
                    layout.keyAttributes().forEach(k -> key.put(k, item.get(k)));
                    out.put(key, marks);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out;
    }
}
