package dev.ddb2iceberg.benchmarks;

import dev.ddb2iceberg.index.IndexCache;
import dev.ddb2iceberg.index.IndexEntries;
import dev.ddb2iceberg.index.IndexKeys;
import dev.ddb2iceberg.index.KeyIndex;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.table.TableCreator;
import dev.ddb2iceberg.testkit.KeyedWorkload;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * What the key index's own upkeep costs a merge as the table grows: an index of N entries, then
 * commit after commit of a delta as a merge of 100,000 changes writes it (by default 180,000
 * entries: new and moved rows' locations and removed keys' tombstones), each commit as a merge
 * makes it: the version opened, its fold started ahead, the commit's keys looked up, the delta
 * recorded ({@link KeyIndex#withChanges}). No table rows are written: only the index's share of a
 * merge is timed, so a table of 100M or 1B rows is within reach of this machine.
 *
 * <p>For each commit it measures the CPU of the process less the embedded S3 server's, the bytes
 * of index files written besides the delta (the folds' output), and the lookups' time; it checks
 * that each commit's keys then read back as that commit wrote them. Run: {@code java -Xmx12g -cp …
 * dev.ddb2iceberg.benchmarks.KeyIndexFolds 100000000 60} (entries, commits); {@code
 * -Dbench.deltaEntries=N} sets the delta.
 */
public final class KeyIndexFolds {
    private static final int DELTA_ENTRIES = Integer.getInteger("bench.deltaEntries", 180_000);
    private static final int PARTS = Integer.getInteger("bench.parts", 64);
    /** Parts built per pass over the keys: the entries of that many parts are held at once. */
    private static final int PARTS_PER_PASS = 16;
    /** Data files the built index's entries point into. */
    private static final int FILES = 1_000;

    public static void main(String[] args) throws Exception {
        AsPackaged.hideWhatThePackagesLeaveOut();
        long entries = args.length > 0 ? Long.parseLong(args[0]) : 10_000_000L;
        int commits = args.length > 1 ? Integer.parseInt(args[1]) : 60;
        LocalCatalog.run("folds", (catalog, settings) -> {
            KeyedWorkload workload = new KeyedWorkload(5, Integer.MAX_VALUE);
            List<Change> first = List.of(workload.upsert(0, Operation.INSERT));
            Table table = TableCreator.loadOrCreate(
                    catalog, TableIdentifier.of(settings.namespace(), settings.name()), settings, first);
            run(table, entries, commits);
        });
    }

    private static byte[] key(long i) {
        return IndexKeys.encode(List.of("item-" + i, i));
    }

    /** A sequence number as a merge's are: about 20 decimal digits, as bytes of a BigInteger. */
    private static byte[] sequence(long i) {
        return BigInteger.valueOf(i).add(BigInteger.TEN.pow(20)).toByteArray();
    }

    private static void run(Table table, long entries, int commits) {
        // As a warm merger of the template's largest size holds it: a third of the heap in memory,
        // the default disk cache behind it.
        IndexCache cache =
                IndexCache.shared(IndexCache.defaultBudget(), MergeOptions.DEFAULTS.keyIndexDiskCacheBytes());
        ExecutorService pool = Executors.newFixedThreadPool(Runtime.getRuntime().availableProcessors());
        long t0 = System.nanoTime();
        KeyIndex.Build build = KeyIndex.newBuild(table, PARTS, cache);
        for (int from = 0; from < PARTS; from += PARTS_PER_PASS) {
            IndexEntries.Builder[] parts = new IndexEntries.Builder[PARTS_PER_PASS];
            for (int p = 0; p < parts.length; p++) {
                parts[p] = new IndexEntries.Builder((int) (entries / PARTS) + 1024);
            }
            for (long i = 0; i < entries; i++) {
                byte[] k = key(i);
                int p = IndexKeys.part(k, PARTS) - from;
                if (p >= 0 && p < PARTS_PER_PASS) {
                    parts[p].add(k, "s3://bench/data/file-" + (i % FILES) + ".parquet", i / FILES, sequence(i));
                }
            }
            for (int p = 0; p < parts.length; p++) {
                build.writePart(from + p, parts[p].build());
                parts[p] = null;
            }
            System.out.printf("built parts %d-%d of %d%n", from, from + PARTS_PER_PASS - 1, PARTS);
        }
        // The first version with a manifest: the build plus an empty delta, as the first merge writes it.
        String manifest = build.finish()
                .withChanges(table, new IndexEntries.Builder().build(), pool)
                .manifest();
        System.out.printf(
                "index of %,d entries in %d parts built in %.0f s: %,d bytes%n",
                entries,
                PARTS,
                (System.nanoTime() - t0) / 1e9,
                KeyIndex.open(table, manifest, cache).manifest().bytes());

        Random random = new Random(11);
        long next = entries; // the next new key
        double[] cpu = new double[commits];
        double[] lookups = new double[commits];
        long[] foldBytes = new long[commits];
        for (int c = 0; c < commits; c++) {
            // The delta: updates of existing keys (to this commit's file), new keys, and removals.
            String file = "s3://bench/data/commit-" + c + ".parquet";
            Set<Long> keys = new HashSet<>();
            List<Long> order = new ArrayList<>();
            while (order.size() < DELTA_ENTRIES * 85 / 100) {
                long k = (long) (random.nextDouble() * next);
                if (keys.add(k)) {
                    order.add(k);
                }
            }
            IndexEntries.Builder delta = new IndexEntries.Builder(DELTA_ENTRIES);
            List<byte[]> looked = new ArrayList<>();
            int updates = DELTA_ENTRIES * 70 / 100;
            for (int j = 0; j < order.size(); j++) {
                byte[] k = key(order.get(j));
                looked.add(k);
                delta.add(k, j < updates ? file : null, j, sequence(entries + c * (long) DELTA_ENTRIES + j));
            }
            while (delta.size() < DELTA_ENTRIES) {
                delta.add(key(next++), file, delta.size(), sequence(entries + c * (long) DELTA_ENTRIES + delta.size()));
            }

            long wall = System.nanoTime();
            long c0 = MergeThroughput.processCpuNanos();
            Map<Long, Long> s0 = MergeThroughput.serverThreadCpu();
            KeyIndex index = KeyIndex.open(table, manifest, cache);
            index.foldAhead(table);
            long l0 = System.nanoTime();
            index.lookupEach(looked, pool);
            lookups[c] = (System.nanoTime() - l0) / 1e6;
            KeyIndex.Written written = index.withChanges(table, delta.build(), pool);
            cpu[c] = (MergeThroughput.processCpuNanos() - c0 - MergeThroughput.serverCpuNanosSince(s0)) / 1e9;
            double seconds = (System.nanoTime() - wall) / 1e9;

            // What the folds wrote: the new version's files the old one did not have, the delta aside.
            Set<String> before = new HashSet<>(index.manifest().files());
            KeyIndex after = KeyIndex.open(table, written.manifest(), cache);
            String newDelta = after.manifest()
                    .deltas()
                    .get(after.manifest().deltas().size() - 1)
                    .path();
            for (String f : after.manifest().files()) {
                if (!before.contains(f) && !f.equals(newDelta)) {
                    foldBytes[c] += table.io().newInputFile(f).getLength();
                }
            }
            // The commit's keys read back as it wrote them.
            IndexEntries.Entry[] back = after.lookupEach(looked, pool);
            for (int j = 0; j < looked.size(); j++) {
                boolean removed = j >= updates;
                if (removed
                        ? back[j] != null
                        : back[j] == null || !file.equals(back[j].file()) || back[j].position() != j) {
                    throw new IllegalStateException("commit " + c + ": key " + order.get(j) + " reads back as "
                            + back[j] + ", not as the commit wrote it (" + (removed ? "removed" : file + " at " + j)
                            + ")");
                }
            }
            manifest = written.manifest();
            System.out.printf(
                    "commit %d: %.2f s, %.2f s of CPU (the S3 server's left out), lookups %.0f ms, folds wrote %,d bytes;"
                            + " index %,d bytes, %d deltas%n",
                    c + 1,
                    seconds,
                    cpu[c],
                    lookups[c],
                    foldBytes[c],
                    after.manifest().bytes(),
                    after.manifest().deltas().size());
        }
        pool.shutdown();
        // The first third warms up (the JIT, and the pace of the folds reaching its steady state).
        int from = commits / 3;
        double meanCpu = Arrays.stream(cpu, from, commits).average().orElse(0);
        Results.report(
                String.format(
                        "key index upkeep of a merge: %,d-entry deltas into an index of %,d entries, mean of commits"
                                + " %d-%d",
                        DELTA_ENTRIES, entries, from + 1, commits),
                "follows the changes, not the table",
                String.format(
                        "%.2f s of CPU a commit (%.1f µs a delta entry), folds wrote %.1f MB a commit, lookups %.0f ms",
                        meanCpu,
                        meanCpu * 1e6 / DELTA_ENTRIES,
                        Arrays.stream(foldBytes, from, commits).average().orElse(0) / 1e6,
                        Arrays.stream(lookups, from, commits).average().orElse(0)));
    }
}
