package dev.ddb2iceberg.benchmarks;

import dev.ddb2iceberg.commit.Checkpoint;
import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.config.CatalogSettings;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.S3Settings;
import dev.ddb2iceberg.config.StagingSettings;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.FaultInjectingBlobStore;
import dev.ddb2iceberg.merge.ContinuousMerge;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.merge.MergeResult;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.observe.LogSettings;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagedObjectName;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.table.TableSettings;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.StreamEvents;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.slf4j.event.Level;

/**
 * Freshness end to end, in real time, on the local stack (embedded S3 server on disk, SQLite
 * catalog): for every change, the time from its creation (DynamoDB's write) to the commit that
 * made it visible to a query.
 *
 * <ul>
 *   <li>A producer writes changes at a steady rate ({@code -Dbench.rate}, default 1,000/s), or in
 *       bursts ({@code -Dbench.pattern=bursts}: 10,000 changes in 2 s, then 28 s of silence), each
 *       with its real creation time, into shards by key as DynamoDB does ({@code -Dbench.shards}, 2).
 *   <li>One poller per shard plays the event source mapping: it looks four times a second, and
 *       invokes the stager's work ({@link BatchStager}) when 1,000 records are gathered or the
 *       template's batching window has passed since the batch's first record (5 s scheduled, 1 s
 *       continuous). A shard's batches are staged one at a time, as Lambda does.
 *   <li>The scheduler starts a merger run every 60 s; with concurrency 1, a start that finds the
 *       previous run still going waits for it (Lambda would retry the throttled invocation). A run
 *       is one merge (scheduled) or {@link ContinuousMerge} with the template's settings, bounded
 *       by its scheduled time plus MERGE_RUN_SECONDS, exactly as the handler bounds it.
 *   <li>After the producer stops, runs go on until everything is merged. A change's visibility is
 *       the timestamp of the first snapshot whose checkpoint names its staged object.
 * </ul>
 *
 * <p>Not modelled: DynamoDB's own delay before a record is readable from the stream (documented
 * as near real time) and the Lambda invocation overheads (a warm invoke is milliseconds).
 *
 * <p>Run: {@code java -cp ... dev.ddb2iceberg.benchmarks.Freshness scheduled|continuous [seconds]}
 */
public final class Freshness {
    private static final int RATE = Integer.getInteger("bench.rate", 1_000);
    private static final int SHARDS = Integer.getInteger("bench.shards", 2);
    private static final String PATTERN = System.getProperty("bench.pattern", "steady");
    private static final int BATCH_SIZE = 1_000;
    private static final long POLL_MILLIS = 250;
    private static final Duration SCHEDULE = Duration.ofMinutes(1);
    private static final int KEYS = 200_000;

    /** A batch the stager staged: its token in checkpoints, and its changes' creation times. */
    private record StagedBatch(String token, long[] created, long stagedAt) {}

    public static void main(String[] args) throws Exception {
        AsPackaged.hideWhatThePackagesLeaveOut(); // Hadoop's defaults files, as in the Lambda packages
        String mode = args.length > 0 ? args[0] : "continuous";
        int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 300;
        boolean continuous = mode.equals("continuous");
        // Quiet: the functions' INFO lines would drown the report (LOG_LEVEL=INFO brings them back).
        LogSettings.defaultPipelineLevel(Level.WARN);
        Path dir = Files.createTempDirectory("freshness-bench");
        try (EmbeddedS3Server server = EmbeddedS3Server.onDisk(dir.resolve("s3"))) {
            server.createBucket("bench");
            Map<String, String> vars = new LocalStack(server, "bench", dir).environment("fresh");
            vars.put("MERGE_MODE", mode);
            Environment env = new Environment(vars);
            StagingSettings staging = StagingSettings.from(env);
            S3Settings s3 = S3Settings.from(env);
            Catalog catalog = CatalogSettings.from(env, staging, s3).load();
            TableSettings table = TableSettings.from(env);
            MergeOptions options = MergeOptions.from(env);
            ContinuousMerge.Settings loop = ContinuousMerge.Settings.from(env);
            StagingStore store = new StagingStore(server.newClient(), staging);
            Duration window = Duration.ofSeconds(continuous ? 1 : 5);
            System.out.printf(
                    "freshness, %s mode, %s at %,d changes/s over %d shards, %d s; batching window %d s%n",
                    mode, PATTERN, RATE, SHARDS, seconds, window.toSeconds());

            // Warm-up (not measured): the table exists and the JIT has seen a stage and a merge.
            Generator gen = new Generator(new Random(5));
            new BatchStager(store)
                    .stage(StreamEvents.batch(gen.next(2_000, System.currentTimeMillis()))
                            .getRecords());
            new Merger(catalog, table, store, options).run();

            Map<String, StagedBatch> batches = new ConcurrentHashMap<>();
            List<LinkedBlockingQueue<Change>> shards = new ArrayList<>();
            for (int i = 0; i < SHARDS; i++) {
                shards.add(new LinkedBlockingQueue<>());
            }
            AtomicBoolean producing = new AtomicBoolean(true);
            AtomicBoolean polling = new AtomicBoolean(true);
            List<Long> stageMillis = Collections.synchronizedList(new ArrayList<>());

            Thread producer = new Thread(() -> produce(gen, shards, seconds, producing), "producer");
            List<Thread> pollers = new ArrayList<>();
            for (int i = 0; i < SHARDS; i++) {
                LinkedBlockingQueue<Change> shard = shards.get(i);
                pollers.add(new Thread(() -> poll(shard, window, store, batches, stageMillis, polling), "esm-" + i));
            }
            List<MergeResult> merges = Collections.synchronizedList(new ArrayList<>());
            List<String> runs = new ArrayList<>();
            long[] requests0 = requests(server);
            long start = System.currentTimeMillis();
            producer.start();
            pollers.forEach(Thread::start);

            // The schedule: a run every minute from 5 s after the start (traffic is flowing when the
            // measured minutes begin, as in a deployed pipeline), until the producer has stopped and
            // nothing waits in the shards or the staging prefix.
            Instant scheduled = Instant.ofEpochMilli(start).plusSeconds(5);
            int lateStarts = 0;
            while (true) {
                long wait = scheduled.toEpochMilli() - System.currentTimeMillis();
                if (wait > 0) {
                    Thread.sleep(wait);
                } else if (wait < -1_000) {
                    lateStarts++; // the previous run was still going at this run's time: it waited for it
                }
                Instant runStart = Instant.now();
                if (continuous) {
                    ContinuousMerge.Result r = new ContinuousMerge(
                                    loop,
                                    () -> {
                                        MergeResult m = new Merger(catalog, table, store, options).run();
                                        merges.add(m);
                                        return m;
                                    },
                                    store::anyStaged,
                                    Clock.systemUTC(),
                                    ContinuousMerge.Pause.sleeping(Clock.systemUTC()))
                            .run(scheduled.plus(loop.runLength()));
                    runs.add(String.format(
                            "run at +%.0f s: %d merges, %d commits, %s, ended +%.1f s after its scheduled time",
                            (runStart.toEpochMilli() - start) / 1e3,
                            r.merges().size(),
                            r.commits(),
                            r.stoppedBecause(),
                            (System.currentTimeMillis() - scheduled.toEpochMilli()) / 1e3));
                } else {
                    merges.add(new Merger(catalog, table, store, options).run());
                    runs.add(String.format(
                            "run at +%.0f s: 1 merge, %.1f s",
                            (runStart.toEpochMilli() - start) / 1e3,
                            (System.currentTimeMillis() - runStart.toEpochMilli()) / 1e3));
                }
                System.out.println(runs.get(runs.size() - 1));
                scheduled = scheduled.plus(SCHEDULE);
                boolean drained = !producing.get()
                        && shards.stream().allMatch(LinkedBlockingQueue::isEmpty)
                        && !store.anyStaged()
                        && System.currentTimeMillis() > start + seconds * 1000L + window.toMillis() + 1_000;
                if (drained) {
                    break;
                }
            }
            long[] requests = requests(server);
            double minutes = (System.currentTimeMillis() - start) / 60_000.0;
            polling.set(false);
            producer.join();
            for (Thread t : pollers) {
                t.join();
            }

            // Each staged object's visibility: the first snapshot whose checkpoint names it.
            Table t = catalog.loadTable(TableIdentifier.of(table.namespace(), table.name()));
            Map<String, Long> visibleAt = new HashMap<>();
            List<Snapshot> snapshots = new ArrayList<>();
            t.snapshots().forEach(snapshots::add);
            snapshots.sort((a, b) -> Long.compare(a.sequenceNumber(), b.sequenceNumber()));
            for (Snapshot s : snapshots) {
                for (String token : Checkpoint.tokensOf(t.io(), s.summary())) {
                    visibleAt.putIfAbsent(token, s.timestampMillis());
                }
            }
            List<Long> lags = new ArrayList<>();
            List<Long> stagedLags = new ArrayList<>();
            int missing = 0;
            for (StagedBatch b : batches.values()) {
                Long at = visibleAt.get(b.token);
                if (at == null) {
                    missing++;
                    continue;
                }
                for (long created : b.created) {
                    lags.add(at - created);
                    stagedLags.add(b.stagedAt - created);
                }
            }
            long commits = snapshots.stream()
                    .filter(s -> s.summary().containsKey(PipelineProperties.APPLIED_FILE))
                    .count();
            long[] l = lags.stream().mapToLong(Long::longValue).sorted().toArray();
            long[] st = stagedLags.stream().mapToLong(Long::longValue).sorted().toArray();
            long[] sm = stageMillis.stream().mapToLong(Long::longValue).sorted().toArray();
            long[] mm = merges.stream()
                    .filter(m -> m.snapshotId() != null)
                    .mapToLong(MergeResult::millis)
                    .sorted()
                    .toArray();
            System.out.println();
            System.out.printf(
                    "changes: %,d in %,d staged objects (%d not found in any checkpoint), %d commits, %d runs,"
                            + " %d late starts%n",
                    l.length, batches.size(), missing, commits, runs.size(), lateStarts);
            System.out.printf(
                    "creation -> commit: p50 %.1f s, p95 %.1f s, max %.1f s%n",
                    pct(l, 50) / 1e3, pct(l, 95) / 1e3, l[l.length - 1] / 1e3);
            System.out.printf(
                    "  of which creation -> staged: p50 %.1f s, p95 %.1f s (batching window and the stager)%n",
                    pct(st, 50) / 1e3, pct(st, 95) / 1e3);
            System.out.printf(
                    "  stager, one batch: p50 %d ms, p95 %d ms; merge with a commit: p50 %d ms, p95 %d ms, max %d ms%n",
                    pct(sm, 50), pct(sm, 95), pct(mm, 50), pct(mm, 95), mm.length == 0 ? 0 : mm[mm.length - 1]);
            System.out.printf(
                    "  S3 requests a minute, stager and merger: %.0f PUT, %.0f GET, %.0f LIST, %.0f DELETE"
                            + " (%.1f min)%n",
                    (requests[0] - requests0[0]) / minutes,
                    (requests[1] - requests0[1]) / minutes,
                    (requests[2] - requests0[2]) / minutes,
                    (requests[3] - requests0[3]) / minutes,
                    minutes);
            long busy = merges.stream().mapToLong(MergeResult::millis).sum();
            System.out.printf(
                    "  merger busy %.1f s a minute (merges only; a continuous run also waits between them)%n",
                    busy / 1e3 / minutes);
            fixedCosts(catalog, TableIdentifier.of(table.namespace(), table.name()), store);
            Results.report(
                    String.format(
                            "freshness, %s mode, %s %,d changes/s, %d shards, creation to commit",
                            mode, PATTERN, RATE, SHARDS),
                    continuous ? "p95 <= 10 s" : "p95 <= 75 s",
                    String.format(
                            "p50 %.1f s, p95 %.1f s, max %.1f s (%d commits)",
                            pct(l, 50) / 1e3, pct(l, 95) / 1e3, l[l.length - 1] / 1e3, commits));
        } finally {
            MergeThroughput.deleteRecursively(dir);
        }
    }

    /** PUT, GET, LIST and DELETE requests the embedded server has had so far. */
    private static long[] requests(EmbeddedS3Server server) {
        FaultInjectingBlobStore f = server.faults();
        return new long[] {
            f.requests(FaultInjectingBlobStore.Operation.PUT),
            f.requests(FaultInjectingBlobStore.Operation.GET),
            f.requests(FaultInjectingBlobStore.Operation.LIST),
            f.requests(FaultInjectingBlobStore.Operation.DELETE)
        };
    }

    /** The merge's fixed costs on this stack: loading the table from the catalog, listing, the cheap look. */
    private static void fixedCosts(Catalog catalog, TableIdentifier id, StagingStore store) {
        int n = 20;
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            catalog.loadTable(id);
        }
        long t1 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            store.list();
        }
        long t2 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            store.anyStaged();
        }
        long t3 = System.nanoTime();
        System.out.printf(
                "  fixed costs, mean of %d: catalog load %.1f ms, staging list %.1f ms, anyStaged %.1f ms%n",
                n, (t1 - t0) / 1e6 / n, (t2 - t1) / 1e6 / n, (t3 - t2) / 1e6 / n);
    }

    private static long pct(long[] sorted, int p) {
        if (sorted.length == 0) {
            return 0;
        }
        return sorted[Math.min(sorted.length - 1, (int) Math.ceil(sorted.length * p / 100.0) - 1)];
    }

    /** Writes changes at the rate and pattern, each to its key's shard, with its creation time. */
    private static void produce(
            Generator gen, List<LinkedBlockingQueue<Change>> shards, int seconds, AtomicBoolean producing) {
        long start = System.currentTimeMillis();
        long sent = 0;
        try {
            while (true) {
                long now = System.currentTimeMillis();
                long elapsed = now - start;
                if (elapsed >= seconds * 1000L) {
                    break;
                }
                long due;
                if (PATTERN.equals("bursts")) {
                    // 10,000 changes in the first 2 s of every 30 s.
                    long cycle = elapsed / 30_000;
                    long inCycle = Math.min(elapsed % 30_000, 2_000);
                    due = cycle * 10_000 + inCycle * 10_000 / 2_000;
                } else {
                    due = elapsed * RATE / 1000;
                }
                if (due > sent) {
                    for (Change c : gen.next((int) (due - sent), now)) {
                        shards.get(Math.floorMod(c.keys().hashCode(), shards.size()))
                                .add(c);
                    }
                    sent = due;
                }
                Thread.sleep(10);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            producing.set(false);
        }
    }

    /** The event source mapping on one shard: batches by size or window, staged one at a time. */
    private static void poll(
            LinkedBlockingQueue<Change> shard,
            Duration window,
            StagingStore store,
            Map<String, StagedBatch> batches,
            List<Long> stageMillis,
            AtomicBoolean polling) {
        BatchStager stager = new BatchStager(store);
        List<Change> batch = new ArrayList<>();
        long firstAt = 0;
        try {
            while (polling.get()) {
                Change c;
                while (batch.size() < BATCH_SIZE && (c = shard.poll()) != null) {
                    if (batch.isEmpty()) {
                        firstAt = System.currentTimeMillis();
                    }
                    batch.add(c);
                }
                boolean full = batch.size() >= BATCH_SIZE;
                boolean windowPassed = !batch.isEmpty() && System.currentTimeMillis() - firstAt >= window.toMillis();
                if (full || windowPassed) {
                    long t0 = System.currentTimeMillis();
                    BatchStager.Result r =
                            stager.stage(StreamEvents.batch(batch).getRecords());
                    long t1 = System.currentTimeMillis();
                    if (!r.complete()) {
                        throw new IllegalStateException("staging failed: " + r.failure());
                    }
                    stageMillis.add(t1 - t0);
                    String token = Checkpoint.token(StagedObjectName.of(
                            "",
                            batch.get(0).sequenceNumber(),
                            batch.get(batch.size() - 1).sequenceNumber()));
                    batches.put(
                            token,
                            new StagedBatch(
                                    token,
                                    batch.stream()
                                            .mapToLong(Change::approximateCreationMillis)
                                            .toArray(),
                                    t1));
                    batch = new ArrayList<>();
                    continue; // a full shard is read again at once
                }
                TimeUnit.MILLISECONDS.sleep(POLL_MILLIS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Changes over a key space: 70% updates, 20% inserts of new items, 10% removals; increasing sequence numbers. */
    private static final class Generator {
        private final Random random;
        private long sequence = 4_000_000_000_000_000_000L;
        private final boolean[] exists = new boolean[KEYS];

        Generator(Random random) {
            this.random = random;
        }

        synchronized List<Change> next(int n, long createdMillis) {
            List<Change> out = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                int k = random.nextInt(KEYS);
                Map<String, DdbValue> key = Map.of("pk", new DdbValue.S("item-" + k));
                String seq = Long.toString(++sequence);
                int what = random.nextInt(10);
                if (exists[k] && what == 0) {
                    exists[k] = false;
                    out.add(new Change(key, Operation.REMOVE, null, seq, createdMillis, false));
                } else {
                    Map<String, DdbValue> image = new LinkedHashMap<>(key);
                    image.put("status", new DdbValue.S(random.nextBoolean() ? "open" : "shipped"));
                    image.put("total", new DdbValue.N(Integer.toString(random.nextInt(100_000))));
                    image.put("note", new DdbValue.S("order note " + Long.toHexString(random.nextLong())));
                    out.add(new Change(
                            key, exists[k] ? Operation.MODIFY : Operation.INSERT, image, seq, createdMillis, false));
                    exists[k] = true;
                }
            }
            return out;
        }
    }

    private Freshness() {}
}
