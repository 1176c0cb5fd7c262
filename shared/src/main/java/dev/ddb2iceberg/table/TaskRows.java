package dev.ddb2iceberg.table;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.GenericDeleteFilter;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.formats.FormatModelRegistry;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.ContentFileUtil;

/** The live rows of one data file: read with a projection, the file's deletes applied. */
public final class TaskRows {
    private TaskRows() {}

    /**
     * Rows of {@code task} projected to {@code projection} (which may include metadata columns such
     * as the row position); rows its position deletes or deletion vector remove are skipped.
     */
    public static CloseableIterable<Record> read(Table table, FileScanTask task, Schema projection) {
        return read(table, task, projection, table.io().newInputFile(task.file()));
    }

    /** As {@link #read(Table, FileScanTask, Schema)}, with the data file's bytes read from {@code file}. */
    public static CloseableIterable<Record> read(Table table, FileScanTask task, Schema projection, InputFile file) {
        GenericDeleteFilter deletes = new GenericDeleteFilter(table.io(), task, table.schema(), projection);
        return deletes.filter(
                FormatModelRegistry.<Record, Schema>readBuilder(task.file().format(), Record.class, file)
                        .project(deletes.requiredSchema())
                        .idToConstant(RowLineage.inherited(task.file())) // for a projection of the lineage columns
                        .split(task.start(), task.length())
                        .build());
    }

    /**
     * The deletes that belong to this data file alone: its deletion vector or file-scoped position
     * deletes (not partition-scoped ones, which also cover other files). They go with the file when
     * it is dropped, and a new delete file of the file replaces them.
     */
    public static List<DeleteFile> ownDeletes(FileScanTask task) {
        String location = task.file().location();
        return task.deletes().stream()
                .filter(d -> location.equals(ContentFileUtil.referencedDataFileLocation(d)))
                .toList();
    }

    /** What {@link #withPositions} hands over: a live row, as a row of the table's schema, and its position. */
    public interface PositionedRow {
        void accept(long position, Record row);
    }

    /**
     * Hands over every live row of {@code task} as a row of the table's current schema (a copy the
     * caller may keep and change), with its position in the file.
     */
    public static void withPositions(Table table, FileScanTask task, PositionedRow consumer) {
        withPositions(table, task, table.io().newInputFile(task.file()), consumer);
    }

    /** As {@link #withPositions(Table, FileScanTask, PositionedRow)}, with the data file's bytes read from {@code file}. */
    public static void withPositions(Table table, FileScanTask task, InputFile file, PositionedRow consumer) {
        withPositions(table, task, file, table.schema(), consumer);
    }

    /**
     * As {@link #withPositions(Table, FileScanTask, InputFile, PositionedRow)}, the rows of {@code
     * schema}: the table's, or the table's with the lineage columns ({@link RowLineage#ofMovedRows}).
     */
    public static void withPositions(
            Table table, FileScanTask task, InputFile file, Schema schema, PositionedRow consumer) {
        List<Types.NestedField> columns = new ArrayList<>(schema.columns());
        columns.add(MetadataColumns.ROW_POSITION);
        try (CloseableIterable<Record> rows = read(table, task, new Schema(columns), file)) {
            for (Record row : rows) {
                GenericRecord copy = GenericRecord.create(schema);
                for (Types.NestedField c : schema.columns()) {
                    copy.setField(c.name(), row.getField(c.name()));
                }
                consumer.accept((Long) row.getField(MetadataColumns.ROW_POSITION.name()), copy);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(
                    "Cannot read the rows of " + task.file().location(), e);
        }
    }
}
