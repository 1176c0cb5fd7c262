package dev.ddb2iceberg.maintenance;

import dev.ddb2iceberg.history.ChangeHistory;
import dev.ddb2iceberg.storage.ObjectPaths;
import dev.ddb2iceberg.table.TaskRows;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileContent;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.io.CloseableIterable;

/**
 * What compaction rewrites, and in which order: work that follows the changes, never the table's size.
 *
 * <ul>
 *   <li>A file is rewritten when {@link MaintenanceOptions#deleteRatio} of its rows are deleted (its
 *       own position deletes or deletion vector say how many), or when deletes other writers left
 *       (equality deletes, partition-scoped position deletes) apply to it. A big file with few
 *       deletes is left alone however many merges touched it: the merger keeps one delete file per
 *       data file, so readers pay one open for it.
 *   <li>A file is small below {@link #smallFileBytes} (an eighth of the target). A partition's small
 *       files are packed into groups of up to the target size, and a group is rewritten once it has
 *       {@link MaintenanceOptions#minInputFiles} files, or holds a small file's worth of rows in two
 *       or more, or one of its files has deletes to apply. Files between small and the target are
 *       healthy and never picked for their size: so a partition's growing tail is re-copied only
 *       while it is small, and an hour's compaction stays a multiple of the hour's changes.
 *   <li>A partition's newest file, while small, is left to the merger, which folds a partition's
 *       small files into its new file at every merge that writes there: the merger keeps its
 *       partitions' newest file growing, compaction takes the rest, and they never race for the same
 *       file. (The merger does not fold into the change history, whose every small file compaction
 *       takes.)
 *   <li>Groups are ordered by benefit per byte read: the deleted bytes they drop, plus {@link
 *       #FILE_COST_BYTES} for every file (data or delete) fewer a reader opens, over the bytes they
 *       read. A bounded run then does the most useful part of the work first.
 * </ul>
 */
final class CompactionPlanner {
    /**
     * What opening one more file costs a reader, as bytes of scanning: an S3 request's ~20-50 ms at a
     * scan's ~100 MB/s. The merger folds files below the same size into its new files.
     */
    static final long FILE_COST_BYTES = 4L << 20;

    /** One group: data files of one partition rewritten together into new files of the table's spec. */
    record Group(int specId, StructLike partition, List<FileScanTask> tasks, long bytes, double benefitPerByte) {
        int files() {
            return tasks.size();
        }
    }

    private final MaintenanceOptions options;

    CompactionPlanner(MaintenanceOptions options) {
        this.options = options;
    }

    /** A data file below this size is small: packed with its partition's other small files. */
    long smallFileBytes() {
        return options.targetFileSizeBytes() / 8;
    }

    /** The groups worth rewriting in {@code snapshot}, the most benefit per byte first. */
    List<Group> plan(Table table, Snapshot snapshot) {
        // Per partition (by spec and partition value, in a stable order): its small files, and its big files to rewrite
        // alone.
        Map<String, List<FileScanTask>> small = new TreeMap<>();
        List<Group> groups = new ArrayList<>();
        try (CloseableIterable<FileScanTask> tasks = table.newScan()
                .useSnapshot(snapshot.snapshotId())
                .ignoreResiduals()
                .planFiles()) {
            for (FileScanTask task : tasks) {
                if (task.file().fileSizeInBytes() < smallFileBytes()) {
                    small.computeIfAbsent(partitionKey(task), k -> new ArrayList<>())
                            .add(task);
                } else if (worthRewriting(task)) {
                    groups.add(group(List.of(task)));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        // The change history only gains files (the merger appends its changes), so it has no file of the merger's.
        boolean mergerFolds = !ChangeHistory.isHistory(table);
        for (List<FileScanTask> files : small.values()) {
            if (mergerFolds) {
                files.remove(newest(files));
            }
            groups.addAll(packSmall(files));
        }
        groups.sort(Comparator.comparingDouble(Group::benefitPerByte).reversed());
        return groups;
    }

    /**
     * A partition's newest file: the merger folds a partition's small files into its
     * new file at every merge that writes there, so while small it is the merger's to grow. Taking it
     * would make compaction and the next merge race for it; left alone, it is at most one small file
     * per partition.
     */
    private static FileScanTask newest(List<FileScanTask> files) {
        return files.stream()
                .max(Comparator.comparingLong((FileScanTask t) -> t.file().dataSequenceNumber())
                        .thenComparing(t -> t.file().location()))
                .orElseThrow();
    }

    /** Packs a partition's small files (smallest first) into groups of up to the target's live bytes; keeps those worth it. */
    private List<Group> packSmall(List<FileScanTask> files) {
        files.sort(Comparator.comparingLong((FileScanTask t) -> t.file().fileSizeInBytes())
                .thenComparing(t -> t.file().location()));
        List<Group> out = new ArrayList<>();
        List<FileScanTask> current = new ArrayList<>();
        long live = 0;
        for (FileScanTask task : files) {
            long taskLive = liveBytes(task);
            if (!current.isEmpty() && live + taskLive > options.targetFileSizeBytes()) {
                addIfWorthIt(current, live, out);
                current = new ArrayList<>();
                live = 0;
            }
            current.add(task);
            live += taskLive;
        }
        addIfWorthIt(current, live, out);
        return out;
    }

    private void addIfWorthIt(List<FileScanTask> files, long live, List<Group> out) {
        boolean worth = files.size() >= options.minInputFiles()
                || (files.size() >= 2 && live >= smallFileBytes())
                || files.stream().anyMatch(this::worthRewriting);
        if (worth) {
            out.add(group(files));
        }
    }

    /**
     * Enough of its rows deleted, deletes the merger did not write that readers must apply, or a
     * delete file under a path with an empty segment (written before 2026-12-08 for unpartitioned
     * tables: readers that normalise paths cannot find it, see {@link ObjectPaths}).
     */
    boolean worthRewriting(FileScanTask task) {
        return deletedShare(task) >= options.deleteRatio()
                || hasSharedDeletes(task)
                || task.deletes().stream().anyMatch(d -> ObjectPaths.hasEmptySegment(d.location()));
    }

    /** The share of the file's rows its own deletes remove (0 to 1). */
    static double deletedShare(FileScanTask task) {
        long rows = task.file().recordCount();
        return rows == 0 ? 1.0 : Math.min(1.0, (double) deletedRows(task) / rows);
    }

    private static long deletedRows(FileScanTask task) {
        long deleted = 0;
        for (DeleteFile d : TaskRows.ownDeletes(task)) {
            deleted += d.recordCount();
        }
        return deleted;
    }

    /** Equality deletes, or position deletes that cover other files too: another writer's. */
    private static boolean hasSharedDeletes(FileScanTask task) {
        List<DeleteFile> own = TaskRows.ownDeletes(task);
        return task.deletes().stream().anyMatch(d -> d.content() == FileContent.EQUALITY_DELETES || !own.contains(d));
    }

    private static long liveBytes(FileScanTask task) {
        return (long) (task.file().fileSizeInBytes() * (1 - deletedShare(task)));
    }

    private Group group(List<FileScanTask> tasks) {
        long bytes = 0;
        double deletedBytes = 0;
        long live = 0;
        int deleteFiles = 0;
        for (FileScanTask t : tasks) {
            bytes += t.file().fileSizeInBytes();
            deletedBytes += t.file().fileSizeInBytes() * deletedShare(t);
            live += liveBytes(t);
            deleteFiles += TaskRows.ownDeletes(t).size();
        }
        long outputs = Math.max(1, (live + options.targetFileSizeBytes() - 1) / options.targetFileSizeBytes());
        long filesFewer = tasks.size() + deleteFiles - outputs;
        double benefit = deletedBytes + (double) FILE_COST_BYTES * Math.max(0, filesFewer);
        FileScanTask first = tasks.get(0);
        return new Group(
                first.file().specId(),
                first.file().partition(),
                List.copyOf(tasks),
                bytes,
                benefit / Math.max(1, bytes));
    }

    /** Spec and partition value, as a stable text key. */
    private static String partitionKey(FileScanTask task) {
        return task.file().specId() + "/"
                + task.spec().partitionToPath(task.file().partition());
    }
}
