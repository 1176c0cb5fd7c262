package dev.ddb2iceberg.benchmarks;

import dev.ddb2iceberg.config.CatalogSettings;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.S3Settings;
import dev.ddb2iceberg.config.StagingSettings;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.index.IndexCache;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.merge.MergeResult;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.table.TableCreator;
import dev.ddb2iceberg.table.TableLayout;
import dev.ddb2iceberg.table.TableSettings;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.StreamEvents;
import java.io.Closeable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.text.ParseException;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import org.apache.iceberg.AppendFiles;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.PartitionKey;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.UpdateProperties;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericFileWriterFactory;
import org.apache.iceberg.data.InternalRecordWrapper;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.FanoutDataWriter;
import org.apache.iceberg.io.OutputFileFactory;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Merge cost as the table grows: 100,000 mixed changes (70% updates of existing items, 10% new
 * items, 20% deletes) merged in one run into a table of N rows, on the local stack (embedded S3
 * server on disk, SQLite catalog). The table is bulk-written first, sorted by key within each
 * bucket as compaction would leave it.
 *
 * <p>Run: {@code java -Xmx8g -cp ... dev.ddb2iceberg.benchmarks.MergeThroughput 1000000 10000000}
 */
public final class MergeThroughput {
    /** Changes staged per table size ({@code -Dbench.changes}, default 100,000). */
    private static final int CHANGES = Integer.getInteger("bench.changes", 100_000);
    /** A run's bound ({@code -Dbench.maxPerRun}; default: all changes in one run). */
    private static final int MAX_PER_RUN = Integer.getInteger("bench.maxPerRun", CHANGES);
    /**
     * Changes merged (untimed) before the measured merge ({@code -Dbench.primeChanges}, default 0):
     * the steady state of a warm merger, and with the key index on, the index's first build.
     */
    private static final int PRIME = Integer.getInteger("bench.primeChanges", 0);
    /** {@code -Dbench.keyIndex=on|off}: find live rows through the key index or the key columns (default: the merger's). */
    private static final boolean KEY_INDEX =
            "on".equals(System.getProperty("bench.keyIndex", MergeOptions.DEFAULTS.keyIndex() ? "on" : "off"));
    /**
     * {@code -Dbench.narrow=true}: items of keys and three short attributes (no 500-byte note), for
     * tables of 100M rows on one disk; the lookup's cost depends on the keys, not the payload.
     */
    private static final boolean NARROW = Boolean.getBoolean("bench.narrow");
    /** {@code -Dbench.steadyMerges=N}: N more timed merges after the measured one (mean, p95, max). */
    private static final int STEADY_MERGES = Integer.getInteger("bench.steadyMerges", 0);
    /**
     * {@code -Dbench.profileFrom=N}: with {@code bench.profileSteady}, profile the steady merges from
     * the Nth on (0-based), to see what a merge late in the hour spends that an early one does not.
     */
    private static final int PROFILE_FROM = Integer.getInteger("bench.profileFrom", 0);
    /**
     * {@code -Dbench.indexCacheMb=N}: the memory a warm merger keeps index files in (KEY_INDEX_CACHE_MB;
     * default a third of the heap). A tenth of the index's in-memory size models a 10 GB Lambda at 1B rows.
     */
    private static final long INDEX_CACHE_BYTES =
            Long.getLong("bench.indexCacheMb", MergeOptions.DEFAULTS.keyIndexCacheBytes() >> 20) << 20;
    /**
     * {@code -Dbench.indexDiskMb=N}: the local disk a warm merger keeps index parts on
     * (KEY_INDEX_DISK_CACHE_MB; default three quarters of /tmp's free space, at most 10 GB). 85 % of the
     * index's size in storage models a 10 GB /tmp at 1B rows.
     */
    private static final long INDEX_DISK_CACHE_BYTES =
            Long.getLong("bench.indexDiskMb", MergeOptions.DEFAULTS.keyIndexDiskCacheBytes() >> 20) << 20;
    /**
     * {@code -Dbench.indexBuildMb=N}: the memory the index's rebuild may use (default: the merger's, the
     * cache's budget but at least a third of the heap). A fiftieth of the 150 bytes a row the build
     * once planned with models a 10 GB Lambda (3 GB) rebuilding a 1B-row index.
     */
    private static final long INDEX_BUILD_BYTES =
            Long.getLong("bench.indexBuildMb", MergeOptions.buildBytesFor(INDEX_CACHE_BYTES) >> 20) << 20;
    /**
     * {@code -Dbench.stageAhead=false}: stage each steady merge's changes just before it, as the
     * benchmark did until 2026-12-05. By default all of them are staged before the first steady merge,
     * and the merges drain that backlog one after the other, as a merger at 40,000 writes a second
     * does. A merger's container stages nothing: staging 100,000 changes here (events built, decoded,
     * encoded and sent to the embedded S3 server) filled the young generation between merges, so
     * about half the collections ran while nothing merged, and collected a merge's garbage outside
     * its figures (BENCHMARKS.md: the same code measured 9 % lower staged ahead).
     */
    private static final boolean STAGE_AHEAD = Boolean.parseBoolean(System.getProperty("bench.stageAhead", "true"));
    /** {@code -Dbench.history=on}: the merger also keeps a change history (HISTORY_TABLE). */
    private static final boolean HISTORY = "on".equals(System.getProperty("bench.history", "off"));
    /**
     * {@code -Dbench.formatVersion=3}: the table in Iceberg format v3 (TABLE_FORMAT_VERSION), whose
     * merges write one Puffin file of deletion vectors instead of a position delete file per data file.
     */
    private static final int FORMAT_VERSION = Integer.getInteger("bench.formatVersion", 2);
    /**
     * {@code -Dbench.deleteGranularity=partition}: the table's {@code write.delete.granularity}, so a
     * v2 merge writes one delete file per partition with only its own positions, instead of one per
     * data file carrying every position deleted since compaction: what the cheapest v2 deletes could
     * save a merge (BENCHMARKS.md, "Delete files" for what readers pay for them).
     */
    private static final String DELETE_GRANULARITY = System.getProperty("bench.deleteGranularity");
    /**
     * {@code -Dbench.deletePageVersion=v2}: the table's {@code write.delete.parquet.page-version}, so a
     * v2 merge's delete files hold their positions delta-encoded in Parquet's v2 pages.
     */
    private static final String DELETE_PAGE_VERSION = System.getProperty("bench.deletePageVersion");
    /**
     * {@code -Dbench.deleteCodec=snappy|uncompressed}: the table's {@code
     * write.delete.parquet.compression-codec}, what a v2 merge compresses its delete files' pages with.
     */
    private static final String DELETE_CODEC = System.getProperty("bench.deleteCodec");
    /** {@code -Dbench.removals=mark,soft}: TTL_EXPIRIES and DELETES (default: delete,hard). */
    private static final String[] REMOVALS =
            System.getProperty("bench.removals", "delete,hard").split(",");

    private static final String MODE = (KEY_INDEX ? ", key index" : ", key columns scanned")
            + (PRIME > 0 ? ", warm" : "")
            + (NARROW ? ", narrow items" : "")
            + (HISTORY ? ", change history" : "")
            + (FORMAT_VERSION != 2 ? ", format v" + FORMAT_VERSION : "")
            + (DELETE_GRANULARITY != null ? ", " + DELETE_GRANULARITY + "-scoped deletes" : "")
            + (DELETE_PAGE_VERSION != null ? ", delete files in " + DELETE_PAGE_VERSION + " pages" : "")
            + (DELETE_CODEC != null ? ", delete files " + DELETE_CODEC : "")
            + (REMOVALS[0].equals("delete") && REMOVALS[1].equals("hard")
                    ? ""
                    : ", TTL_EXPIRIES=" + REMOVALS[0] + " DELETES=" + REMOVALS[1]);
    private static final long SEQ_BASE = 3_000_000_000_000_000_000L;

    public static void main(String[] args) throws Exception {
        AsPackaged.hideWhatThePackagesLeaveOut(); // Hadoop's defaults files, as in the Lambda packages
        long[] sizes = args.length == 0
                ? new long[] {1_000_000L}
                : Arrays.stream(args).mapToLong(Long::parseLong).toArray();
        Path dir = Files.createTempDirectory("merge-bench");
        try (EmbeddedS3Server server = EmbeddedS3Server.onDisk(dir.resolve("s3"))) {
            server.createBucket("bench");
            LocalStack stack = new LocalStack(server, "bench", dir);
            List<double[]> results = new ArrayList<>();
            // A scheduled merger runs in a warm container: measure after the JIT has seen a merge (untimed,
            // small table). -Dbench.cold=true measures the first merge of a fresh JVM instead.
            if (!Boolean.getBoolean("bench.cold")) {
                System.out.println("warm-up merge (not measured)");
                run(stack, server, 50_000, 20_000);
            }
            for (long rows : sizes) {
                results.add(new double[] {rows, run(stack, server, rows, CHANGES)});
            }
            int cores = Runtime.getRuntime().availableProcessors();
            String runs = MAX_PER_RUN >= CHANGES ? "one run" : "runs of at most " + String.format("%,d", MAX_PER_RUN);
            System.out.println();
            System.out.printf("%-12s %-14s %-14s%n", "table rows", "merge seconds", "changes/s");
            for (double[] r : results) {
                System.out.printf(
                        "%-12s %-14.2f %-14s%n",
                        String.format("%,d", (long) r[0]), r[1], String.format("%,.0f", CHANGES / r[1]));
                Results.report(
                        String.format(
                                "merger: %,d mixed changes into a %,d-row table, %s, %d cores%s",
                                CHANGES, (long) r[0], runs, cores, MODE),
                        ">= 100,000 changes/s per core",
                        String.format(
                                "%,.0f changes/s (%,.0f per core," + " %.2f s)",
                                CHANGES / r[1], CHANGES / r[1] / cores, r[1]));
                // The merger's memory bound: the run completing in a heap this size shows it needs no more.
                // (Heap "in use" is no measure: a JVM lets garbage pile up to whatever maximum it is given.)
                if (Boolean.getBoolean("bench.reportHeap")) {
                    Results.report(
                            String.format("merger heap: %,d changes, %s, into %,d rows", CHANGES, runs, (long) r[0]),
                            "<= 1 GB",
                            String.format(
                                    "completes in -Xmx%d MB",
                                    Runtime.getRuntime().maxMemory() >> 20));
                }
            }
            if (results.size() > 1) {
                double ratio = results.get(results.size() - 1)[1] / results.get(0)[1];
                System.out.printf("time ratio largest/smallest: %.2f%n", ratio);
                Results.report(
                        String.format(
                                "merge time ratio, %,d / %,d rows%s",
                                (long) results.get(results.size() - 1)[0], (long) results.get(0)[0], MODE),
                        "<= 1.5",
                        String.format("%.2f", ratio));
            }
        } finally {
            deleteRecursively(dir);
        }
    }

    private static double run(LocalStack stack, EmbeddedS3Server server, long rows, int changes) {
        String name = "bench_" + rows;
        Map<String, String> variables = stack.environment(name);
        if (HISTORY) {
            variables.put("HISTORY_TABLE", name + "_history");
        }
        variables.put("TABLE_FORMAT_VERSION", Integer.toString(FORMAT_VERSION));
        variables.put("TTL_EXPIRIES", REMOVALS[0]);
        variables.put("DELETES", REMOVALS[1]);
        Environment env = new Environment(variables);
        StagingSettings staging = new StagingSettings("bench", "staging-" + rows + "/", "quarantine/");
        CatalogSettings catalogSettings = CatalogSettings.from(env, staging, S3Settings.from(env));
        TableSettings tableSettings = TableSettings.from(env);
        Catalog catalog = catalogSettings.load();
        try {
            return run(catalog, server, staging, tableSettings, rows, changes);
        } finally {
            try {
                ((Closeable) catalog).close();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    private static double run(
            Catalog catalog,
            EmbeddedS3Server server,
            StagingSettings staging,
            TableSettings tableSettings,
            long rows,
            int changes) {
        S3Client s3 = server.newClient();
        StagingStore store = new StagingStore(s3, staging);

        long t0 = System.nanoTime();
        Table table = TableCreator.loadOrCreate(
                catalog,
                TableIdentifier.of(tableSettings.namespace(), tableSettings.name()),
                tableSettings,
                List.of(change(0, Operation.INSERT, 0, new Random(0))));
        // The delete files' settings the flags ask for, in one commit (none without a flag).
        Map<String, String> deleteSettings = new HashMap<>();
        deleteSettings.put(TableProperties.DELETE_GRANULARITY, DELETE_GRANULARITY);
        deleteSettings.put(TableProperties.DELETE_PARQUET_PAGE_VERSION, DELETE_PAGE_VERSION);
        deleteSettings.put(TableProperties.DELETE_PARQUET_COMPRESSION, DELETE_CODEC);
        deleteSettings.values().removeIf(Objects::isNull);
        if (!deleteSettings.isEmpty()) {
            UpdateProperties update = table.updateProperties();
            deleteSettings.forEach(update::set);
            update.commit();
        }
        bulkLoad(table, rows);
        System.out.printf("loaded %,d rows in %.1f s%n", rows, (System.nanoTime() - t0) / 1e9);

        Random random = new Random(rows);
        BatchStager stager = new BatchStager(store);
        boolean keyIndex = KEY_INDEX;
        MergeOptions options = new MergeOptions(
                MAX_PER_RUN,
                1L << 30,
                3,
                8,
                keyIndex,
                64,
                INDEX_CACHE_BYTES,
                INDEX_DISK_CACHE_BYTES,
                INDEX_BUILD_BYTES,
                Long.getLong("bench.rewriteBelow", MergeOptions.DEFAULTS.rewriteFilesBelowBytes()),
                Long.getLong("bench.rewritePerMerge", MergeOptions.DEFAULTS.rewriteBytesPerMerge()),
                false);
        if (PRIME > 0) {
            // The steady state: a first merge (untimed as the steady state; with the index on, it builds
            // the index from the bulk-loaded table, as after an upgrade) leaves a warm container.
            stage(stager, rows, PRIME, 0, random);
            long p0 = System.nanoTime();
            MergeResult primed = new Merger(catalog, tableSettings, store, options).run();
            double primeSeconds = (System.nanoTime() - p0) / 1e9;
            System.out.printf("priming merge of %,d changes: %.2f s (%s)%n", PRIME, primeSeconds, primed);
            table.refresh();
            if (keyIndex) {
                var status = dev.ddb2iceberg.status.TableStatus.of(
                                tableSettings.name(), table, store, 128L << 20, Clock.systemUTC())
                        .keyIndex();
                Results.report(
                        String.format("key index build from a %,d-row table (first merge with KEY_INDEX=on)", rows),
                        "-",
                        String.format(
                                "%.1f s; %,d bytes in S3 (%.1f bytes per row)",
                                primeSeconds, status.bytes(), (double) status.bytes() / rows));
                Results.report(
                        String.format(
                                "key index in a warm merger's memory, %,d rows%s",
                                rows, NARROW ? ", narrow items" : ""),
                        "-",
                        String.format("%.1f bytes per row", (double) indexMemoryBytes(table) / status.entries()));
            }
        }
        stage(stager, rows, changes, PRIME, random);
        // -Dbench.jfr=<file>: a JFR profile of the merge alone (not of the load), for `jfr view hot-methods`.
        String jfr = System.getProperty("bench.jfr");
        jdk.jfr.Recording recording = null;
        if (jfr != null) {
            try {
                recording = new jdk.jfr.Recording(jdk.jfr.Configuration.getConfiguration("profile"));
            } catch (IOException | ParseException e) {
                throw new IllegalStateException(e);
            }
            recording.enable("jdk.ExecutionSample").withPeriod(Duration.ofMillis(2)); // enough samples for seconds
            recording.start();
        }
        System.gc(); // the load's garbage is not the merge's
        // -Dbench.profile=<file>: async-profiler's CPU profile of the merge alone, every thread, as
        // collapsed stacks (one line a stack, thread name first), for a flame graph or a grep.
        String profile = System.getProperty("bench.profile");
        // -Dbench.profileSteady=true: profile the steady merges instead (the JIT done compiling).
        boolean profileSteady = Boolean.getBoolean("bench.profileSteady");
        if (profileSteady && PROFILE_FROM >= STEADY_MERGES) {
            throw new IllegalArgumentException("-Dbench.profileFrom=" + PROFILE_FROM + " profiles none of the "
                    + STEADY_MERGES + " steady merges (-Dbench.steadyMerges): give it a number below that");
        }
        if (profile != null && !profileSteady) {
            profiler(PROFILER_START);
        }
        long cpu0 = processCpuNanos();
        Map<Long, Long> server0 = serverThreadCpu();
        long start = System.nanoTime();
        MergeResult result;
        do { // what the schedule does: runs until nothing waits
            result = new Merger(catalog, tableSettings, store, options).run();
        } while (result.backlogObjects() > 0);
        double seconds = (System.nanoTime() - start) / 1e9;
        // The CPU the whole process spent (merge, embedded S3 server, JIT, GC): below seconds x cores,
        // the merge waits rather than computes.
        double cpuSeconds = (processCpuNanos() - cpu0) / 1e9;
        double serverSeconds = serverCpuNanosSince(server0) / 1e9;
        System.out.printf(
                "measured merge: %.2f s, %.2f s of process CPU (%.0f %% of %d cores), of which the embedded S3"
                        + " server %.2f s: %,.0f changes per CPU-second of the merger's own%n",
                seconds,
                cpuSeconds,
                100 * cpuSeconds / (seconds * CORES),
                CORES,
                serverSeconds,
                changes / (cpuSeconds - serverSeconds));
        if (profile != null && !profileSteady) {
            profiler("stop,collapsed,file=" + profile.replace(".collapsed", "") + "-" + rows + ".collapsed");
        }
        if (recording != null) {
            recording.stop();
            try {
                recording.dump(Path.of(jfr.replace(".jfr", "") + "-" + rows + ".jfr"));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        System.out.printf("%,d rows: %s%n", rows, result);
        if (STEADY_MERGES > 0) {
            // A long steady state: the index's upkeep (merging deltas, folding them into the parts) comes
            // every so many merges, so the mean and the slowest merge tell more than one merge does.
            List<Double> times = new ArrayList<>();
            List<Long> indexBytes = new ArrayList<>();
            // The merges' own cache: the first budget asked for made it.
            IndexCache cache = IndexCache.shared(INDEX_CACHE_BYTES, INDEX_DISK_CACHE_BYTES);
            List<Long> diskBytes = new ArrayList<>();
            List<Double> ownCpu = new ArrayList<>(); // the process's CPU less the embedded S3 server's
            // Of that, the JIT compiling and the collector, shown apart: the JIT's compiles are what
            // a long-lived container would amortise, if they settled (in 40 merges they did not).
            List<Double> jitCpu = new ArrayList<>();
            List<Double> gcCpu = new ArrayList<>();
            // Classes loaded during each merge: a JIT that never settles may be compiling classes
            // that are new every merge (generated ones), not old code crossing its thresholds.
            List<Long> classesLoaded = new ArrayList<>();
            java.lang.management.ClassLoadingMXBean classes =
                    java.lang.management.ManagementFactory.getClassLoadingMXBean();
            double compilesWaited = 0;
            List<Long> allocated = new ArrayList<>(); // bytes, by the merger's threads (not the S3 server's)
            Map<String, Long> collections = new java.util.TreeMap<>(); // during the merges, by collector
            // Each merge takes one staging's changes, as when they were staged just before it.
            MergeOptions steadyOptions = options.withMaxChanges(Math.min(MAX_PER_RUN, changes));
            if (STAGE_AHEAD) {
                for (int m = 0; m < STEADY_MERGES; m++) {
                    stage(stager, rows, changes, PRIME + changes * (m + 2), random);
                }
                System.gc(); // the staging's garbage is not the merges'
            }
            for (int m = 0; m < STEADY_MERGES; m++) {
                if (!STAGE_AHEAD) {
                    stage(stager, rows, changes, PRIME + changes * (m + 2), random);
                }
                // The JIT compiles what the staging just ran on its own threads: let it finish, so
                // the merge's JIT figure is the merge's (a merger's container stages nothing).
                compilesWaited += awaitIdleJit();
                long a0 = mergerAllocatedBytes();
                Map<String, Long> gcCount0 = collectionCounts();
                long read0 = cache.bytesRead();
                long disk0 = cache.diskBytesRead();
                long c0 = processCpuNanos();
                Map<Long, Long> s0 = serverThreadCpu();
                Map<Long, Long> jit0 = jvmThreadCpu(JIT_THREADS);
                Map<Long, Long> gc0 = jvmThreadCpu(GC_THREADS);
                boolean profiled = profile != null && profileSteady && m >= PROFILE_FROM;
                if (profiled) { // the merges alone, not the staging between them
                    // "resume" alone would resume with the default event, not the one asked for
                    profiler(m == PROFILE_FROM ? PROFILER_START : PROFILER_START.replaceFirst("start", "resume"));
                }
                long k0 = classes.getTotalLoadedClassCount();
                long m0 = System.nanoTime();
                new Merger(catalog, tableSettings, store, steadyOptions).run();
                if (profiled) {
                    profiler("stop");
                }
                times.add((System.nanoTime() - m0) / 1e9);
                classesLoaded.add(classes.getTotalLoadedClassCount() - k0);
                ownCpu.add((processCpuNanos() - c0 - serverCpuNanosSince(s0)) / 1e9);
                jitCpu.add(jvmThreadCpuSince(jit0, JIT_THREADS) / 1e9);
                gcCpu.add(jvmThreadCpuSince(gc0, GC_THREADS) / 1e9);
                allocated.add(mergerAllocatedBytes() - a0);
                collectionCounts()
                        .forEach((gc, n) -> collections.merge(gc, n - gcCount0.getOrDefault(gc, 0L), Long::sum));
                indexBytes.add(cache.bytesRead() - read0);
                diskBytes.add(cache.diskBytesRead() - disk0);
            }
            if (profile != null && profileSteady) {
                profiler("dump,collapsed,file=" + profile.replace(".collapsed", "") + "-steady-" + rows + ".collapsed");
            }
            double mean =
                    times.stream().mapToDouble(Double::doubleValue).average().orElse(0);
            double max = times.stream().mapToDouble(Double::doubleValue).max().orElse(0);
            List<Double> sorted = times.stream().sorted().toList();
            double p95 = sorted.get((int) Math.min(sorted.size() - 1, Math.ceil(sorted.size() * 0.95) - 1));
            double meanCpu =
                    ownCpu.stream().mapToDouble(Double::doubleValue).average().orElse(0);
            System.out.printf(
                    "%d more merges of %,d changes: mean %.2f s, p95 %.2f s, max %.2f s; mean %.2f s of the"
                            + " merger's own CPU (the embedded S3 server's left out), %,.0f changes per CPU-second%n",
                    STEADY_MERGES, changes, mean, p95, max, meanCpu, changes / meanCpu);
            double meanJit =
                    jitCpu.stream().mapToDouble(Double::doubleValue).average().orElse(0);
            double meanGc =
                    gcCpu.stream().mapToDouble(Double::doubleValue).average().orElse(0);
            System.out.printf(
                    "  of which the JIT compiling %.2f s (per merge: %s) and the collector %.2f s; without the"
                            + " JIT, %,.0f changes per CPU-second (the staging's compiles waited for: %.1f s"
                            + " in all)%n",
                    meanJit,
                    jitCpu.stream().map(s -> String.format("%.2f", s)).toList(),
                    meanGc,
                    changes / (meanCpu - meanJit),
                    compilesWaited);
            System.out.printf("  classes loaded during each merge: %s%n", classesLoaded);
            double meanAllocated =
                    allocated.stream().mapToLong(Long::longValue).average().orElse(0);
            System.out.printf(
                    "  allocated by the merger (the S3 server's left out): mean %,.0f MB a merge, %,.0f bytes a"
                            + " change; collections during the %d merges: %s (%s)%n",
                    meanAllocated / 1e6,
                    meanAllocated / changes,
                    STEADY_MERGES,
                    collections,
                    STAGE_AHEAD
                            ? "all merges' changes staged before the first"
                            : "each merge's changes staged just before it");
            // A day of merges is many hours of this: what grows between compactions (each merge's
            // delete files) shows as the rate falling from one third of the run to the next.
            if (STEADY_MERGES >= 30) {
                List<String> thirds = new ArrayList<>();
                for (int t = 0; t < 3; t++) {
                    List<Double> part = ownCpu.subList(t * STEADY_MERGES / 3, (t + 1) * STEADY_MERGES / 3);
                    List<Double> jitPart = jitCpu.subList(t * STEADY_MERGES / 3, (t + 1) * STEADY_MERGES / 3);
                    double cpu = part.stream()
                            .mapToDouble(Double::doubleValue)
                            .average()
                            .orElse(0);
                    double jit = jitPart.stream()
                            .mapToDouble(Double::doubleValue)
                            .average()
                            .orElse(0);
                    thirds.add(String.format(
                            "merges %d-%d: %,.0f (%,.0f)",
                            t * STEADY_MERGES / 3 + 1,
                            (t + 1) * STEADY_MERGES / 3,
                            changes / cpu,
                            changes / (cpu - jit)));
                }
                System.out.printf(
                        "  changes per CPU-second by thirds of the run (without the JIT): %s%n",
                        String.join("; ", thirds));
            }
            double median = sorted.get(sorted.size() / 2);
            long inMemory = keyIndex ? indexMemoryBytes(table) : 0;
            String cached = String.format(
                    ", index cache %,d MB (index %,d MB in memory), disk cache %,d MB",
                    INDEX_CACHE_BYTES >> 20, inMemory >> 20, INDEX_DISK_CACHE_BYTES >> 20);
            Results.report(
                    String.format(
                            "merger, %d steady-state merges of %,d changes into %,d rows%s%s",
                            STEADY_MERGES, changes, rows, MODE, cached),
                    "p95 <= 1.5 s; max <= 3 x median",
                    String.format(
                            "mean %.2f s, median %.2f s, p95 %.2f s, max %.2f s (%.1f x median)",
                            mean, median, p95, max, max / median));
            List<Long> sortedBytes = indexBytes.stream().sorted().toList();
            Results.report(
                    String.format(
                            "merger, index bytes read from S3 per merge, those %d merges into %,d rows%s",
                            STEADY_MERGES, rows, cached),
                    "<= 50 MB",
                    String.format(
                            "mean %.1f MB, median %.1f MB, max %.1f MB",
                            indexBytes.stream()
                                            .mapToLong(Long::longValue)
                                            .average()
                                            .orElse(0)
                                    / 1e6,
                            sortedBytes.get(sortedBytes.size() / 2) / 1e6,
                            sortedBytes.get(sortedBytes.size() - 1) / 1e6));
            Results.report(
                    String.format(
                            "merger, index bytes read from the local disk cache per merge, those %d merges%s",
                            STEADY_MERGES, cached),
                    "-",
                    String.format(
                            "mean %.1f MB",
                            diskBytes.stream()
                                            .mapToLong(Long::longValue)
                                            .average()
                                            .orElse(0)
                                    / 1e6));
        }
        if (keyIndex && PRIME > 0) {
            // A fresh container: the same size of merge with nothing cached, every index part read from S3.
            stage(stager, rows, PRIME, PRIME + changes * (STEADY_MERGES + 2), random); // after the steady merges
            long c0 = System.nanoTime();
            MergeResult cold = new Merger(catalog, tableSettings, store, options.withoutKeyIndexCache()).run();
            double coldSeconds = (System.nanoTime() - c0) / 1e9;
            table.refresh();
            var index = dev.ddb2iceberg.status.TableStatus.of(
                            tableSettings.name(), table, store, 128L << 20, Clock.systemUTC())
                    .keyIndex();
            System.out.printf("cold merge of %,d changes: %.2f s (%s)%n", PRIME, coldSeconds, cold);
            Results.report(
                    String.format(
                            "merger, cold container: %,d mixed changes into %,d rows, key index read from S3%s",
                            PRIME, rows, NARROW ? ", narrow items" : ""),
                    "-",
                    String.format(
                            "%.2f s; %,d keys over %d parts; index %.0f MB in S3",
                            coldSeconds, PRIME, index.parts(), index.bytes() / 1e6));
        }
        return seconds;
    }

    private static final int CORES = Runtime.getRuntime().availableProcessors();

    /** CPU time of this JVM's threads so far. */
    static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean)
                        java.lang.management.ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    /**
     * CPU time so far of each thread of the embedded S3 server (S3Proxy's Jetty pool): in AWS that
     * work is S3's, so a merge's own CPU is the process's less this.
     */
    static Map<Long, Long> serverThreadCpu() {
        java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
        Map<Long, Long> cpu = new HashMap<>();
        for (long id : serverThreadIds()) {
            cpu.put(id, threads.getThreadCpuTime(id));
        }
        return cpu;
    }

    /** The embedded S3 server's threads alive now (S3Proxy's Jetty pool). */
    private static List<Long> serverThreadIds() {
        java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
        List<Long> ids = new ArrayList<>();
        for (java.lang.management.ThreadInfo t : threads.getThreadInfo(threads.getAllThreadIds())) {
            if (t != null && t.getThreadName().startsWith("S3Proxy")) {
                ids.add(t.getThreadId());
            }
        }
        return ids;
    }

    /**
     * Bytes allocated so far by every thread but the embedded S3 server's (those alive now: the
     * server's pool keeps its threads), ended threads included.
     */
    private static long mergerAllocatedBytes() {
        var threads = (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        long server = 0;
        for (long id : serverThreadIds()) {
            server += Math.max(0, threads.getThreadAllocatedBytes(id)); // -1: the thread ended meanwhile
        }
        return threads.getTotalThreadAllocatedBytes() - server;
    }

    /** How many collections each collector has run so far. */
    private static Map<String, Long> collectionCounts() {
        Map<String, Long> counts = new HashMap<>();
        for (var gc : java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()) {
            counts.put(gc.getName(), gc.getCollectionCount());
        }
        return counts;
    }

    /** The server threads' CPU since {@code before} (a thread that ended meanwhile is not counted). */
    static long serverCpuNanosSince(Map<Long, Long> before) {
        long nanos = 0;
        for (Map.Entry<Long, Long> now : serverThreadCpu().entrySet()) {
            nanos += now.getValue() - before.getOrDefault(now.getKey(), 0L);
        }
        return nanos;
    }

    /**
     * CPU nanoseconds of the JVM's own threads whose name starts with {@code prefix} ("C1 Compiler",
     * "C2 Compiler": the JIT; "GC Thread", "G1 ": the collectors), by Linux thread id, read from
     * /proc (the JMX thread bean does not see these threads). Empty where there is no /proc.
     */
    private static Map<Long, Long> jvmThreadCpu(String... prefixes) {
        Map<Long, Long> cpu = new HashMap<>();
        long tick = 10_000_000L; // USER_HZ is 100 on Linux: /proc counts CPU in 10 ms ticks
        try (var tasks = Files.list(Path.of("/proc/self/task"))) {
            for (Path task : (Iterable<Path>) tasks::iterator) {
                try {
                    String name = Files.readString(task.resolve("comm")).trim();
                    if (Arrays.stream(prefixes).noneMatch(name::startsWith)) {
                        continue;
                    }
                    String stat = Files.readString(task.resolve("stat"));
                    // Fields after the name's closing parenthesis: state is field 3, utime 14, stime 15.
                    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                    cpu.put(
                            Long.parseLong(task.getFileName().toString()),
                            (Long.parseLong(f[11]) + Long.parseLong(f[12])) * tick);
                } catch (IOException | RuntimeException gone) {
                    // the thread ended while we read it: what it spent is not counted
                }
            }
        } catch (IOException noProc) {
            // no /proc: nothing to count
        }
        return cpu;
    }

    /** What those threads spent since {@code before}; a thread that ended meanwhile is left out (an underestimate). */
    private static long jvmThreadCpuSince(Map<Long, Long> before, String... prefixes) {
        long nanos = 0;
        for (Map.Entry<Long, Long> now : jvmThreadCpu(prefixes).entrySet()) {
            nanos += now.getValue() - before.getOrDefault(now.getKey(), 0L);
        }
        return nanos;
    }

    private static final String[] JIT_THREADS = {"C1 Compiler", "C2 Compiler"};
    private static final String[] GC_THREADS = {"GC Thread", "G1 "}; // the parallel collector's, G1's

    /**
     * Waits (at most 10 s) until the JIT's queues are empty and nothing is being compiled, asking
     * the JVM's diagnostic command {@code Compiler.queue}; returns the seconds waited.
     */
    private static double awaitIdleJit() {
        long start = System.nanoTime();
        try {
            javax.management.ObjectName diagnostics =
                    new javax.management.ObjectName("com.sun.management:type=DiagnosticCommand");
            var server = java.lang.management.ManagementFactory.getPlatformMBeanServer();
            while (System.nanoTime() - start < 10_000_000_000L) {
                String queue = (String) server.invoke(
                        diagnostics, "compilerQueue", new Object[] {null}, new String[] {String[].class.getName()});
                // Idle: nothing but headers and "Empty" (a compile in progress is a line naming its
                // compiler thread, a queued one a line starting with its compile id).
                if (queue.lines().map(String::trim).allMatch(MergeThroughput::jitQueueIdleLine)) {
                    break;
                }
                java.util.concurrent.locks.LockSupport.parkNanos(20_000_000L);
            }
        } catch (javax.management.JMException e) {
            throw new IllegalStateException("cannot read the JIT's queue", e);
        }
        return (System.nanoTime() - start) / 1e9;
    }

    /** A line of Compiler.queue's answer that names no compile: blank, a header, or "Empty". */
    private static boolean jitQueueIdleLine(String line) {
        // "Current compiles:", "C1 compile queue:" (a compile in progress names its compiler thread)
        return line.isEmpty() || line.equals("Empty") || line.endsWith(":") && !line.contains("Thread");
    }

    /**
     * Starts async-profiler on every thread. {@code -Dbench.profileEvent=wall}: where each thread waits,
     * not only where the CPU goes; {@code =alloc} with {@code -Dbench.profileInterval=256k}: what allocates.
     */
    private static final String PROFILER_START = "start,event=" + System.getProperty("bench.profileEvent", "itimer")
            + ",interval=" + System.getProperty("bench.profileInterval", "1ms") + ",threads";

    /** Runs an async-profiler command in this JVM. */
    private static void profiler(String command) {
        try {
            one.profiler.AsyncProfiler.getInstance().execute(command);
        } catch (IOException e) {
            throw new UncheckedIOException("async-profiler: " + command, e);
        }
    }

    /** Memory the whole index takes once decoded (what the old whole-part cache held), part by part. */
    private static long indexMemoryBytes(Table table) {
        var index = dev.ddb2iceberg.index.KeyIndex.open(
                table,
                dev.ddb2iceberg.index.KeyIndex.manifestOf(table.currentSnapshot()),
                new dev.ddb2iceberg.index.IndexCache(0));
        long bytes = 0;
        for (int p = 0; p < index.manifest().parts(); p++) {
            bytes += index.readPart(p).memoryBytes();
        }
        return bytes;
    }

    /** Stages {@code count} mixed changes with sequence offsets after {@code seqFrom}. */
    static void stage(BatchStager stager, long rows, int count, int seqFrom, Random random) {
        List<Change> batch = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            int kind = random.nextInt(10);
            long n = kind == 0 ? rows + seqFrom + i : (long) (random.nextDouble() * rows); // 10% new items
            batch.add(change(
                    n,
                    kind < 8 ? (kind == 0 ? Operation.INSERT : Operation.MODIFY) : Operation.REMOVE,
                    seqFrom + i + 1,
                    random));
            if (batch.size() == 10_000) {
                stager.stage(StreamEvents.batch(batch).getRecords());
                batch.clear();
            }
        }
        if (!batch.isEmpty()) {
            stager.stage(StreamEvents.batch(batch).getRecords());
        }
    }

    /** Item n: partition key cust-(n/10), sort key n, and ~600 bytes of attributes (~40 when narrow). */
    static Change change(long n, Operation op, long seqOffset, Random random) {
        Map<String, DdbValue> keys = new LinkedHashMap<>();
        keys.put("pk", new DdbValue.S(String.format("cust-%09d", n / 10)));
        keys.put("sk", new DdbValue.N(Long.toString(n)));
        String seq = Long.toString(SEQ_BASE + seqOffset);
        if (op == Operation.REMOVE) {
            return new Change(keys, op, null, seq, 1_764_460_800_000L, false);
        }
        Map<String, DdbValue> image = new LinkedHashMap<>(keys);
        image.put("status", new DdbValue.S(new String[] {"PLACED", "PAID", "SHIPPED"}[random.nextInt(3)]));
        image.put("total_cents", new DdbValue.N(Integer.toString(random.nextInt(1_000_000))));
        image.put("gift", new DdbValue.Bool(random.nextBoolean()));
        if (NARROW) {
            return new Change(keys, op, image, seq, 1_764_460_800_000L, false);
        }
        StringBuilder note = new StringBuilder();
        while (note.length() < 500) {
            note.append(Long.toString(random.nextLong(), 36)).append(' ');
        }
        image.put("note", new DdbValue.S(note.toString()));
        return new Change(keys, op, image, seq, 1_764_460_800_000L, false);
    }

    /** Writes rows 0..n-1 in key order (so sorted within each bucket) and appends them in one commit. */
    static void bulkLoad(Table table, long n) {
        // Sixteen files open at once each buffer a row group: small ones keep the load within a 1 GB heap.
        table.updateProperties()
                .set(TableProperties.PARQUET_ROW_GROUP_SIZE_BYTES, Long.toString(8L << 20))
                .commit();
        TableLayout layout = TableLayout.of(table);
        PartitionKey partition = new PartitionKey(table.spec(), table.schema());
        InternalRecordWrapper wrapper = new InternalRecordWrapper(table.schema().asStruct());
        GenericFileWriterFactory writers = new GenericFileWriterFactory.Builder(table)
                .dataFileFormat(FileFormat.PARQUET)
                .build();
        OutputFileFactory files = OutputFileFactory.builderFor(table, 1, 1)
                .format(FileFormat.PARQUET)
                .build();
        FanoutDataWriter<Record> writer = new FanoutDataWriter<>(writers, files, table.io(), 128L << 20);
        Random random = new Random(n);
        try (writer) {
            for (long i = 0; i < n; i++) {
                // Every row has its own (older) sequence number, as rows written by past changes do.
                Record row = layout.toRow(change(i, Operation.INSERT, i - n, random));
                partition.partition(wrapper.wrap(row));
                writer.write(row, table.spec(), partition);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        table.updateProperties()
                .remove(TableProperties.PARQUET_ROW_GROUP_SIZE_BYTES)
                .commit();
        AppendFiles append = table.newAppend();
        writer.result().dataFiles().forEach(append::appendFile);
        append.commit();
    }

    static void deleteRecursively(Path dir) throws IOException {
        try (var paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }
}
