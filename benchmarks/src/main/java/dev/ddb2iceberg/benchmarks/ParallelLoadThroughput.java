package dev.ddb2iceberg.benchmarks;

import dev.ddb2iceberg.config.CatalogSettings;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.S3Settings;
import dev.ddb2iceberg.config.StagingSettings;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.export.ExportLocation;
import dev.ddb2iceberg.load.ExportLoader;
import dev.ddb2iceberg.load.parallel.ParallelExportLoad;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.observe.LogSettings;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.table.TableSettings;
import dev.ddb2iceberg.testkit.DynamoDbExportFiles;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.util.Futures;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.io.CloseableIterable;
import org.slf4j.event.Level;

/**
 * The parallel export load on the local stack: a generated full export of N items
 * (~600-byte items, gzip DynamoDB JSON, as DynamoDB writes it) loaded into a new table by the load's
 * own steps, with W workers at once (a thread pool standing in for the distributed map's Lambdas).
 *
 * <p>{@code ParallelLoadThroughput <items> <dataFiles> <workers>...}: one export, then one load per
 * worker count, each into its own table. Reports the whole load's wall time and items/s, and the
 * items/s of each worker (its items over its own time), the figure that projects to Lambda: a
 * worker of ~2 vCPU (4 GB) does about what one worker here does alone ({@code workers = 1}).
 */
public final class ParallelLoadThroughput {
    private ParallelLoadThroughput() {}

    public static void main(String[] args) throws Exception {
        AsPackaged.hideWhatThePackagesLeaveOut(); // Hadoop's defaults files, as in the Lambda packages
        long items = Long.parseLong(args[0]);
        int dataFiles = Integer.parseInt(args[1]);
        LogSettings.defaultPipelineLevel(Level.WARN);
        Path dir = Files.createTempDirectory("parallel-load-bench");
        try (EmbeddedS3Server server = EmbeddedS3Server.onDisk(dir.resolve("s3"))) {
            server.createBucket("bench");
            DynamoDbExportFiles exports = new DynamoDbExportFiles(server.newClient(), "bench", "exports/");
            long t0 = System.nanoTime();
            String location = exports.writeFull(
                    "01764000000000-bench",
                    Instant.now().minusSeconds(60),
                    items,
                    dataFiles,
                    ParallelLoadThroughput::item);
            System.out.printf(
                    "export of %,d items in %d data files written in %.1f s%n",
                    items, dataFiles, (System.nanoTime() - t0) / 1e9);
            for (int a = 2; a < args.length; a++) {
                int workers = Integer.parseInt(args[a]);
                Map<String, String> vars = new LocalStack(server, "bench", dir).environment("loaded_" + workers);
                Environment env = new Environment(vars);
                StagingSettings staging = StagingSettings.from(env);
                S3Settings s3 = S3Settings.from(env);
                Catalog catalog = CatalogSettings.from(env, staging, s3).load();
                // A worker's own pool: two threads, as a 4 GB Lambda has about two vCPUs.
                MergeOptions options = MergeOptions.from(env);
                options = new MergeOptions(
                        options.maxChanges(),
                        options.maxStagedBytes(),
                        options.maxCommitAttempts(),
                        2,
                        options.keyIndex(),
                        options.keyIndexParts(),
                        options.keyIndexCacheBytes(),
                        0,
                        options.keyIndexBuildBytes(),
                        0,
                        0,
                        false);
                ParallelExportLoad load = new ParallelExportLoad(
                        catalog,
                        TableSettings.from(env),
                        new StagingStore(server.newClient(), staging),
                        options,
                        server.newClient(),
                        Integer.getInteger("bench.batchItems", 250_000));
                run(load, location, workers, items);
                TableSettings table = TableSettings.from(env);
                printFiles(catalog.loadTable(TableIdentifier.of(table.namespace(), table.name())));
            }
        }
    }

    private static void run(ParallelExportLoad load, String location, int workers, long items) {
        long start = System.nanoTime();
        ParallelExportLoad.Plan plan = load.plan(
                new ExportLoader.Request(
                        ExportLocation.parse(location), List.of("pk", "sk"), Duration.ofMinutes(5), true),
                workers,
                null);
        long tPlan = System.nanoTime();
        ExecutorService pool = Executors.newFixedThreadPool(workers);
        List<ParallelExportLoad.WorkResult> done = new ArrayList<>();
        try {
            List<Future<ParallelExportLoad.WorkResult>> tasks = new ArrayList<>();
            for (ParallelExportLoad.Work w : plan.work()) {
                tasks.add(pool.submit(() -> load.loadWork(plan.loadId(), w.work())));
            }
            tasks.forEach(t -> done.add(Futures.join(t, "loading")));
            long tLoad = System.nanoTime();
            ParallelExportLoad.Arranged arranged = load.arrange(plan.loadId());
            List<Future<ParallelExportLoad.Gathered>> gathers = new ArrayList<>();
            for (int g : arranged.groups()) {
                gathers.add(pool.submit(() -> load.gather(plan.loadId(), g)));
            }
            List<ParallelExportLoad.Gathered> gathered = new ArrayList<>();
            gathers.forEach(g -> gathered.add(Futures.join(g, "gathering")));
            long tGather = System.nanoTime();
            int workersFiles = done.stream()
                    .mapToInt(ParallelExportLoad.WorkResult::dataFiles)
                    .sum();
            double gatherMbPerCoreSecond = arranged.bytesToMerge()
                    / 1e6
                    / Math.max(
                            1e-3,
                            gathered.stream()
                                            .mapToLong(ParallelExportLoad.Gathered::millis)
                                            .sum()
                                    / 1000.0);
            List<Future<ParallelExportLoad.GroupDone>> groups = new ArrayList<>();
            for (int g = 0; g < plan.indexGroups(); g++) {
                int group = g;
                groups.add(pool.submit(() -> load.buildIndex(plan.loadId(), group)));
            }
            groups.forEach(g -> Futures.join(g, "indexing"));
            long tIndex = System.nanoTime();
            ParallelExportLoad.CommitResult commit = load.commit(plan.loadId());
            long end = System.nanoTime();
            System.out.printf(
                    "%d workers: the workers wrote %d data files; the gather merged %d of them (%,d bytes) in %d"
                            + " groups in %.1f s (%.1f MB/s per group's thread), kept %d%n",
                    workers,
                    workersFiles,
                    arranged.filesToMerge(),
                    arranged.bytesToMerge(),
                    arranged.groups().size(),
                    (tGather - tLoad) / 1e9,
                    gatherMbPerCoreSecond,
                    arranged.filesKept());
            double perWorker = done.stream()
                    .mapToDouble(w -> w.items() * 1000.0 / Math.max(1, w.millis()))
                    .average()
                    .orElse(0);
            double wall = (end - start) / 1e9;
            System.out.printf(
                    "%d workers: %,d items in %.1f s (%,.0f items/s); plan %.1f s, workers %.1f s, gather %.1f s,"
                            + " index %.1f s, commit %.1f s; %d work items, %d data files; each worker %,.0f items/s on"
                            + " average%n",
                    workers,
                    commit.rows(),
                    wall,
                    items / wall,
                    (tPlan - start) / 1e9,
                    (tLoad - tPlan) / 1e9,
                    (tGather - tLoad) / 1e9,
                    (tIndex - tGather) / 1e9,
                    (end - tIndex) / 1e9,
                    plan.work().size(),
                    commit.dataFiles(),
                    perWorker);
            System.out.printf(
                    "RESULT|parallel export load, %,d items, %d workers on 2 cores|-|%.1f s (%,.0f items/s; each"
                            + " worker %,.0f items/s)%n",
                    items, workers, wall, items / wall, perWorker);
        } finally {
            pool.shutdownNow();
        }
    }

    /** The committed data files: how many, how many a partition, and their sizes (min, median, max). */
    private static void printFiles(Table table) {
        List<Long> sizes = new ArrayList<>();
        Map<String, Integer> perPartition = new TreeMap<>();
        long rows = 0;
        try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
            for (FileScanTask t : tasks) {
                sizes.add(t.file().fileSizeInBytes());
                rows += t.file().recordCount();
                perPartition.merge(table.spec().partitionToPath(t.file().partition()), 1, Integer::sum);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Collections.sort(sizes);
        long total = sizes.stream().mapToLong(Long::longValue).sum();
        System.out.printf(
                "table: %d data files in %d partitions (%d to %d a partition), %,d rows, %,d bytes (%.1f bytes a row);"
                        + " file sizes min %,d, median %,d, max %,d%n",
                sizes.size(),
                perPartition.size(),
                perPartition.values().stream().mapToInt(Integer::intValue).min().orElse(0),
                perPartition.values().stream().mapToInt(Integer::intValue).max().orElse(0),
                rows,
                total,
                total / (double) Math.max(1, rows),
                sizes.isEmpty() ? 0 : sizes.get(0),
                sizes.isEmpty() ? 0 : sizes.get(sizes.size() / 2),
                sizes.isEmpty() ? 0 : sizes.get(sizes.size() - 1));
        System.out.printf(
                "RESULT|parallel export load: data files a partition, median file|-|%d to %d; %.1f MB%n",
                perPartition.values().stream().mapToInt(Integer::intValue).min().orElse(0),
                perPartition.values().stream().mapToInt(Integer::intValue).max().orElse(0),
                (sizes.isEmpty() ? 0 : sizes.get(sizes.size() / 2)) / 1e6);
    }

    /** A ~600-byte item of an orders table: keys, strings, numbers, a set, a map and a list. */
    static Map<String, DdbValue> item(long i) {
        Map<String, DdbValue> item = new LinkedHashMap<>();
        item.put("pk", new DdbValue.S("customer#" + (i / 8)));
        item.put("sk", new DdbValue.N(Long.toString(i % 8)));
        item.put("status", new DdbValue.S(i % 3 == 0 ? "SHIPPED" : "OPEN"));
        item.put("amount", new DdbValue.N((i % 100_000) + "." + (i % 100)));
        item.put("quantity", new DdbValue.N(Long.toString(i % 17)));
        item.put("gift", new DdbValue.Bool(i % 5 == 0));
        item.put(
                "createdAt",
                new DdbValue.S(Instant.ofEpochSecond(1_700_000_000L + i).toString()));
        item.put("tags", new DdbValue.SS(List.of("t" + (i % 7), "t" + (i % 11))));
        Map<String, DdbValue> address = new LinkedHashMap<>();
        address.put("street", new DdbValue.S((i % 999) + " Main Street"));
        address.put("city", new DdbValue.S("City " + (i % 500)));
        address.put("zip", new DdbValue.S(String.format("%05d", i % 100_000)));
        item.put("address", new DdbValue.M(address));
        item.put(
                "note",
                new DdbValue.S("Order " + i + ": please leave the parcel at the back door if nobody answers;"
                        + " fragile items inside, handle with care. Reference " + Long.toHexString(i * 2654435761L)
                        + " for the courier, and call ahead on weekdays between nine and five."));
        return item;
    }
}
