package dev.ddb2iceberg.table;

import java.util.HashMap;
import java.util.Map;
import org.apache.iceberg.ContentFile;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableUtil;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;

/**
 * Row lineage (format v3): each row's {@code _row_id} and {@code _last_updated_sequence_number}.
 * A row written once inherits both from its data file (the file's first row id plus its position,
 * and the file's data sequence number), so a merge's new rows need nothing written. A row that
 * is only moved to another file, as compaction moves it, must keep both: the spec says the values
 * are then written into the new file as columns, and a reader takes a written value over the
 * inherited one. Without that, every compaction gave every row it moved a new id and the
 * compaction's sequence number, as if the row had changed. The same holds for the rows a merge
 * moves out of the small files it folds.
 */
public final class RowLineage {
    private RowLineage() {}

    /** Whether the table keeps row lineage: format v3 and later. */
    public static boolean kept(Table table) {
        return TableUtil.formatVersion(table) >= 3;
    }

    /**
     * The schema files that move rows are written with: the table's, and in v3 the two lineage
     * columns after its own. A table with a column of a lineage column's name (an item attribute
     * named {@code _row_id} or {@code _last_updated_sequence_number}) cannot have both in one file:
     * its files are written with the table's columns, and the rows moved get new lineage, as every
     * moved row did before lineage was kept.
     */
    public static Schema ofMovedRows(Table table) {
        Schema schema = table.schema();
        boolean nameTaken = schema.findField(MetadataColumns.ROW_ID.name()) != null
                || schema.findField(MetadataColumns.LAST_UPDATED_SEQUENCE_NUMBER.name()) != null;
        return kept(table) && !nameTaken ? MetadataColumns.schemaWithRowLineage(schema) : schema;
    }

    /**
     * {@code row} as a row of {@code moved} (from {@link #ofMovedRows}): a new row of the table's
     * schema gets the two lineage columns as nulls, so the new file's own first row id and sequence
     * number give it lineage; a row that has them already (a moved row) is returned as it is.
     */
    public static Record widen(Record row, Types.StructType moved) {
        if (row.size() == moved.fields().size()) {
            return row;
        }
        GenericRecord wide = GenericRecord.create(moved);
        for (int i = 0; i < row.size(); i++) {
            wide.set(i, row.get(i));
        }
        return wide;
    }

    /**
     * What a reader needs to give a file's rows their lineage where the file does not hold it: the
     * file's first row id (null for a file not committed yet, or committed before v3: its rows have
     * none) and its data sequence number, by field id, as Iceberg's readers take constants.
     */
    public static Map<Integer, Object> inherited(ContentFile<?> file) {
        Map<Integer, Object> constants = new HashMap<>();
        if (file.firstRowId() != null) {
            constants.put(MetadataColumns.ROW_ID.fieldId(), file.firstRowId());
        }
        constants.put(MetadataColumns.LAST_UPDATED_SEQUENCE_NUMBER.fieldId(), file.dataSequenceNumber());
        return constants;
    }
}
