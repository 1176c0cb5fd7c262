package dev.ddb2iceberg.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.table.TableLayout;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;

/**
 * Row lineage (format v3) as a reader of it sees the table: each live row's {@code _row_id} and
 * {@code _last_updated_sequence_number} by key, read by Iceberg's own reader.
 */
public final class RowLineageByKey {
    private RowLineageByKey() {}

    /** Each live row's [row id, last updated sequence number], by its key; fails if two rows share a row id. */
    public static Map<List<Object>, List<Long>> read(Table table) {
        TableLayout layout = TableLayout.of(table);
        Schema projection = MetadataColumns.schemaWithRowLineage(table.schema().select(layout.keyColumns()));
        Map<List<Object>, List<Long>> byKey = new HashMap<>();
        Set<Long> rowIds = new HashSet<>();
        try (CloseableIterable<Record> rows =
                IcebergGenerics.read(table).project(projection).build()) {
            for (Record row : rows) {
                List<Long> lineage = Arrays.asList((Long) row.getField(MetadataColumns.ROW_ID.name()), (Long)
                        row.getField(MetadataColumns.LAST_UPDATED_SEQUENCE_NUMBER.name()));
                List<Object> key = layout.keyOf(row);
                assertTrue(lineage.get(0) == null || rowIds.add(lineage.get(0)), "row id of " + key + " taken twice");
                assertEquals(null, byKey.put(key, lineage), "one live row a key: " + key);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return byKey;
    }

    /**
     * After a merge of {@code batch}: each key it changed that is live carries the merge's sequence
     * number, and every other key of {@code before} keeps its lineage. Returns the lineage read.
     */
    public static Map<List<Object>, List<Long>> assertMerged(
            Table table, Map<List<Object>, List<Long>> before, List<Change> batch) {
        Map<List<Object>, List<Long>> after = read(table);
        TableLayout layout = TableLayout.of(table);
        Set<List<Object>> changed = new HashSet<>();
        batch.forEach(c -> changed.add(layout.keyOf(c)));
        long sequence = table.currentSnapshot().sequenceNumber();
        for (List<Object> key : changed) {
            if (after.containsKey(key)) {
                assertEquals(sequence, after.get(key).get(1), "the merge's sequence number for changed key " + key);
            }
        }
        Map<List<Object>, List<Long>> unchanged = new HashMap<>(before);
        unchanged.keySet().removeAll(changed);
        assertKept(unchanged, after);
        return after;
    }

    /** Fails unless each key of {@code before} has the same lineage in {@code after}, naming the first few that differ. */
    public static void assertKept(Map<List<Object>, List<Long>> before, Map<List<Object>, List<Long>> after) {
        List<String> differ = new ArrayList<>();
        before.forEach((key, lineage) -> {
            if (!lineage.equals(after.get(key))) {
                differ.add(key + ": " + lineage + " -> " + after.get(key));
            }
        });
        assertTrue(
                differ.isEmpty(),
                differ.size() + " of " + before.size() + " keys' [_row_id, _last_updated_sequence_number] changed,"
                        + " e.g. " + differ.subList(0, Math.min(3, differ.size())));
    }
}
