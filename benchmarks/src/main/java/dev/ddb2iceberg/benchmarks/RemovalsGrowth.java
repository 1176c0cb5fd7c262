package dev.ddb2iceberg.benchmarks;

import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.config.CatalogSettings;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.S3Settings;
import dev.ddb2iceberg.config.StagingSettings;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.removals.RemovalsFile;
import dev.ddb2iceberg.table.TableCreator;
import dev.ddb2iceberg.table.TableLayout;
import dev.ddb2iceberg.table.TableSettings;
import dev.ddb2iceberg.testkit.KeyedWorkload;
import dev.ddb2iceberg.testkit.LocalStack;
import java.io.Closeable;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * What the removals file costs a merge as removals pile up. A merge reads the removals the table
 * remembers ({@link RemovalsFile#read}), asks it about its upserts' keys, and writes its own
 * removals ({@link RemovalsFile#update}); the table keeps each removal for 48 hours. This runs
 * that cycle merge after merge on a real table (embedded S3 server, SQLite catalog), each
 * "merge" removing {@code -Dbench.removalsPerMerge} new items (default 19,000: what a merge of
 * 100,000 of the merge benchmark's changes removes) and upserting 80,000 keys, a tenth of them
 * removed earlier, and commits a snapshot naming the new removals list, as a merge's commit
 * does. Rows are not written: only the removals' part of a merge is timed.
 *
 * <p>Every tenth merge it prints the removals kept, the time the read and the update took, and
 * the heap in use after a collection, per kept removal. Run:
 * {@code java -Xmx4g -cp … dev.ddb2iceberg.benchmarks.RemovalsGrowth 160} (merges).
 */
public final class RemovalsGrowth {
    private static final int REMOVALS_PER_MERGE = Integer.getInteger("bench.removalsPerMerge", 19_000);
    private static final int UPSERTS_PER_MERGE = 80_000;

    public static void main(String[] args) throws Exception {
        int merges = args.length == 0 ? 160 : Integer.parseInt(args[0]);
        Path dir = Files.createTempDirectory("removals-bench");
        try (EmbeddedS3Server server = EmbeddedS3Server.onDisk(dir.resolve("s3"))) {
            server.createBucket("bench");
            LocalStack stack = new LocalStack(server, "bench", dir);
            Environment env = new Environment(stack.environment("removals"));
            StagingSettings staging = new StagingSettings("bench", "staging/", "quarantine/");
            TableSettings settings = TableSettings.from(env);
            Catalog catalog =
                    CatalogSettings.from(env, staging, S3Settings.from(env)).load();
            try {
                run(catalog, settings, merges);
            } finally {
                ((Closeable) catalog).close();
            }
        } finally {
            MergeThroughput.deleteRecursively(dir);
        }
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
        double bytesPerRemoval = 0; // the warm merger's cache: heap after a collection, per kept removal
        for (int m = 1; m <= merges; m++) {
            long t0 = System.nanoTime();
            RemovalsFile removals = RemovalsFile.read(table, layout);
            long t1 = System.nanoTime();
            // The merge's upserts: new items, and a tenth of them items removed earlier (asked about,
            // and forgotten by the file when it still remembers them).
            Map<List<Object>, Change> applied = new LinkedHashMap<>();
            int remembered = 0;
            for (int u = 0; u < UPSERTS_PER_MERGE; u++) {
                int key = u % 10 == 0 && nextKey > 1 ? random.nextInt(nextKey) : nextKey++;
                Change upsert = workload.upsert(key, Operation.MODIFY);
                List<Object> k = layout.keyOf(upsert);
                if (!removals.removedAfter(k, upsert.sequenceNumber()) && removals.remembers(k)) {
                    applied.put(k, upsert);
                    remembered++;
                }
            }
            for (int r = 0; r < REMOVALS_PER_MERGE; r++) {
                Change removal = workload.remove(nextKey++, r % 5 == 0);
                applied.put(layout.keyOf(removal), removal);
            }
            long t2 = System.nanoTime();
            String list = removals.update(table, applied, System.currentTimeMillis(), 0, "growth-" + m);
            long t3 = System.nanoTime();
            table.newAppend()
                    .set(PipelineProperties.RUN_ID, "growth-" + m)
                    .set(PipelineProperties.REMOVALS, list)
                    .commit();
            millis[m] = (t1 - t0 + t3 - t2) / 1e6;
            if (m % 10 == 0 || m == merges) {
                System.gc();
                long heap = memory.getHeapMemoryUsage().getUsed();
                long kept = (long) m * REMOVALS_PER_MERGE;
                if (heap > 100L << 20) { // a heap this small holds no cached removals: past 2M none are kept
                    bytesPerRemoval = (double) heap / kept;
                }
                System.out.printf(
                        "merge %d: about %,d removals kept; read %.0f ms, update %.0f ms (%,d remembered upserts);"
                                + " heap in use after a collection %,d MB (%.0f bytes a kept removal)%n",
                        m, kept, (t1 - t0) / 1e6, (t3 - t2) / 1e6, remembered, heap >> 20, (double) heap / kept);
            }
        }
        int window = Math.max(1, merges / 8);
        Results.report(
                String.format(
                        "removals file: one merge's read + update, %,d removals a merge, mean of merges %d-%d / of the"
                                + " last %d (about %,d / %,d removals kept)",
                        REMOVALS_PER_MERGE,
                        merges / 2 - window + 1,
                        merges / 2,
                        window,
                        (long) merges / 2 * REMOVALS_PER_MERGE,
                        (long) merges * REMOVALS_PER_MERGE),
                "grows with the merge, not with the removals kept",
                String.format(
                        "%.0f / %.0f ms; a warm merger's cache holds %.0f bytes of heap a kept removal",
                        Arrays.stream(millis, merges / 2 - window + 1, merges / 2 + 1)
                                .average()
                                .orElse(0),
                        Arrays.stream(millis, merges - window + 1, merges + 1)
                                .average()
                                .orElse(0),
                        bytesPerRemoval));
    }
}
