package dev.ddb2iceberg.load.parallel;

import dev.ddb2iceberg.index.IndexEntries;
import dev.ddb2iceberg.index.IndexKeys;
import dev.ddb2iceberg.index.KeyIndex;
import dev.ddb2iceberg.lookup.LiveRowLookup;
import dev.ddb2iceberg.lookup.WrittenRow;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.removals.RemovalsIndex;
import dev.ddb2iceberg.table.SchemaEvolution;
import dev.ddb2iceberg.table.TableLayout;
import dev.ddb2iceberg.table.TableSettings;
import dev.ddb2iceberg.write.MergeWriter;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.Record;

/**
 * One worker's running state. Changes are turned into rows in small chunks (a row takes about
 * half the memory of its change), and rows are written once a batch is full: by
 * {@code batchItems}, or by {@link #BATCH_HEAP_SHARE} of the heap in JSON text (rows take about
 * twice their text), so a batch fits whatever the items' size. Each batch writes one file per
 * partition, sorted by key: the bigger the batch, the fewer and bigger the files.
 */
final class WorkerBatches {
    private Table table;
    /** A batch of rows is written once their JSON text reaches this share of the heap (rows take about twice that). */
    static final double BATCH_HEAP_SHARE = 0.2;
    /** Changes turned into rows at a time (into a table with rows: looked up at a time). */
    static final int CHUNK_ITEMS = 10_000;

    static final int LOOKUP_CHUNK_ITEMS = 100_000;

    private final ParallelExportLoad.Plan plan;
    private final String runId;
    private final TableSettings tableSettings;
    private final MergeOptions options;
    private final int batchItems;
    private final long batchBytes;
    final List<DataFile> files = new ArrayList<>();
    private final IndexEntries.Builder[] fragments;
    private final RemovalsIndex removals;
    private final List<Change> pending = new ArrayList<>();
    private final List<Record> rows = new ArrayList<>();
    private long rowBytes;
    long items;
    long written;
    long skipped;
    private int batches;

    WorkerBatches(
            Table table,
            ParallelExportLoad.Plan plan,
            String runId,
            TableSettings tableSettings,
            MergeOptions options,
            int batchItems,
            int activeWorkers) {
        this.table = table;
        this.plan = plan;
        this.runId = runId;
        this.tableSettings = tableSettings;
        this.options = options;
        this.batchItems = batchItems;
        // Workers in one JVM (the local runner) share its heap.
        this.batchBytes = (long) (Runtime.getRuntime().maxMemory() * BATCH_HEAP_SHARE / Math.max(1, activeWorkers));
        this.fragments = new IndexEntries.Builder[plan.indexGroups()];
        for (int g = 0; g < fragments.length; g++) {
            fragments[g] = new IndexEntries.Builder();
        }
        // Nothing expires here: the load writes no removals (the cutoff only matters to folds).
        this.removals = plan.lookups()
                ? RemovalsIndex.open(table, TableLayout.of(table), Long.MIN_VALUE, options.indexCache())
                : null;
    }

    void add(Change c, int bytes, ExecutorService pool) {
        pending.add(c);
        items++;
        rowBytes += bytes;
        // Into a table with rows, each chunk is one look-up in the key index: bigger chunks, fewer reads.
        int chunk = plan.lookups() ? LOOKUP_CHUNK_ITEMS : CHUNK_ITEMS;
        if (pending.size() >= Math.max(1, Math.min(chunk, batchItems / 4))) {
            convert(pool);
        }
        if (rows.size() >= batchItems || rowBytes >= batchBytes) {
            convert(pool);
            write(pool);
        }
    }

    void finish(ExecutorService pool) {
        convert(pool);
        write(pool);
    }

    /** Pending changes to rows; the schema first gains any new columns (rows of the old schema are written first). */
    private void convert(ExecutorService pool) {
        if (pending.isEmpty()) {
            return;
        }
        List<Change> kept = plan.lookups() ? notInTable(pending, pool) : pending;
        skipped += pending.size() - kept.size();
        if (!SchemaEvolution.covers(table, kept, tableSettings)) {
            write(pool); // rows already made have the current schema's shape: write them with it
            table = SchemaEvolution.evolve(table, kept, tableSettings);
        }
        TableLayout layout = TableLayout.of(table);
        for (Change c : kept) {
            rows.add(layout.toRow(c));
        }
        pending.clear();
    }

    private void write(ExecutorService pool) {
        if (rows.isEmpty()) {
            return;
        }
        TableLayout layout = TableLayout.of(table);
        // Each batch its own writer id: file names are made of it, a task number and a counter.
        MergeWriter.Written out = new MergeWriter(table, runId + "-b" + batches++).writeRows(rows, layout, pool);
        files.addAll(out.files());
        written += rows.size();
        if (fragments.length > 0) {
            byte[] sequence = new BigInteger(Long.toString(plan.exportMillis() * 1000)).toByteArray();
            for (WrittenRow r : out.rows()) {
                byte[] key = r.key();
                fragments[IndexKeys.part(key, plan.indexParts()) % fragments.length].add(
                        key, r.file(), r.position(), sequence);
            }
        }
        rows.clear();
        rowBytes = 0;
    }

    /** The changes whose key the table at the plan's snapshot neither holds nor removed since. */
    private List<Change> notInTable(List<Change> batch, ExecutorService pool) {
        Table base = table;
        TableLayout layout = TableLayout.of(base);
        Map<List<Object>, Change> byKey = new HashMap<>();
        for (Change c : batch) {
            List<Object> key = layout.keyOf(c);
            if (key == null) {
                throw new IllegalArgumentException(
                        "Exported item " + c.keys() + " does not fit the table's keys: " + layout.whyKeyDoesNotFit(c));
            }
            byKey.put(key, c);
        }
        List<List<Object>> keys = new ArrayList<>(byKey.keySet());
        LiveRowLookup.Found found = options.lookup(pool).find(base, layout, plan.baseSnapshotId(), keys);
        List<List<Object>> notFound = new ArrayList<>();
        for (int i = 0; i < keys.size(); i++) {
            if (found.rows().get(i).isEmpty()) {
                notFound.add(keys.get(i));
            }
        }
        RemovalsIndex.Known removed = removals.lookup(notFound, pool);
        List<Change> kept = new ArrayList<>();
        for (List<Object> key : notFound) {
            Change c = byKey.get(key);
            if (!removed.removedAfter(key, c.sequenceNumber())) {
                kept.add(c);
            }
        }
        return kept;
    }

    /** One file of index entries per index group (the groups' steps read them). */
    List<String> writeFragments(int workIndex) {
        List<String> names = new ArrayList<>();
        for (int g = 0; g < fragments.length; g++) {
            IndexEntries entries = fragments[g].build();
            fragments[g] = null;
            String name = "load-" + plan.loadId() + "/" + runId + "-g" + g + ".bin";
            KeyIndex.writeFile(table, name, entries);
            names.add(KeyIndex.fileLocation(table, name));
        }
        return names;
    }
}
