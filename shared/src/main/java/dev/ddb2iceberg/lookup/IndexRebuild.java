package dev.ddb2iceberg.lookup;

import dev.ddb2iceberg.index.IndexCache;
import dev.ddb2iceberg.index.IndexEntries;
import dev.ddb2iceberg.index.IndexKeys;
import dev.ddb2iceberg.index.KeyIndex;
import dev.ddb2iceberg.table.TableLayout;
import dev.ddb2iceberg.table.TaskRows;
import dev.ddb2iceberg.util.Futures;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
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
 * foreign commit, or damage), within a memory budget: when the whole index would not fit, it makes
 * several passes over the key columns, each building only a group of parts and writing them out
 * before the next. Reading the key columns again costs time; running out of memory would cost the
 * run, so a table of any size can be indexed by a Lambda of any size.
 */
final class IndexRebuild {
    private static final Logger LOG = LoggerFactory.getLogger(IndexRebuild.class);
    /**
     * Planning figure: memory an entry takes while its part is built (packed key and sequence of a
     * typical 25-byte key, their growing arrays' slack, the sort's order array and the sorted copy).
     */
    static final long BYTES_PER_ENTRY = 150;

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
        // Data files' row counts bound the live rows from above (deleted rows are counted too).
        long rows = tasks.stream().mapToLong(t -> t.file().recordCount()).sum();
        long partBytes = Math.max(1, rows * BYTES_PER_ENTRY / parts);
        int partsPerPass = (int) Math.max(1, Math.min(parts, memoryBytes / partBytes));
        int passes = (parts + partsPerPass - 1) / partsPerPass;
        LOG.info(
                "Building the key index of up to {} rows in {} data files: {} parts, {} pass(es) over the key columns"
                        + " ({} MB memory budget)",
                rows,
                tasks.size(),
                parts,
                passes,
                memoryBytes >> 20);
        KeyIndex.Build build = KeyIndex.newBuild(table, parts, cache);
        Schema projection = ScanLookup.keyColumns(table, layout);
        for (int pass = 0; pass < passes; pass++) {
            long t0 = System.nanoTime();
            int from = pass * partsPerPass;
            int to = Math.min(parts, from + partsPerPass);
            IndexEntries.Builder[] builders = new IndexEntries.Builder[to - from];
            for (int p = 0; p < builders.length; p++) {
                builders[p] = new IndexEntries.Builder();
            }
            List<Future<?>> reads = new ArrayList<>();
            for (FileScanTask task : tasks) {
                reads.add(pool.submit(() -> readInto(table, layout, task, projection, parts, from, builders)));
            }
            reads.forEach(r -> Futures.join(r, "rebuilding the key index"));
            long entries = 0;
            List<Future<?>> writes = new ArrayList<>();
            for (int p = from; p < to; p++) {
                IndexEntries.Builder b = builders[p - from];
                builders[p - from] = null; // each part's memory goes once it is written
                entries += b.size();
                int part = p;
                writes.add(pool.submit(() -> build.writePart(part, b.build())));
            }
            writes.forEach(w -> Futures.join(w, "writing the key index"));
            LOG.info(
                    "Key index pass {} of {}: parts {}-{}, {} entries, {} ms",
                    pass + 1,
                    passes,
                    from,
                    to - 1,
                    entries,
                    (System.nanoTime() - t0) / 1_000_000);
        }
        return build;
    }

    /** The entries of every live row of these data files (a few files: one builder, one pass). */
    static IndexEntries entriesOf(
            Table table, TableLayout layout, Collection<FileScanTask> tasks, ExecutorService pool) {
        IndexEntries.Builder[] all = {new IndexEntries.Builder()};
        Schema projection = ScanLookup.keyColumns(table, layout);
        List<Future<?>> reads = new ArrayList<>();
        for (FileScanTask task : tasks) {
            reads.add(pool.submit(() -> readInto(table, layout, task, projection, 1, 0, all)));
        }
        reads.forEach(r -> Futures.join(r, "reading rewritten data files for the key index"));
        return all[0].build();
    }

    /** Reads one data file's key columns, adding each live row whose part is in this pass to its builder. */
    private static void readInto(
            Table table,
            TableLayout layout,
            FileScanTask task,
            Schema projection,
            int parts,
            int from,
            IndexEntries.Builder[] builders) {
        String file = task.file().location();
        try (CloseableIterable<Record> rows = TaskRows.read(table, task, projection)) {
            for (Record row : rows) {
                byte[] key = IndexKeys.encode(layout.keyOf(row));
                int p = IndexKeys.part(key, parts) - from;
                if (p < 0 || p >= builders.length) {
                    continue; // another pass's part
                }
                byte[] sequence = new BigInteger((String) row.getField(TableLayout.SEQ)).toByteArray();
                long position = (Long) row.getField(MetadataColumns.ROW_POSITION.name());
                synchronized (builders[p]) {
                    builders[p].add(key, file, position, sequence);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
