package dev.ddb2iceberg.status;

import dev.ddb2iceberg.table.TaskRows;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Table;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.util.StructLikeWrapper;

/**
 * What a full scan of the table's current snapshot opens, from its metadata alone, next to what
 * the same rows would take once compacted: the figure a reader pays for (a GET and a footer per
 * file, a planning entry each).
 *
 * @param dataFiles data files
 * @param deleteFiles distinct delete files (a Puffin file of several deletion vectors counts once)
 * @param partitions partitions holding data files
 * @param liveRows rows after deletes, where the deletes' counts tell (file-scoped ones); an
 *     estimate when partition-scoped deletes exist
 * @param compactedFiles about how many files the same rows would be in once compacted to the
 *     target size: per partition, its live bytes over the target, at least one
 */
public record ScanShape(int dataFiles, int deleteFiles, int partitions, long liveRows, int compactedFiles) {

    /** Data files and delete files: what a full scan opens. */
    public int filesOpened() {
        return dataFiles + deleteFiles;
    }

    /** The shape of the table's current snapshot (one planning of its files). */
    public static ScanShape of(Table table, long targetFileSizeBytes) {
        Counter counter = new Counter();
        if (table.currentSnapshot() != null) {
            try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
                tasks.forEach(counter::add);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        return counter.shape(targetFileSizeBytes);
    }

    /** Counts the planned files of a snapshot, for a caller that plans them anyway (the status). */
    public static final class Counter {
        private int dataFiles;
        private final Set<String> deleteFiles = new HashSet<>();
        private final Map<StructLikeWrapper, double[]> liveBytesByPartition = new HashMap<>();
        private long liveRows;

        public void add(FileScanTask task) {
            dataFiles++;
            long records = task.file().recordCount();
            long deleted = 0; // by its own deletes (file-scoped position deletes, a deletion vector)
            for (DeleteFile d : TaskRows.ownDeletes(task)) {
                deleted += d.recordCount();
            }
            long live = Math.max(0, records - deleted);
            liveRows += live;
            task.deletes().forEach(d -> deleteFiles.add(d.location()));
            StructLikeWrapper partition = StructLikeWrapper.forType(task.spec().partitionType())
                    .set(task.file().partition());
            double liveBytes = records == 0 ? 0 : task.file().fileSizeInBytes() * (double) live / records;
            liveBytesByPartition.computeIfAbsent(partition, p -> new double[1])[0] += liveBytes;
        }

        public ScanShape shape(long targetFileSizeBytes) {
            int compacted = 0;
            for (double[] bytes : liveBytesByPartition.values()) {
                compacted += bytes[0] <= 0 ? 0 : (int) Math.max(1, Math.ceil(bytes[0] / targetFileSizeBytes));
            }
            return new ScanShape(dataFiles, deleteFiles.size(), liveBytesByPartition.size(), liveRows, compacted);
        }
    }

    /** One line for a person: what a full scan opens now, and what a compacted table would. */
    public String text() {
        return String.format(
                "a full scan opens %d files (%d data, %d delete) in %d partitions; compacted, about %d",
                filesOpened(), dataFiles, deleteFiles, partitions, compactedFiles);
    }
}
