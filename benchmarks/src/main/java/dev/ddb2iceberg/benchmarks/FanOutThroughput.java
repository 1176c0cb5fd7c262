package dev.ddb2iceberg.benchmarks;

import dev.ddb2iceberg.config.CatalogSettings;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.S3Settings;
import dev.ddb2iceberg.config.StagingSettings;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.merge.FanOutMerge;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagedObject;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.table.TableCreator;
import dev.ddb2iceberg.table.TableSettings;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.util.Futures;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * A fanned-out merge ({@link FanOutMerge}) of a big staged backlog into a big table, its steps run
 * in process with 1, 2 and 4 workers (as the state machine's maps), each step timed: how many
 * changes a second one worker shuffles and merges, what the one commit costs, and from those a
 * projection for 100M changes at 100 Lambda workers. Each worker count gets a fresh backlog of
 * {@code bench.changes} mixed changes (~600-byte items, 10 % new items, 20 % removals) into the
 * same table.
 *
 * <pre>
 * java -Xmx16g -XX:+UseParallelGC -Dbench.changes=2000000 -Dbench.workers=1,2,4 -cp … FanOutThroughput 10000000
 * </pre>
 */
public final class FanOutThroughput {
    private static final int CHANGES = Integer.getInteger("bench.changes", 1_000_000);
    private static final int[] WORKERS = Arrays.stream(
                    System.getProperty("bench.workers", "1,2,4").split(","))
            .mapToInt(Integer::parseInt)
            .toArray();

    /** One fan-out's timings. */
    private record Run(
            int workers,
            long changes,
            long bytes,
            double wallSeconds,
            double shuffleWorkerSeconds,
            double rangeWorkerSeconds,
            double shuffleWallSeconds,
            double rangeWallSeconds,
            double commitSeconds) {}

    public static void main(String[] args) throws Exception {
        AsPackaged.hideWhatThePackagesLeaveOut(); // Hadoop's defaults files, as in the Lambda packages
        long rows = args.length == 0 ? 1_000_000L : Long.parseLong(args[0]);
        Path dir = Files.createTempDirectory("fanout-bench");
        try (EmbeddedS3Server server = EmbeddedS3Server.onDisk(dir.resolve("s3"))) {
            server.createBucket("bench");
            LocalStack stack = new LocalStack(server, "bench", dir);
            Environment env = new Environment(stack.environment("fanout"));
            StagingSettings staging = new StagingSettings("bench", "staging/", "quarantine/");
            Catalog catalog =
                    CatalogSettings.from(env, staging, S3Settings.from(env)).load();
            TableSettings tableSettings = TableSettings.from(env);
            StagingStore store = new StagingStore(server.newClient(), staging);
            BatchStager stager = new BatchStager(store);
            MergeOptions options = MergeOptions.DEFAULTS;

            long t0 = System.nanoTime();
            Table table = TableCreator.loadOrCreate(
                    catalog,
                    TableIdentifier.of(tableSettings.namespace(), tableSettings.name()),
                    tableSettings,
                    List.of(MergeThroughput.change(0, Operation.INSERT, 0, new Random(0))));
            MergeThroughput.bulkLoad(table, rows);
            System.out.printf("loaded %,d rows in %.1f s%n", rows, (System.nanoTime() - t0) / 1e9);
            // A first merge builds the key index from the table, as a fan-out needs (untimed).
            Random random = new Random(rows);
            MergeThroughput.stage(stager, rows, 100_000, 0, random);
            new Merger(catalog, tableSettings, store, options).run();

            List<Run> runs = new ArrayList<>();
            int seqFrom = 100_000;
            for (int workers : WORKERS) {
                MergeThroughput.stage(stager, rows, CHANGES, seqFrom, random);
                seqFrom += CHANGES;
                long bytes = store.list().stream().mapToLong(StagedObject::size).sum();
                runs.add(fanOut(new FanOutMerge(catalog, tableSettings, store, options), workers, bytes));
                Run r = runs.get(runs.size() - 1);
                System.out.printf(
                        "%d workers: %,d changes (%,d staged bytes) in %.1f s: shuffle %.1f s, ranges %.1f s,"
                                + " commit %.1f s; per worker-second: shuffle %,.0f, merge %,.0f changes%n",
                        workers,
                        r.changes(),
                        r.bytes(),
                        r.wallSeconds(),
                        r.shuffleWallSeconds(),
                        r.rangeWallSeconds(),
                        r.commitSeconds(),
                        r.changes() / r.shuffleWorkerSeconds(),
                        r.changes() / r.rangeWorkerSeconds());
            }
            report(rows, runs);
        } finally {
            MergeThroughput.deleteRecursively(dir);
        }
    }

    /** One fan-out, its steps on a pool of {@code workers} threads (each step uses the merge's own IO threads). */
    private static Run fanOut(FanOutMerge merge, int workers, long bytes) {
        long start = System.nanoTime();
        FanOutMerge.Planned planned = merge.plan(workers, "bench-" + workers);
        ExecutorService pool = Executors.newFixedThreadPool(workers);
        try {
            long s0 = System.nanoTime();
            List<Future<FanOutMerge.Shuffled>> shuffles = new ArrayList<>();
            for (int w = 0; w < planned.works(); w++) {
                int work = w;
                shuffles.add(pool.submit(() -> merge.shuffle(planned.mergeId(), work)));
            }
            long shuffleMillis = 0;
            long changes = 0;
            for (Future<FanOutMerge.Shuffled> f : shuffles) {
                FanOutMerge.Shuffled s = Futures.join(f, "a shuffle");
                shuffleMillis += s.millis();
                changes += s.changes();
            }
            long r0 = System.nanoTime();
            List<Future<FanOutMerge.Ranged>> ranges = new ArrayList<>();
            for (int r = 0; r < planned.ranges(); r++) {
                int range = r;
                ranges.add(pool.submit(() -> merge.mergeRange(planned.mergeId(), range)));
            }
            long rangeMillis = 0;
            for (Future<FanOutMerge.Ranged> f : ranges) {
                rangeMillis += Futures.join(f, "a range").millis();
            }
            long c0 = System.nanoTime();
            merge.commit(planned.mergeId());
            long end = System.nanoTime();
            return new Run(
                    workers,
                    changes,
                    bytes,
                    (end - start) / 1e9,
                    shuffleMillis / 1e3,
                    rangeMillis / 1e3,
                    (r0 - s0) / 1e9,
                    (c0 - r0) / 1e9,
                    (end - c0) / 1e9);
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * The figures, and the projection for 100M changes at 100 workers: slices of at most the
     * fan-out's 2 GB of staged objects, one after another; in each, the shuffle and the ranges
     * spread evenly over 100 workers at the one-worker rates measured here (a 4 GB Lambda has about
     * the 2 cores of this machine), the commit as measured, scaled by the slice's changes, and 10 s a
     * slice assumed for what this machine cannot measure (the maps' start, cold starts).
     */
    private static void report(long rows, List<Run> runs) {
        int cores = Runtime.getRuntime().availableProcessors();
        for (Run r : runs) {
            Results.report(
                    String.format(
                            "fan-out merge: %,d mixed changes into %,d rows, %d workers in process (%d cores)",
                            r.changes(), rows, r.workers(), cores),
                    "-",
                    String.format(
                            "%.1f s (%,.0f changes/s): shuffle %.1f s, ranges %.1f s, commit %.1f s",
                            r.wallSeconds(),
                            r.changes() / r.wallSeconds(),
                            r.shuffleWallSeconds(),
                            r.rangeWallSeconds(),
                            r.commitSeconds()));
        }
        Run one = runs.get(0);
        double shuffleRate = one.changes() / one.shuffleWorkerSeconds();
        double rangeRate = one.changes() / one.rangeWorkerSeconds();
        double commitPerChange = one.commitSeconds() / one.changes();
        double bytesPerChange = (double) one.bytes() / one.changes();
        long total = 100_000_000L;
        int workers = 100;
        long perSlice = (long) ((2L << 30) / bytesPerChange);
        long slices = (total + perSlice - 1) / perSlice;
        // Not measured here: the two distributed maps' start, the Lambdas' cold starts and S3's own
        // latency, taken as 10 s a slice.
        double overheadSeconds = 10;
        double sliceSeconds = perSlice / (workers * shuffleRate)
                + perSlice / (workers * rangeRate)
                + perSlice * commitPerChange
                + overheadSeconds;
        double totalSeconds = slices * sliceSeconds;
        // Lambda arm64 at $0.0000133334 per GB-second, 4 GB workers and commit; requests and Step
        // Functions' transitions are cents.
        double gbSeconds = 4 * (total / shuffleRate + total / rangeRate + total * commitPerChange);
        Results.report(
                String.format(
                        "fan-out merge of 100M changes at %d workers (projected from the %d-worker run)",
                        workers, one.workers()),
                "< 15 min",
                String.format(
                        "%.1f min in %d slices of %,d changes (per slice: shuffle %.0f s, ranges %.0f s, commit %.0f s,"
                                + " and %.0f s assumed for the maps' and Lambdas' start); $%.2f of Lambda",
                        totalSeconds / 60,
                        slices,
                        perSlice,
                        perSlice / (workers * shuffleRate),
                        perSlice / (workers * rangeRate),
                        perSlice * commitPerChange,
                        overheadSeconds,
                        gbSeconds * 0.0000133334));
        Results.report(
                "fan-out merge, one worker's rates (2 cores)",
                "-",
                String.format(
                        "shuffle %,.0f changes/s, merge %,.0f changes/s; commit %.1f µs a change",
                        shuffleRate, rangeRate, commitPerChange * 1e6));
    }
}
