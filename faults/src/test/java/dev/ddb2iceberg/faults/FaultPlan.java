package dev.ddb2iceberg.faults;

import dev.ddb2iceberg.merge.MergeOptions;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.BooleanSupplier;

/**
 * Seed → what happens when: the seed's set-up (key shape, partitioning, format version, change
 * history, removal policy, merge options, an initial load from an export or not), which step comes
 * next, and which fault each delivery, merge, continuous run, maintenance run and export chunk
 * meets. The only holder of the seed's random sources: each decision is drawn here when the run
 * asks for it, so the same seed, asked the same questions (does the table exist yet, how many shards
 * are readable), gives the same faults in the same order. The source table draws its workload from
 * the main source, between the plan's draws, so it is built here too.
 *
 * <p>Three sources: the main one; one for the history and removal options and one for the export,
 * added later, so that their draws left the other seeds' runs as they were. Changing what is drawn,
 * or in which order, changes every seed's run.
 */
final class FaultPlan {
    private final long seed;
    private final Random random;
    /** The fanned-out merges' own draws, so that adding them left every other draw of a seed as it was. */
    private final Random fanOutRandom;
    /**
     * About one seed in three starts from a table that held items before its stream began: a
     * DynamoDB export (those items plus the stream's first changes) is loaded chunk by chunk, with
     * faults, while the stream flows. Its own random source leaves the other seeds' runs as they were.
     */
    private final Random exportRandom;

    private final boolean withExport;
    /**
     * Every other seed finds live rows through the key index, so both lookups face every fault; one in
     * four rewrites small files it touches (and continuous runs always do).
     */
    private final MergeOptions defaults;

    private final SourceTable.KeySchema keys;
    private final SourceTable source;
    /**
     * Half the seeds keep a change history (HISTORY_TABLE), which must hold each change of the
     * objects its checkpoints name exactly once after every run; and seeds without an export merge
     * under a random removal policy (an export loaded later than the stream's removals of its items
     * cannot bring their rows back to keep them, so those seeds keep the default). Their own random
     * source leaves the other draws as they were.
     */
    private final boolean withHistory;

    private final String ttlExpiries;
    private final String deletes;
    private final String partitionSpec;
    private final String formatVersion;

    FaultPlan(long seed) {
        this.seed = seed;
        // Merges fold small files (the default); one seed in four turns that off, so merges also give
        // small files deletes, carried from merge to merge. A small budget on half the folding seeds
        // leaves files for later merges to fold.
        MergeOptions options = MergeOptions.DEFAULTS.withKeyIndex(seed % 2 == 0);
        this.defaults = seed % 4 == 1
                ? options.withRewriteFilesBelow(0)
                : seed % 8 == 3 ? options.withRewriteBytesPerMerge(8 << 10) : options;
        this.random = new Random(seed);
        this.keys = SourceTable.KeySchema.values()[random.nextInt(SourceTable.KeySchema.values().length)];
        this.source = new SourceTable(random, keys, 20 + random.nextInt(60), 1 + random.nextInt(3));
        Random optionsRandom = new Random(seed * 131 + 17);
        this.withHistory = optionsRandom.nextBoolean();
        boolean exportLikely = new Random(seed * 31 + 7).nextInt(3) == 0; // as exportRandom draws it below
        if (!exportLikely && optionsRandom.nextBoolean()) {
            this.ttlExpiries = List.of("delete", "keep", "mark").get(optionsRandom.nextInt(3));
            this.deletes = optionsRandom.nextBoolean() ? "soft" : "hard";
        } else {
            this.ttlExpiries = null;
            this.deletes = null;
        }
        this.partitionSpec = random.nextBoolean()
                ? "none"
                : "bucket(4, " + source.key(0).keySet().iterator().next() + ")";
        this.formatVersion = random.nextInt(4) == 0 ? "3" : "2";
        this.exportRandom = new Random(seed * 31 + 7);
        this.fanOutRandom = new Random(seed * 53 + 11);
        this.withExport = exportRandom.nextInt(3) == 0;
        if (withExport != exportLikely) {
            throw new IllegalStateException("the export draw changed: keep the policy draw in step with it");
        }
    }

    // ------------------------------------------------------------------ the seed's set-up

    long seed() {
        return seed;
    }

    SourceTable.KeySchema keys() {
        return keys;
    }

    /** The source table, whose changes draw from the plan's main random source. */
    SourceTable source() {
        return source;
    }

    /** The merge options of every merge this seed runs, before a merge's own draws. */
    MergeOptions mergeDefaults() {
        return defaults;
    }

    boolean withHistory() {
        return withHistory;
    }

    boolean withExport() {
        return withExport;
    }

    /** Sets the functions' environment as this seed has it: history, removals, partitioning, format version. */
    void configure(Map<String, String> env) {
        if (withHistory) {
            env.put("HISTORY_TABLE", "orders_history");
        }
        if (ttlExpiries != null) {
            env.put("TTL_EXPIRIES", ttlExpiries);
            env.put("DELETES", deletes);
        }
        env.put("PARTITION_SPEC", partitionSpec);
        env.put("TABLE_FORMAT_VERSION", formatVersion);
    }

    // ------------------------------------------------------------------ the steps

    enum Step {
        CHANGE,
        DELIVER,
        MERGE,
        CONTINUOUS_RUN,
        MAINTAIN
    }

    /** Whether a chunk of the export loads before this step (drawn only while an export waits). */
    boolean loadExportChunkNow(boolean exportLoaded) {
        return withExport && !exportLoaded && exportRandom.nextInt(6) == 0;
    }

    /** Whether a fanned-out merge runs before this step (it needs a table with a key index, and something staged). */
    boolean fanOutNow() {
        return fanOutRandom.nextInt(4) == 0;
    }

    enum FanOutFault {
        /** A key range's worker fails (S3 refuses its record) and the state machine retries it. */
        RANGE_FAILS_ONCE,
        /** The commit step dies before its commit: the state machine aborts. */
        CRASH_BEFORE_COMMIT,
        /** Maintenance compacts and expires just before the fan-out's commit. */
        RACING_MAINTENANCE,
        /** A scheduled merge runs just before the fan-out's commit (it must hold). */
        RACING_MERGER,
        /** The catalog does not answer the commit, which did or did not land. */
        COMMIT_OUTCOME_UNKNOWN,
        /** S3 refuses deleting the applied staged objects, and the slice is then fanned out again. */
        S3_DELETE_STAGED_THEN_AGAIN,
        /** The commit step runs again after the fan-out finished. */
        REPEATED_COMMIT,
        NONE
    }

    record FanOutRun(FanOutFault fault, int ranges, boolean committed) {}

    FanOutRun fanOut() {
        FanOutFault[] faults = FanOutFault.values();
        return new FanOutRun(
                faults[fanOutRandom.nextInt(faults.length)], 1 + fanOutRandom.nextInt(4), fanOutRandom.nextBoolean());
    }

    Step nextStep() {
        int what = random.nextInt(100);
        if (what < 30) {
            return Step.CHANGE;
        } else if (what < 60) {
            return Step.DELIVER;
        } else if (what < 80) {
            return Step.MERGE;
        } else if (what < 85) {
            return Step.CONTINUOUS_RUN;
        }
        return Step.MAINTAIN;
    }

    /** How many changes the source table makes at once: 1 to {@code most}. */
    int changes(int most) {
        return 1 + random.nextInt(most);
    }

    /** Whether a shard splits after a step's changes. */
    boolean split() {
        return random.nextInt(8) == 0;
    }

    // ------------------------------------------------------------------ stream delivery

    enum DeliveryFault {
        /** S3 PUT errors while staging: Lambda retries from the failed record. */
        S3_DOWN,
        /** The stager crashes after staging, before acknowledging: the whole batch comes again. */
        CRASH_BEFORE_ACKNOWLEDGING,
        /** The batch is delivered twice. */
        TWICE,
        NONE
    }

    /** One delivery: the index of the readable shard, the batch size asked for (before the shard's end), the fault. */
    record Delivery(int shard, int size, DeliveryFault fault) {}

    Delivery delivery(int readableShards, boolean withFaults) {
        int shard = random.nextInt(readableShards);
        int size = 1 + random.nextInt(80);
        int mode = withFaults ? random.nextInt(100) : 99;
        DeliveryFault fault = mode < 12
                ? DeliveryFault.S3_DOWN
                : mode < 22
                        ? DeliveryFault.CRASH_BEFORE_ACKNOWLEDGING
                        : mode < 30 ? DeliveryFault.TWICE : DeliveryFault.NONE;
        return new Delivery(shard, size, fault);
    }

    /** After a batch failed with S3 down: whether Lambda bisects it (drawn whatever the batch's size). */
    boolean bisect() {
        return random.nextBoolean();
    }

    // ------------------------------------------------------------------ the merger

    enum MergeFault {
        S3_GET_STAGED,
        S3_DELETE_STAGED,
        S3_PUT_DATA,
        S3_LIST_STAGED,
        COMMIT_OUTCOME_UNKNOWN,
        S3_GET_KEY_INDEX,
        S3_PUT_KEY_INDEX,
        /** A key index file lost, truncated or corrupted, if the snapshot names one: see {@link #keyIndexDamage}. */
        KEY_INDEX_DAMAGED,
        CRASH_BEFORE_COMMIT,
        RACING_MAINTENANCE,
        RACING_MERGER,
        NONE
    }

    /**
     * One merge: its options, its fault, how many S3 calls fail (S3 faults), and whether a commit
     * whose outcome is unknown did commit.
     */
    record MergeRun(MergeOptions options, MergeFault fault, int failures, boolean committed) {}

    MergeRun merge(boolean withFaults, boolean tableExists) {
        int mode = withFaults ? random.nextInt(100) : 99;
        MergeOptions options = random.nextInt(4) == 0 ? defaults.withMaxChanges(1 + random.nextInt(80)) : defaults;
        if (random.nextInt(3) == 0) {
            options = options.withoutKeyIndexCache(); // a new container: the index comes from storage, damage and all
        }
        if (mode < 8) {
            return new MergeRun(options, MergeFault.S3_GET_STAGED, 1 + random.nextInt(3), false);
        } else if (mode < 16) {
            return new MergeRun(options, MergeFault.S3_DELETE_STAGED, 1, false);
        } else if (mode < 22) {
            return new MergeRun(options, MergeFault.S3_PUT_DATA, 1 + random.nextInt(4), false);
        } else if (mode < 28) {
            return new MergeRun(options, MergeFault.S3_LIST_STAGED, 1, false);
        } else if (mode < 36 && tableExists) {
            return new MergeRun(options, MergeFault.COMMIT_OUTCOME_UNKNOWN, 0, random.nextBoolean());
        } else if (mode >= 58 && mode < 62 && defaults.keyIndex()) {
            return new MergeRun(options, MergeFault.S3_GET_KEY_INDEX, 1 + random.nextInt(3), false);
        } else if (mode >= 62 && mode < 66 && defaults.keyIndex()) {
            return new MergeRun(options, MergeFault.S3_PUT_KEY_INDEX, 1 + random.nextInt(3), false);
        } else if (mode >= 66 && mode < 72 && defaults.keyIndex() && tableExists) {
            return new MergeRun(options, MergeFault.KEY_INDEX_DAMAGED, 0, false);
        } else if (mode >= 36 && mode < 44) {
            return new MergeRun(options, MergeFault.CRASH_BEFORE_COMMIT, 0, false);
        } else if (mode >= 44 && mode < 52 && tableExists) {
            return new MergeRun(options, MergeFault.RACING_MAINTENANCE, 0, false);
        } else if (mode >= 52 && mode < 58 && tableExists) {
            return new MergeRun(options, MergeFault.RACING_MERGER, 0, false);
        }
        return new MergeRun(options, MergeFault.NONE, 0, false);
    }

    /** What happens to a key index file: lost, cut short (a partial upload), or bytes changed at the same length. */
    enum IndexFileDamage {
        LOST,
        TRUNCATED,
        CORRUPTED
    }

    /** Which of a snapshot's key index files is damaged, and how. */
    record KeyIndexDamage(int file, IndexFileDamage damage) {}

    /** Drawn only when the snapshot names key index files (there are {@code files}). */
    KeyIndexDamage keyIndexDamage(int files) {
        int file = random.nextInt(files);
        return new KeyIndexDamage(file, IndexFileDamage.values()[random.nextInt(IndexFileDamage.values().length)]);
    }

    // ------------------------------------------------------------------ continuous runs

    /** The merge before whose commit a continuous run dies (1 to 4), or -1 for a run that does not. */
    int continuousRunDiesAt() {
        return random.nextInt(3) == 0 ? 1 + random.nextInt(4) : -1;
    }

    enum ContinuousMergeFault {
        CRASH_BEFORE_COMMIT,
        RACING_MAINTENANCE,
        S3_DELETE_STAGED,
        S3_PUT_DATA,
        NONE
    }

    record ContinuousMergeRun(ContinuousMergeFault fault, int failures) {}

    /** The fault of merge {@code n} of a continuous run; {@code tableExists} is asked only when it matters. */
    ContinuousMergeRun continuousMerge(int n, int diesAt, BooleanSupplier tableExists) {
        int mode = random.nextInt(100);
        if (n == diesAt) {
            return new ContinuousMergeRun(ContinuousMergeFault.CRASH_BEFORE_COMMIT, 0);
        } else if (mode < 20 && tableExists.getAsBoolean()) {
            return new ContinuousMergeRun(ContinuousMergeFault.RACING_MAINTENANCE, 0);
        } else if (mode < 28) {
            return new ContinuousMergeRun(ContinuousMergeFault.S3_DELETE_STAGED, 1);
        } else if (mode < 34) {
            return new ContinuousMergeRun(ContinuousMergeFault.S3_PUT_DATA, 1 + random.nextInt(3));
        }
        return new ContinuousMergeRun(ContinuousMergeFault.NONE, 0);
    }

    /** How long a continuous run's merge takes on its clock, in milliseconds. */
    int mergeMillis() {
        return 200 + random.nextInt(4_000);
    }

    /** How many batches the stream delivers while a continuous run waits. */
    int deliveriesWhileWaiting() {
        return 1 + random.nextInt(3);
    }

    /** Whether the source table changes before one of those deliveries. */
    boolean changeWhileWaiting() {
        return random.nextBoolean();
    }

    /** Whether maintenance runs while a continuous run waits. */
    boolean maintainWhileWaiting() {
        return random.nextInt(6) == 0;
    }

    // ------------------------------------------------------------------ maintenance

    enum MaintenanceFault {
        CRASH_IN_COMPACTION,
        S3_DELETE,
        S3_GET_DATA,
        RACING_MERGER,
        NONE
    }

    /** One maintenance run: ten days later or now (drawn with or without faults), its fault, how many S3 calls fail. */
    record MaintenanceRun(boolean tenDaysLater, MaintenanceFault fault, int failures) {}

    MaintenanceRun maintenance(boolean withFaults) {
        int mode = withFaults ? random.nextInt(100) : 99;
        // Sometimes days later, so snapshots expire and unreferenced files count as orphans.
        boolean later = random.nextInt(3) == 0;
        if (mode < 15) {
            return new MaintenanceRun(later, MaintenanceFault.CRASH_IN_COMPACTION, 0);
        } else if (mode < 25) {
            return new MaintenanceRun(later, MaintenanceFault.S3_DELETE, 1 + random.nextInt(3));
        } else if (mode < 35) {
            return new MaintenanceRun(later, MaintenanceFault.S3_GET_DATA, 1 + random.nextInt(20));
        } else if (mode < 45) {
            return new MaintenanceRun(later, MaintenanceFault.RACING_MERGER, 0);
        }
        return new MaintenanceRun(later, MaintenanceFault.NONE, 0);
    }

    // ------------------------------------------------------------------ the export and its load

    /** Whether key {@code i} has an item from before the stream (drawn for keys 0 to 39 in turn). */
    boolean itemBeforeTheStream() {
        return exportRandom.nextBoolean();
    }

    /** The total of such an item. */
    int totalBeforeTheStream() {
        return exportRandom.nextInt(10_000);
    }

    /** How many stream changes the export holds too. */
    int changesInTheExport() {
        return 1 + exportRandom.nextInt(40);
    }

    enum ExportChunkFault {
        S3_GET_EXPORT,
        S3_PUT_DATA,
        CRASH_BEFORE_COMMIT,
        RACING_MERGER,
        RACING_MAINTENANCE,
        NONE
    }

    /** One export chunk: the loader's change budget, its fault, how many S3 calls fail. */
    record ExportChunk(int maxChanges, ExportChunkFault fault, int failures) {}

    ExportChunk exportChunk(boolean withFaults, boolean tableExists) {
        int mode = withFaults ? exportRandom.nextInt(100) : 99;
        int maxChanges = 1 + exportRandom.nextInt(30);
        if (mode < 10) {
            return new ExportChunk(maxChanges, ExportChunkFault.S3_GET_EXPORT, 1 + exportRandom.nextInt(3));
        } else if (mode < 20) {
            return new ExportChunk(maxChanges, ExportChunkFault.S3_PUT_DATA, 1 + exportRandom.nextInt(3));
        } else if (mode < 30) {
            return new ExportChunk(maxChanges, ExportChunkFault.CRASH_BEFORE_COMMIT, 0);
        } else if (mode < 40 && tableExists) {
            return new ExportChunk(maxChanges, ExportChunkFault.RACING_MERGER, 0);
        } else if (mode < 50 && tableExists) {
            return new ExportChunk(maxChanges, ExportChunkFault.RACING_MAINTENANCE, 0);
        }
        return new ExportChunk(maxChanges, ExportChunkFault.NONE, 0);
    }
}
