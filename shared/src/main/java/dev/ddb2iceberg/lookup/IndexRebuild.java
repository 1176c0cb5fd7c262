package dev.ddb2iceberg.lookup;

import dev.ddb2iceberg.index.IndexCache;
import dev.ddb2iceberg.index.IndexEntries;
import dev.ddb2iceberg.index.IndexKeys;
import dev.ddb2iceberg.index.KeyIndex;
import dev.ddb2iceberg.index.PartSorter;
import dev.ddb2iceberg.model.SequenceNumbers;
import dev.ddb2iceberg.table.TableLayout;
import dev.ddb2iceberg.table.TaskRows;
import dev.ddb2iceberg.util.Futures;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Builds a snapshot's key index from the key columns of its data files (after an upgrade, a
 * foreign commit, or damage), within a memory budget: the key columns are read once, and when the
 * entries would not fit, {@link PartSorter} writes them out as sorted runs and merges those, so a
 * table of any size is indexed in one pass by a Lambda of any size.
 */
final class IndexRebuild {
    private static final Logger LOG = LoggerFactory.getLogger(IndexRebuild.class);

    private IndexRebuild() {}

    /**
     * The index of the snapshot whose data files (with their deletes) are {@code tasks}, written part
     * by part; its files are listed by {@link KeyIndex.Build#files()}.
     */
    static KeyIndex.Build build(
            Table table,
            TableLayout layout,
            Collection<FileScanTask> tasks,
            int parts,
            long memoryBytes,
            IndexCache cache,
            ExecutorService pool) {
        long t0 = System.nanoTime();
        // Data files' row counts bound the live rows from above (deleted rows are counted too).
        long rows = tasks.stream().mapToLong(t -> t.file().recordCount()).sum();
        LOG.info(
                "Building the key index of up to {} rows in {} data files: {} parts, one pass over the key columns"
                        + " ({} MB memory budget)",
                rows,
                tasks.size(),
                parts,
                memoryBytes >> 20);
        KeyIndex.Build build = KeyIndex.newBuild(table, parts, cache);
        Schema projection = ScanLookup.keyColumns(table, layout);
        try (PartSorter sorter = new PartSorter(table, parts, memoryBytes)) {
            List<Future<?>> reads = new ArrayList<>();
            for (FileScanTask task : tasks) {
                reads.add(pool.submit(() -> readInto(table, layout, task, projection, sorter)));
            }
            reads.forEach(r -> Futures.join(r, "rebuilding the key index"));
            long read = System.nanoTime();
            long entries = sorter.writeParts(build);
            LOG.info(
                    "Key index built: {} entries, key columns read in {} ms, parts written in {} ms",
                    entries,
                    (read - t0) / 1_000_000,
                    (System.nanoTime() - read) / 1_000_000);
        }
        return build;
    }

    /** The entries of every live row of these data files (a few files, read at once in memory). */
    static IndexEntries entriesOf(
            Table table, TableLayout layout, Collection<FileScanTask> tasks, ExecutorService pool) {
        IndexEntries.Builder all = new IndexEntries.Builder();
        Schema projection = ScanLookup.keyColumns(table, layout);
        List<Future<?>> reads = new ArrayList<>();
        for (FileScanTask task : tasks) {
            reads.add(pool.submit(() -> eachLiveRow(table, layout, task, projection, (key, file, position, seq) -> {
                synchronized (all) {
                    all.add(key, file, position, seq);
                }
            })));
        }
        reads.forEach(r -> Futures.join(r, "reading rewritten data files for the key index"));
        return all.build();
    }

    /** Reads one data file's key columns into the sorter, a batch at a time. */
    private static void readInto(
            Table table, TableLayout layout, FileScanTask task, Schema projection, PartSorter sorter) {
        PartSorter.Batch batch = new PartSorter.Batch();
        eachLiveRow(table, layout, task, projection, (key, file, position, seq) -> {
            if (batch.add(key, file, position, seq)) {
                sorter.add(batch);
            }
        });
        sorter.add(batch);
    }

    private interface EntrySink {
        void accept(byte[] key, String file, long position, byte[] sequence);
    }

    /** Each live row of one data file (its deletes applied) as an index entry. */
    private static void eachLiveRow(
            Table table, TableLayout layout, FileScanTask task, Schema projection, EntrySink sink) {
        String file = task.file().location();
        try (CloseableIterable<Record> rows = TaskRows.read(table, task, projection)) {
            for (Record row : rows) {
                byte[] key = IndexKeys.encode(layout.keyOf(row));
                byte[] sequence = SequenceNumbers.toBigInteger((String) row.getField(TableLayout.SEQ))
                        .toByteArray();
                long position = (Long) row.getField(MetadataColumns.ROW_POSITION.name());
                sink.accept(key, file, position, sequence);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
