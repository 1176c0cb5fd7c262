package dev.ddb2iceberg.merge;

import dev.ddb2iceberg.lookup.LiveRow;
import dev.ddb2iceberg.table.RowLineage;
import dev.ddb2iceberg.table.TableLayout;
import dev.ddb2iceberg.table.TaskRows;
import dev.ddb2iceberg.util.Futures;
import dev.ddb2iceberg.write.MergeWriter;
import dev.ddb2iceberg.write.ParquetRowCopy;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Schema;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.inmemory.InMemoryInputFile;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.SeekableInputStream;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.StructLikeMap;

/**
 * What a merge does with each data file it touches, and which small files it folds in: the part
 * of a merge that keeps the table's shape bounded between compactions.
 *
 * <p>Every merge writes one new file into each partition it writes to. Left alone, a partition
 * would gain a small file a minute, each soon touched by later changes (recent items are the
 * likeliest to change) and given a delete file: after an hour, thousands of files for readers to
 * open. So a merge folds (rewrites) the partition's small files into its new file, touched or not:
 * their live rows, unchanged (sequence column included), go into the new file, and the old files
 * and their deletes are dropped in the same commit. A partition the merge writes to then holds
 * one small file, which grows merge after merge up to {@link MergeOptions#rewriteFilesBelowBytes}
 * and is then left to compaction like any other file.
 *
 * <p>A fold never takes the partition's new file past that threshold: a small file that would is
 * left as it is (given deletes if touched), since it already holds at least the threshold less one
 * merge's rows. When files could grow past it, a busy partition's file was folded one more time:
 * at 100,000 changes a merge into 16 partitions (about 1.8 MB of new rows each), files grew 1.8,
 * 3.6, 5.4 MB against the 4 MB threshold, and the merges moved as many rows as they wrote. Now they
 * end at 3.6 MB after one fold, and the merges move half as many: a quarter less CPU a merge in the
 * first half-hour after a compaction, but over a whole hour the two rules tie, as the rule leaves
 * 1.5 times the data files and each costs every later merge a delete file (BENCHMARKS.md, "Folds
 * that stop at the threshold" and "An hour and a half of merges"). A merge whose new rows alone
 * fill a partition's file folds nothing into it.
 *
 * <p>Each merge folds at most {@link MergeOptions#rewriteBytesPerMerge} bytes of existing files, and
 * moves at most {@link MergeOptions#maxChanges} rows (each is a key index entry, and the key of
 * each is held in memory like the run's changes), so its cost and memory stay bounded: touched
 * small files first (each fold saves a delete file), then the smallest untouched ones. Files the
 * budget leaves are folded by a later merge, and the new file of this one stays within the
 * threshold unless its own new rows pass it.
 *
 * <p>Moving a row costs about what writing a new one does, and at a high write rate a merge still
 * moves about half as many rows as it writes (each partition's new file is folded once before it
 * reaches the threshold). So the rows are copied column value by column value from the folded file into the
 * new one ({@link ParquetRowCopy}), merged in key order with the new rows, never decoded into
 * records: only their keys are read. A file that is not in key order, or whose columns are not the
 * table's (a struct that gained a field since), is read whole instead.
 *
 * <p>In format v3 a moved row keeps its lineage: its row id and last updated sequence number are
 * written into the new file ({@link RowLineage}), as the spec asks of any writer that moves a row,
 * and a folded file's deletion vector goes with it.
 */
final class SmallFileRewrite {
    private final Table table;
    private final MergeOptions options;

    SmallFileRewrite(Table table, MergeOptions options) {
        this.table = table;
        this.options = options;
    }

    /**
     * What the merge does with its files.
     *
     * @param dropped data files removed in the commit (emptied, or folded)
     * @param droppedDeletes the file-scoped deletes of those files, removed with them
     * @param folded the dropped files whose other live rows move into the merge's new files, each
     *     with the rows this merge deletes from it (none for an untouched file)
     * @param positional rows that get position deletes or deletion vectors, in files that stay
     * @param foldedBytes the folded files' size
     * @param untouchedFolded folded files the merge had no change for
     */
    record Plan(
            List<DataFile> dropped,
            List<DeleteFile> droppedDeletes,
            List<Map.Entry<FileScanTask, List<LiveRow>>> folded,
            List<LiveRow> positional,
            long foldedBytes,
            int untouchedFolded) {}

    /**
     * Decides, for each touched file, whether it is dropped (all its live rows go), folded or given
     * deletes, and which untouched small files of the partitions the merge writes rows to are folded
     * too; no fold takes a partition's new file past the threshold ({@link NewFiles}).
     *
     * @param toDelete the live rows the merge deletes
     * @param liveRowsByFile live rows of each file, where known
     * @param files every data file of the snapshot the merge plans against
     * @param newRows how many new rows the merge writes into each partition (of the current spec)
     */
    Plan plan(
            List<LiveRow> toDelete,
            Map<String, Long> liveRowsByFile,
            List<FileScanTask> files,
            StructLikeMap<Integer> newRows) {
        Map<String, List<LiveRow>> byFile = new LinkedHashMap<>();
        toDelete.forEach(r -> byFile.computeIfAbsent(r.task().file().location(), f -> new ArrayList<>())
                .add(r));
        boolean folds = options.rewriteFilesBelowBytes() > 0;
        Budget budget = new Budget(options.rewriteBytesPerMerge(), options.maxChanges());
        NewFiles newFiles = new NewFiles(
                options.rewriteFilesBelowBytes(), newRows, files, table.spec().partitionType());

        List<DataFile> dropped = new ArrayList<>();
        List<DeleteFile> droppedDeletes = new ArrayList<>();
        List<Map.Entry<FileScanTask, List<LiveRow>>> folded = new ArrayList<>();
        List<LiveRow> positional = new ArrayList<>();
        for (Map.Entry<String, List<LiveRow>> e : byFile.entrySet()) {
            FileScanTask task = e.getValue().get(0).task();
            Long live = liveRowsByFile.get(e.getKey());
            if (live != null && live == e.getValue().size()) {
                drop(task, dropped, droppedDeletes); // every live row goes: no delete file to write, read or compact
            } else if (folds && foldable(task) && newFiles.fits(task.file()) && budget.take(task.file())) {
                newFiles.add(task.file());
                drop(task, dropped, droppedDeletes);
                folded.add(Map.entry(task, e.getValue()));
            } else {
                positional.addAll(e.getValue());
            }
        }

        int untouched = 0;
        if (folds && !newRows.isEmpty()) {
            List<FileScanTask> candidates = new ArrayList<>();
            for (FileScanTask task : files) {
                if (!byFile.containsKey(task.file().location())
                        && foldable(task)
                        && newRows.containsKey(task.file().partition())) {
                    candidates.add(task);
                }
            }
            candidates.sort(Comparator.comparingLong(t -> t.file().fileSizeInBytes())); // the most files per byte first
            for (FileScanTask task : candidates) {
                if (!newFiles.fits(task.file())) {
                    continue; // its partition's new file is full; a smaller file of another may still fit
                }
                if (!budget.take(task.file())) {
                    break;
                }
                newFiles.add(task.file());
                drop(task, dropped, droppedDeletes);
                folded.add(Map.entry(task, List.of()));
                untouched++;
            }
        }
        return new Plan(dropped, droppedDeletes, folded, positional, budget.bytes, untouched);
    }

    /** What one merge may fold: bytes of files, and rows (a file's record count bounds the rows it moves). */
    private static final class Budget {
        private final long maxBytes;
        private final long maxRows;
        private long bytes;
        private long rows;

        Budget(long maxBytes, long maxRows) {
            this.maxBytes = maxBytes;
            this.maxRows = maxRows;
        }

        /** Takes the file if it fits what is left. */
        boolean take(DataFile file) {
            if (bytes + file.fileSizeInBytes() > maxBytes || rows + file.recordCount() > maxRows) {
                return false;
            }
            bytes += file.fileSizeInBytes();
            rows += file.recordCount();
            return true;
        }
    }

    /**
     * Each partition's new file as the folds fill it, in bytes, kept within the fold's threshold.
     * Its new rows count at the table's bytes a row (its data files' bytes over their rows: the big
     * files weigh most, so a small file's footer does not pass for row data); the folded files count
     * whole (what the merge deletes from them is not known per file here, and is small beside the rest).
     */
    private static final class NewFiles {
        private final long threshold;
        private final StructLikeMap<Integer> newRows;
        private final double bytesPerRow;
        private final Map<StructLike, Long> bytes;

        NewFiles(
                long threshold,
                StructLikeMap<Integer> newRows,
                List<FileScanTask> files,
                Types.StructType partitionType) {
            this.threshold = threshold;
            this.newRows = newRows;
            long size = 0;
            long rows = 0;
            for (FileScanTask task : files) {
                size += task.file().fileSizeInBytes();
                rows += task.file().recordCount();
            }
            this.bytesPerRow = rows == 0 ? 0 : (double) size / rows;
            this.bytes = StructLikeMap.create(partitionType);
        }

        /** Whether folding {@code file} keeps its partition's new file within the threshold. */
        boolean fits(DataFile file) {
            return size(file) + file.fileSizeInBytes() <= threshold;
        }

        void add(DataFile file) {
            bytes.put(file.partition(), size(file) + file.fileSizeInBytes());
        }

        private long size(DataFile file) {
            Long now = bytes.get(file.partition());
            if (now != null) {
                return now;
            }
            return (long) (newRows.getOrDefault(file.partition(), 0) * bytesPerRow);
        }
    }

    /**
     * Small enough to fold, whole in one task (so all its rows are read), and in the current
     * partition spec (its rows then go to the same partition of the new file).
     */
    private boolean foldable(FileScanTask task) {
        DataFile file = task.file();
        return file.fileSizeInBytes() < options.rewriteFilesBelowBytes()
                && task.start() == 0
                && task.length() >= file.fileSizeInBytes()
                && file.specId() == table.spec().specId();
    }

    /** Drops a data file with its own deletes (deletion vectors, file-scoped position deletes). */
    private static void drop(FileScanTask task, List<DataFile> dropped, List<DeleteFile> droppedDeletes) {
        dropped.add(task.file());
        droppedDeletes.addAll(TaskRows.ownDeletes(task));
    }

    /**
     * What a merge moves out of the files it folds: files whose rows are copied column by column
     * into its new files ({@link MergeWriter.MovedRows}: the usual case), and the rows of any other
     * file as records of the table's current schema, to be written like the merge's new rows.
     */
    record Moved(List<MergeWriter.MovedRows> copied, List<Record> rows) {
        int count() {
            return rows.size() + copied.stream().mapToInt(m -> m.keys().size()).sum();
        }
    }

    /**
     * The live rows of each folded file except those at the positions the merge deletes; the files
     * are read side by side on {@code pool}. A Parquet file sorted by key, of a table whose rows can
     * be copied ({@link ParquetRowCopy#mixes}), is read for its key and sequence columns and row
     * positions only: its rows are copied, not decoded, and merged in key order with the new rows.
     * Any other file's rows are read whole.
     */
    static Moved moved(
            Table table, TableLayout layout, List<Map.Entry<FileScanTask, List<LiveRow>>> files, ExecutorService pool) {
        if (files.isEmpty()) {
            return new Moved(List.of(), List.of());
        }
        boolean copies = ParquetRowCopy.mixes(table.schema());
        List<Future<Object>> reads = new ArrayList<>();
        for (Map.Entry<FileScanTask, List<LiveRow>> f : files) {
            reads.add(pool.submit(() -> {
                Set<Long> gone = new HashSet<>();
                f.getValue().forEach(r -> gone.add(r.position()));
                FileScanTask task = f.getKey();
                if (copies && task.file().format() == FileFormat.PARQUET) {
                    InputFile file = inMemory(table.io().newInputFile(task.file()));
                    MergeWriter.MovedRows sorted = sortedKeys(table, layout, task, file, gone);
                    return sorted != null ? sorted : liveRowsBut(table, task, file, gone);
                }
                return liveRowsBut(table, task, table.io().newInputFile(task.file()), gone);
            }));
        }
        List<MergeWriter.MovedRows> copied = new ArrayList<>();
        List<Record> rows = new ArrayList<>();
        for (Future<Object> read : reads) {
            Object moved = Futures.join(read, "reading small data files to fold");
            if (moved instanceof MergeWriter.MovedRows m) {
                if (m.size() > 0) { // a file with no row left to move is only dropped
                    copied.add(m);
                }
            } else {
                @SuppressWarnings("unchecked")
                List<Record> whole = (List<Record>) moved;
                rows.addAll(whole);
            }
        }
        return new Moved(copied, rows);
    }

    /**
     * The key columns, sequence column and position of each live row of {@code task} not in
     * {@code gone}, in position order, read from {@code file} (the data file's bytes, read once,
     * beside the other folded files: the copy reads them again from memory); null when the rows are
     * not in key order (a file some other writer made), whose rows must then be sorted with the new ones.
     */
    private static MergeWriter.MovedRows sortedKeys(
            Table table, TableLayout layout, FileScanTask task, InputFile file, Set<Long> gone) {
        Schema keys = MergeWriter.MovedRows.projection(table.schema(), layout);
        Comparator<Record> order = layout.keyOrder(keys);
        // By the projection's index: the rows may carry more columns after it (those another
        // writer's equality deletes compare, which the reader adds).
        int position = keys.columns().size() - 1;
        List<Record> out = new ArrayList<>();
        List<Long> positions = new ArrayList<>();
        try (CloseableIterable<Record> rows = TaskRows.read(table, task, keys, file)) {
            Record previous = null;
            for (Record row : rows) {
                long pos = row.get(position, Long.class);
                if (gone.contains(pos)) {
                    continue;
                }
                if (previous != null && order.compare(previous, row) > 0) {
                    return null;
                }
                out.add(row);
                positions.add(pos);
                previous = row;
            }
        } catch (IOException e) {
            throw new UncheckedIOException(
                    "Cannot read the keys of " + task.file().location(), e);
        }
        return new MergeWriter.MovedRows(
                task, file, out, positions.stream().mapToLong(Long::longValue).toArray());
    }

    /** The whole of {@code file} (a small file: folded files are below the fold's threshold), in memory. */
    private static InputFile inMemory(InputFile file) {
        try (SeekableInputStream in = file.newStream()) {
            // Into one array (readNBytes(int) would read 8 KB chunks and copy them over); short: EOFException.
            byte[] bytes = new byte[Math.toIntExact(file.getLength())];
            new DataInputStream(in).readFully(bytes);
            return new InMemoryInputFile(file.location(), bytes);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot read " + file.location(), e);
        }
    }

    /**
     * The live rows of {@code task} (read from {@code file}) not in {@code gone}, as rows of the
     * table's current schema, with their lineage in v3 ({@link RowLineage#ofMovedRows}).
     */
    private static List<Record> liveRowsBut(Table table, FileScanTask task, InputFile file, Set<Long> gone) {
        List<Record> out = new ArrayList<>();
        TaskRows.withPositions(table, task, file, RowLineage.ofMovedRows(table), (position, row) -> {
            if (!gone.contains(position)) {
                out.add(row);
            }
        });
        return out;
    }
}
