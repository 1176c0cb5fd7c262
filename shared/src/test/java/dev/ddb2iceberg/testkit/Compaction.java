package dev.ddb2iceberg.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.HashSet;
import java.util.Set;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.PartitionKey;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.GenericFileWriterFactory;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.InternalRecordWrapper;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.FanoutDataWriter;
import org.apache.iceberg.io.OutputFileFactory;

/**
 * A minimal compaction for tests: rewrites every live row of the table into new data files with
 * the deletes applied, replacing all data and delete files in one RewriteFiles commit, as a
 * maintenance run would. (The real maintenance function comes with its own issue.)
 */
public final class Compaction {
    private Compaction() {}

    public static void rewriteAll(Table table) {
        table.refresh();
        long snapshotId = table.currentSnapshot().snapshotId();
        Set<DataFile> oldData = new HashSet<>();
        Set<DeleteFile> oldDeletes = new HashSet<>();
        try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
            for (FileScanTask t : tasks) {
                oldData.add(t.file());
                oldDeletes.addAll(t.deletes());
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        GenericFileWriterFactory writers = new GenericFileWriterFactory.Builder(table)
                .dataFileFormat(FileFormat.PARQUET)
                .build();
        OutputFileFactory files = OutputFileFactory.builderFor(table, 1, 1)
                .format(FileFormat.PARQUET)
                .build();
        FanoutDataWriter<Record> writer = new FanoutDataWriter<>(writers, files, table.io(), 128L << 20);
        PartitionKey partition = new PartitionKey(table.spec(), table.schema());
        InternalRecordWrapper wrapper = new InternalRecordWrapper(table.schema().asStruct());
        try (CloseableIterable<Record> rows = IcebergGenerics.read(table).build();
                writer) {
            for (Record row : rows) {
                partition.partition(wrapper.wrap(row));
                writer.write(row, table.spec(), partition);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        table.newRewrite()
                .validateFromSnapshot(snapshotId)
                .rewriteFiles(oldData, oldDeletes, new HashSet<>(writer.result().dataFiles()), Set.of())
                .commit();
    }
}
