package dev.ddb2iceberg.index;

import dev.ddb2iceberg.util.Futures;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.iceberg.Table;
import org.apache.iceberg.io.SupportsBulkOperations;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sorts the entries of a new index (a rebuild from the table's key columns) into its parts within
 * a memory budget: an external sort in one pass over the table. Entries are collected part by part
 * in memory; when they pass half the budget, each part's entries are sorted and written to storage
 * as a run (a part file of its own), and collection goes on. At the end each part's runs are read
 * back and merged, a few parts at a time, into the part the index keeps.
 *
 * <p>Against reading the table's key columns once per group of parts that fits the budget (what
 * this replaced), the table is read once whatever its size: a 1B-row index in a 10 GB Lambda is
 * one pass instead of about 32. The runs cost a write and a read of about the index's size.
 */
public final class PartSorter implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(PartSorter.class);

    private final Table table;
    private final int parts;
    private final long memoryBytes;
    private final String runPrefix;
    private final int threads = Runtime.getRuntime().availableProcessors();
    private final ExecutorService workers;
    private final IndexEntries.Builder[] collecting;
    private final List<List<IndexManifest.Part>> runs = new ArrayList<>();
    private long collectedBytes;
    private long added;
    private int spills;

    /** @param memoryBytes what collecting and merging may hold at once */
    public PartSorter(Table table, int parts, long memoryBytes) {
        this.table = table;
        this.parts = parts;
        this.memoryBytes = memoryBytes;
        this.runPrefix = KeyIndex.directory(table) + "rebuild-" + UUID.randomUUID() + "/run-";
        this.workers = Executors.newFixedThreadPool(threads, r -> {
            Thread t = new Thread(r, "key-index-sort");
            t.setDaemon(true);
            return t;
        });
        this.collecting = new IndexEntries.Builder[parts];
        for (int p = 0; p < parts; p++) {
            collecting[p] = new IndexEntries.Builder();
            runs.add(new ArrayList<>());
        }
    }

    /**
     * A reader's entries, gathered without a lock and handed over together with {@link #add}, so
     * readers on many threads take the sorter's lock once per few thousand rows, not once a row.
     */
    public static final class Batch {
        static final int SIZE = 4096;
        private final byte[][] keys = new byte[SIZE][];
        private final String[] files = new String[SIZE];
        private final long[] positions = new long[SIZE];
        private final byte[][] sequences = new byte[SIZE][];
        private int n;

        /** Adds an entry; true when the batch is full and should be handed over. */
        public boolean add(byte[] key, String file, long position, byte[] sequence) {
            keys[n] = key;
            files[n] = file;
            positions[n] = position;
            sequences[n] = sequence;
            return ++n == SIZE;
        }
    }

    /** Takes a batch's entries (and empties it); past half the budget, writes what is held as runs. */
    public synchronized void add(Batch batch) {
        for (int i = 0; i < batch.n; i++) {
            byte[] key = batch.keys[i];
            collecting[IndexKeys.part(key, parts)].add(key, batch.files[i], batch.positions[i], batch.sequences[i]);
            // What an entry costs the builder: its bytes, four arrays' slots, their growth slack.
            collectedBytes += key.length + batch.sequences[i].length + 36;
        }
        added += batch.n;
        batch.n = 0;
        if (collectedBytes > memoryBytes / 2) {
            spill();
        }
    }

    /** Entries taken so far. */
    public synchronized long added() {
        return added;
    }

    /**
     * Sorts each part's collected entries and writes them as one run of that part, on every core;
     * readers wait for the lock meanwhile, which keeps memory within the budget.
     */
    private void spill() {
        long t0 = System.nanoTime();
        List<Future<?>> writes = new ArrayList<>();
        int spill = spills++;
        for (int p = 0; p < parts; p++) {
            IndexEntries.Builder b = collecting[p];
            collecting[p] = new IndexEntries.Builder();
            if (b.size() == 0) {
                continue;
            }
            int part = p;
            writes.add(workers.submit(() -> {
                IndexManifest.Part run = KeyIndex.writePart(
                        table.io(), null, runPrefix + spill + "-part-" + part + ".bin", b.build(), 0);
                synchronized (runs) {
                    runs.get(part).add(run);
                }
            }));
        }
        writes.forEach(w -> Futures.join(w, "writing a sorted run of the key index"));
        LOG.info(
                "Key index rebuild: {} entries read so far; run {} written ({} MB held) in {} ms",
                added,
                spill + 1,
                collectedBytes >> 20,
                (System.nanoTime() - t0) / 1_000_000);
        collectedBytes = 0;
    }

    /**
     * Writes every part into {@code build}: straight from memory when nothing was spilled (the index
     * fitted the budget), else by merging each part's runs, as many parts at once as the budget holds.
     * Returns the entries written.
     */
    public synchronized long writeParts(KeyIndex.Build build) {
        if (spills == 0) {
            List<Future<?>> writes = new ArrayList<>();
            for (int p = 0; p < parts; p++) {
                IndexEntries.Builder b = collecting[p];
                collecting[p] = null; // each part's memory goes once it is written
                int part = p;
                writes.add(workers.submit(() -> build.writePart(part, b.build())));
            }
            writes.forEach(w -> Futures.join(w, "writing the key index"));
            return added;
        }
        spill();
        long largest = 1;
        for (List<IndexManifest.Part> partRuns : runs) {
            largest = Math.max(
                    largest,
                    partRuns.stream().mapToLong(IndexManifest.Part::length).sum());
        }
        // A merge holds its runs as stored and the part it encodes (a growing buffer and its copy):
        // about four times the runs' bytes, whatever the entries' count.
        int atOnce = (int) Math.max(1, Math.min(threads, memoryBytes / (4 * largest)));
        LOG.info(
                "Key index rebuild: merging the {} runs of each of {} parts, {} parts at a time",
                spills,
                parts,
                atOnce);
        ExecutorService merges = Executors.newFixedThreadPool(atOnce);
        try {
            List<Future<?>> writes = new ArrayList<>();
            for (int p = 0; p < parts; p++) {
                int part = p;
                writes.add(merges.submit(() -> merge(part, build)));
            }
            writes.forEach(w -> Futures.join(w, "merging the key index's runs"));
        } finally {
            merges.shutdown();
        }
        return added;
    }

    /**
     * Merges one part's runs (each sorted) into the part, streaming: entries go from the runs' blocks
     * straight into the new part's blocks, so memory follows the part's bytes, not its entry count.
     */
    private void merge(int part, KeyIndex.Build build) {
        PartReads reads = new PartReads(table.io(), new IndexCache(0));
        PriorityQueue<PartFile.Cursor> heads = new PriorityQueue<>(PartFile.Cursor::compareKeys);
        for (IndexManifest.Part run : runs.get(part)) {
            byte[] bytes = reads.range(run.path(), run.length(), 0, (int) run.length());
            PartFile.Cursor cursor = new PartFile.Cursor(PartFile.footer(run.path(), run.length(), bytes), bytes);
            if (cursor.next()) {
                heads.add(cursor);
            }
        }
        PartFile.Writer out = new PartFile.Writer(new String[0], 1 << 16);
        while (!heads.isEmpty()) {
            PartFile.Cursor c = heads.poll();
            // A rebuild meets each live key once; were a key in two runs, the first met would stay.
            if (out.follows(c.keyBuffer(), 0, c.keyLength())) {
                c.copyTo(out, out.fileRef(c.file()));
            }
            if (c.next()) {
                heads.add(c);
            }
        }
        build.writeEncoded(part, out.finish(), out.entries());
    }

    /** Deletes the runs (the parts written into the build stay) and stops the sorter's threads. */
    @Override
    public void close() {
        workers.shutdown();
        List<String> files = new ArrayList<>();
        runs.forEach(partRuns -> partRuns.forEach(r -> files.add(r.path())));
        if (files.isEmpty()) {
            return;
        }
        try {
            if (table.io() instanceof SupportsBulkOperations bulk) {
                bulk.deleteFiles(files);
            } else {
                files.forEach(table.io()::deleteFile);
            }
        } catch (RuntimeException e) {
            // Orphans now, which maintenance's orphan removal deletes; the rebuild itself is sound.
            LOG.warn("Could not delete the {} sorted runs of a key index rebuild: {}", files.size(), e.toString());
        }
    }
}
