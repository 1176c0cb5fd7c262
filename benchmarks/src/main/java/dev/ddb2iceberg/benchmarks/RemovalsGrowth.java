package dev.ddb2iceberg.benchmarks;

import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.index.IndexCache;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.removals.RemovalsIndex;
import dev.ddb2iceberg.table.TableCreator;
import dev.ddb2iceberg.table.TableLayout;
import dev.ddb2iceberg.table.TableSettings;
import dev.ddb2iceberg.testkit.KeyedWorkload;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * What the removals record costs a merge as removals pile up. A merge opens the removals index
 * the table names ({@link RemovalsIndex#open}), looks up the keys of its upserts that have no
 * live row ({@link RemovalsIndex#lookup}), and records its own removals ({@link
 * RemovalsIndex#update}); the table keeps each removal for 48 hours. This runs that cycle merge
 * after merge on a real table (embedded S3 server, SQLite catalog), each "merge" removing {@code
 * -Dbench.removalsPerMerge} new items (default 19,000: what a merge of 100,000 of the merge
 * benchmark's changes removes) and upserting 80,000 keys with no live row, a tenth of them removed
 * earlier, and commits a snapshot naming the new manifest, as a merge's commit does. Rows are not
 * written: only the removals' part of a merge is timed. The index cache is the merger's default
 * (a third of the heap), so a warm merger is measured.
 *
 * <p>Every tenth merge it prints the removals kept, the time the open and lookup and the update
 * took, and the heap in use after a collection. Run:
 * {@code java -Xmx4g -cp … dev.ddb2iceberg.benchmarks.RemovalsGrowth 160} (merges).
 */
public final class RemovalsGrowth {
    private static final int REMOVALS_PER_MERGE = Integer.getInteger("bench.removalsPerMerge", 19_000);
    private static final int UPSERTS_PER_MERGE = 80_000;

    public static void main(String[] args) throws Exception {
        AsPackaged.hideWhatThePackagesLeaveOut(); // Hadoop's defaults files, as in the Lambda packages
        int merges = args.length == 0 ? 160 : Integer.parseInt(args[0]);
        LocalCatalog.run("removals", (catalog, settings) -> run(catalog, settings, merges));
    }

    private static void run(Catalog catalog, TableSettings settings, int merges) {
        KeyedWorkload workload = new KeyedWorkload(5, Integer.MAX_VALUE);
        Table table = TableCreator.loadOrCreate(
                catalog,
                TableIdentifier.of(settings.namespace(), settings.name()),
                settings,
                List.of(workload.upsert(0, Operation.INSERT)));
        TableLayout layout = TableLayout.of(table);
        MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
        Random random = new Random(9);
        int nextKey = 1;
        double[] millis = new double[merges + 1]; // each merge's read + update
        long heapAtEnd = 0; // after a collection: the index cache's share is bounded, not the removals
        IndexCache cache = new IndexCache(IndexCache.defaultBudget());
        ExecutorService pool = Executors.newFixedThreadPool(8);
        for (int m = 1; m <= merges; m++) {
            // The merge's upserts: new items, and a tenth of them items removed earlier (looked up,
            // and forgotten by the index when it still remembers them).
            List<Change> upserts = new ArrayList<>();
            List<List<Object>> keys = new ArrayList<>();
            for (int u = 0; u < UPSERTS_PER_MERGE; u++) {
                int key = u % 10 == 0 && nextKey > 1 ? random.nextInt(nextKey) : nextKey++;
                Change upsert = workload.upsert(key, Operation.MODIFY);
                upserts.add(upsert);
                keys.add(layout.keyOf(upsert));
            }
            long t0 = System.nanoTime();
            RemovalsIndex removals = RemovalsIndex.open(table, layout, 0, cache);
            RemovalsIndex.Known known = removals.lookup(keys, pool);
            long t1 = System.nanoTime();
            Map<List<Object>, Change> applied = new LinkedHashMap<>();
            int remembered = 0;
            for (int u = 0; u < upserts.size(); u++) {
                List<Object> k = keys.get(u);
                if (!known.removedAfter(k, upserts.get(u).sequenceNumber()) && known.remembers(k)) {
                    applied.put(k, upserts.get(u));
                    remembered++;
                }
            }
            for (int r = 0; r < REMOVALS_PER_MERGE; r++) {
                Change removal = workload.remove(nextKey++, r % 5 == 0);
                applied.put(layout.keyOf(removal), removal);
            }
            long t2 = System.nanoTime();
            String manifest =
                    removals.update(applied, System.currentTimeMillis(), pool).property();
            long t3 = System.nanoTime();
            table.newAppend()
                    .set(PipelineProperties.RUN_ID, "growth-" + m)
                    .set(PipelineProperties.REMOVALS, manifest)
                    .commit();
            millis[m] = (t1 - t0 + t3 - t2) / 1e6;
            if (m % 10 == 0 || m == merges) {
                System.gc();
                heapAtEnd = memory.getHeapMemoryUsage().getUsed();
                System.out.printf(
                        "merge %d: about %,d removals kept; open and look up %.0f ms, update %.0f ms (%,d remembered"
                                + " upserts); heap in use after a collection %,d MB%n",
                        m,
                        (long) m * REMOVALS_PER_MERGE,
                        (t1 - t0) / 1e6,
                        (t3 - t2) / 1e6,
                        remembered,
                        heapAtEnd >> 20);
            }
        }
        pool.shutdown();
        int window = Math.max(1, merges / 8);
        Results.report(
                String.format(
                        "removals index: one merge's lookup + update, %,d removals a merge, mean of merges %d-%d / of"
                                + " the last %d (about %,d / %,d removals kept)",
                        REMOVALS_PER_MERGE,
                        merges / 2 - window + 1,
                        merges / 2,
                        window,
                        (long) merges / 2 * REMOVALS_PER_MERGE,
                        (long) merges * REMOVALS_PER_MERGE),
                "grows with the merge, not with the removals kept",
                String.format(
                        "%.0f / %.0f ms; heap in use at the end %,d MB",
                        Arrays.stream(millis, merges / 2 - window + 1, merges / 2 + 1)
                                .average()
                                .orElse(0),
                        Arrays.stream(millis, merges - window + 1, merges + 1)
                                .average()
                                .orElse(0),
                        heapAtEnd >> 20));
    }
}
