package dev.ddb2iceberg.table;

import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.GenericDeleteFilter;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.formats.FormatModelRegistry;
import org.apache.iceberg.io.CloseableIterable;

/** The live rows of one data file: read with a projection, the file's deletes applied. */
public final class TaskRows {
  private TaskRows() {}

  /**
   * Rows of {@code task} projected to {@code projection} (which may include metadata columns such
   * as the row position); rows its position deletes or deletion vector remove are skipped.
   */
  public static CloseableIterable<Record> read(Table table, FileScanTask task, Schema projection) {
    GenericDeleteFilter deletes = new GenericDeleteFilter(table.io(), task, table.schema(), projection);
    return deletes.filter(FormatModelRegistry
        .<Record, Schema>readBuilder(task.file().format(), Record.class, table.io().newInputFile(task.file()))
        .project(deletes.requiredSchema())
        .split(task.start(), task.length())
        .build());
  }
}
