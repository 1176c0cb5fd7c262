package dev.ddb2iceberg.table;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ddb2iceberg.write.MergeWriter;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;

/**
 * {@link TableLayout#keyOf(Record)} reads the key columns by position for the table's own rows and for
 * projections that start with the key columns, and by name for any other row: each must give the
 * same key, whatever the order of the row's columns.
 */
class TableLayoutKeyTest {
    /** A table whose key columns are not its first columns, so a position mix-up shows. */
    private static final Schema TABLE = new Schema(
            Types.NestedField.optional(1, "note", Types.StringType.get()),
            Types.NestedField.required(2, "sk", Types.LongType.get()),
            Types.NestedField.required(3, "pk", Types.StringType.get()),
            Types.NestedField.optional(4, TableLayout.SEQ, Types.StringType.get()));

    private static final TableLayout LAYOUT =
            TableLayout.of(TABLE, TableLayout.keysProperty(keyTypes()), ColumnNames.of(Map.of()));

    private static Map<String, String> keyTypes() {
        Map<String, String> keys = new LinkedHashMap<>();
        keys.put("pk", "S");
        keys.put("sk", "N");
        return keys;
    }

    @Test
    void keyOfTheTablesOwnRowsIsReadFromTheKeyColumnsWhereverTheyAre() {
        Record row = GenericRecord.create(TABLE);
        row.setField("note", "a note");
        row.setField("sk", 7L);
        row.setField("pk", "user#1");
        assertEquals(List.of("user#1", 7L), LAYOUT.keyOf(row));
    }

    @Test
    void keyOfAMovedRowsProjectionIsReadFromItsFirstColumns() {
        Schema keys = MergeWriter.MovedRows.projection(TABLE, LAYOUT);
        // The key columns in the table's order (the sort key first here), then sequence and position.
        assertEquals(
                List.of("sk", "pk", TableLayout.SEQ, MetadataColumns.ROW_POSITION.name()),
                keys.columns().stream().map(Types.NestedField::name).toList());
        Record row = GenericRecord.create(keys);
        row.set(0, 9L);
        row.set(1, "user#2");
        row.set(2, "0001");
        row.set(3, 12L);
        assertEquals(List.of("user#2", 9L), LAYOUT.keyOf(row));
    }

    @Test
    void keyOfAnyOtherRowIsReadByName() {
        // The key columns in another order, after another column: neither the table's rows nor a
        // projection that starts with the keys.
        Schema other = new Schema(
                Types.NestedField.optional(4, TableLayout.SEQ, Types.StringType.get()),
                Types.NestedField.required(2, "sk", Types.LongType.get()),
                Types.NestedField.required(3, "pk", Types.StringType.get()));
        Record row = GenericRecord.create(other);
        row.setField(TableLayout.SEQ, "0001");
        row.setField("sk", 3L);
        row.setField("pk", "user#3");
        assertEquals(List.of("user#3", 3L), LAYOUT.keyOf(row));
        // The same columns under the table's own schema, rebuilt (an equal struct, not the same one).
        Record copy = GenericRecord.create(new Schema(TABLE.columns()));
        copy.setField("sk", 4L);
        copy.setField("pk", "user#4");
        assertEquals(List.of("user#4", 4L), LAYOUT.keyOf(copy));
    }

    @Test
    void aRowWithoutAKeyValueNamesTheColumn() {
        Record row = GenericRecord.create(TABLE);
        row.setField("pk", "user#5");
        NullPointerException e = assertThrows(NullPointerException.class, () -> LAYOUT.keyOf(row));
        assertEquals("sk", e.getMessage());
    }
}
