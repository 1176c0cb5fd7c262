package dev.ddb2iceberg.merge;

import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.Settings;
import dev.ddb2iceberg.index.DiskCache;
import dev.ddb2iceberg.index.IndexCache;
import dev.ddb2iceberg.lookup.IndexLookup;
import dev.ddb2iceberg.lookup.LiveRowLookup;
import dev.ddb2iceberg.lookup.ScanLookup;
import java.util.concurrent.ExecutorService;

/**
 * Bounds on one merge run, so it finishes within the Lambda's time and memory whatever the
 * backlog; what does not fit waits for the next run.
 *
 * @param maxChanges stop adding staged objects once this many changes are taken (at least one object is)
 * @param maxStagedBytes stop adding staged objects once their compressed size reaches this
 * @param maxCommitAttempts how often a run re-plans after losing a commit race before giving up
 * @param ioThreads parallel S3 reads (staged objects, data files)
 * @param keyIndex find live rows through the key index (true) or by reading key columns (false)
 * @param keyIndexParts parts a new key index spreads its keys over
 * @param keyIndexCacheBytes memory a warm merger may keep index files in between runs
 * @param keyIndexDiskCacheBytes local disk ({@code /tmp}) a warm merger may keep index parts on; 0: none
 * @param keyIndexBuildBytes memory a rebuild of the index may use, on top of the cache (the parts it builds go
 *     into the cache); past it, the rebuild sorts through runs in storage. {@link #buildBytesFor} gives the default
 * @param rewriteFilesBelowBytes data files smaller than this in the partitions a merge writes to are folded
 *     into its new files (their live rows move; the old files are dropped), touched or not; 0: never
 *     (see {@link SmallFileRewrite})
 * @param rewriteBytesPerMerge the most bytes of existing data files one merge folds
 * @param waitForInitialLoad merge nothing until an export load has finished ({@code INITIAL_LOAD=parallel-export}):
 *     a big table's first copy then goes into an empty table, which the parallel load fills without lookups
 */
public record MergeOptions(
        int maxChanges,
        long maxStagedBytes,
        int maxCommitAttempts,
        int ioThreads,
        boolean keyIndex,
        int keyIndexParts,
        long keyIndexCacheBytes,
        long keyIndexDiskCacheBytes,
        long keyIndexBuildBytes,
        long rewriteFilesBelowBytes,
        long rewriteBytesPerMerge,
        boolean waitForInitialLoad) {
    /**
     * Data files under this size are folded into a merge's new files (BENCHMARKS.md, "The table's
     * shape"): a partition's new file grows merge after merge to about this size, then stays. Bigger
     * leaves fewer files between compactions; smaller makes merges rewrite less.
     */
    public static final long REWRITE_BELOW_BYTES = 4L << 20;
    /** What one merge folds at most: a bounded cost (about a second of Parquet reading and writing on 2 cores). */
    public static final long REWRITE_BYTES_PER_MERGE = 32L << 20;
    /**
     * Continuous mode merges twelve times as often, each with a twelfth of the changes: it folds
     * half as much a merge, so its rewriting stays a share of its time it can afford.
     */
    public static final long CONTINUOUS_REWRITE_BELOW_BYTES = 2L << 20;

    public static final long CONTINUOUS_REWRITE_BYTES_PER_MERGE = 16L << 20;
    /** Safe for a 1 GB Lambda: about 100k changes of ~600-byte items held in memory at once. */
    public static final MergeOptions DEFAULTS = new MergeOptions(
            100_000,
            64L << 20,
            5,
            8,
            true,
            64,
            IndexCache.defaultBudget(),
            DiskCache.defaultBudget(),
            buildBytesFor(IndexCache.defaultBudget()),
            REWRITE_BELOW_BYTES,
            REWRITE_BYTES_PER_MERGE,
            false);

    public static MergeOptions from(Environment env) {
        boolean keyIndex = env.choice(Settings.KEY_INDEX).equals("on");
        boolean waitForInitialLoad = env.choice(Settings.INITIAL_LOAD).equals("parallel-export");
        boolean continuous = env.choice(Settings.MERGE_MODE).equals("continuous");
        long cacheBytes = env.positiveLong(Settings.KEY_INDEX_CACHE_MB, DEFAULTS.keyIndexCacheBytes() >> 20) << 20;
        return new MergeOptions(
                env.positiveInt(Settings.MAX_CHANGES_PER_RUN),
                env.positiveLong(Settings.MAX_STAGED_BYTES_PER_RUN),
                env.positiveInt(Settings.MAX_COMMIT_ATTEMPTS),
                env.positiveInt(Settings.IO_THREADS),
                keyIndex,
                env.positiveInt(Settings.KEY_INDEX_PARTS),
                cacheBytes,
                env.nonNegativeLong(Settings.KEY_INDEX_DISK_CACHE_MB, DEFAULTS.keyIndexDiskCacheBytes() >> 20) << 20,
                buildBytesFor(cacheBytes),
                env.nonNegativeLong(
                        Settings.REWRITE_FILES_BELOW_BYTES,
                        continuous ? CONTINUOUS_REWRITE_BELOW_BYTES : DEFAULTS.rewriteFilesBelowBytes()),
                env.nonNegativeLong(
                        Settings.REWRITE_BYTES_PER_MERGE,
                        continuous ? CONTINUOUS_REWRITE_BYTES_PER_MERGE : DEFAULTS.rewriteBytesPerMerge()),
                waitForInitialLoad);
    }

    public MergeOptions withMaxChanges(int n) {
        return new MergeOptions(
                n,
                maxStagedBytes,
                maxCommitAttempts,
                ioThreads,
                keyIndex,
                keyIndexParts,
                keyIndexCacheBytes,
                keyIndexDiskCacheBytes,
                keyIndexBuildBytes,
                rewriteFilesBelowBytes,
                rewriteBytesPerMerge,
                waitForInitialLoad);
    }

    public MergeOptions withKeyIndex(boolean on) {
        return new MergeOptions(
                maxChanges,
                maxStagedBytes,
                maxCommitAttempts,
                ioThreads,
                on,
                keyIndexParts,
                keyIndexCacheBytes,
                keyIndexDiskCacheBytes,
                keyIndexBuildBytes,
                rewriteFilesBelowBytes,
                rewriteBytesPerMerge,
                waitForInitialLoad);
    }

    /** With no cache, in memory or on disk: every run reads the index from storage, as a new container does. */
    public MergeOptions withoutKeyIndexCache() {
        return new MergeOptions(
                maxChanges,
                maxStagedBytes,
                maxCommitAttempts,
                ioThreads,
                keyIndex,
                keyIndexParts,
                0,
                0,
                keyIndexBuildBytes,
                rewriteFilesBelowBytes,
                rewriteBytesPerMerge,
                waitForInitialLoad);
    }

    public MergeOptions withRewriteFilesBelow(long bytes) {
        return new MergeOptions(
                maxChanges,
                maxStagedBytes,
                maxCommitAttempts,
                ioThreads,
                keyIndex,
                keyIndexParts,
                keyIndexCacheBytes,
                keyIndexDiskCacheBytes,
                keyIndexBuildBytes,
                bytes,
                rewriteBytesPerMerge,
                waitForInitialLoad);
    }

    public MergeOptions withRewriteBytesPerMerge(long bytes) {
        return new MergeOptions(
                maxChanges,
                maxStagedBytes,
                maxCommitAttempts,
                ioThreads,
                keyIndex,
                keyIndexParts,
                keyIndexCacheBytes,
                keyIndexDiskCacheBytes,
                keyIndexBuildBytes,
                rewriteFilesBelowBytes,
                bytes,
                waitForInitialLoad);
    }

    /** How this run finds live rows. */
    public LiveRowLookup lookup(ExecutorService pool) {
        if (!keyIndex) {
            return new ScanLookup(pool);
        }
        return new IndexLookup(pool, indexCache(), keyIndexParts, keyIndexBuildBytes);
    }

    /**
     * The index cache a merge reads the key index and the removals index through: the container's,
     * kept between runs, or none when the cache is off.
     */
    public IndexCache indexCache() {
        return keyIndexCacheBytes == 0
                ? new IndexCache(0)
                : IndexCache.shared(keyIndexCacheBytes, keyIndexDiskCacheBytes);
    }

    /**
     * The memory a rebuild of the index may use beside a cache of {@code cacheBytes}: the cache's
     * budget, and never less than the default one (a third of the heap), so a small cache does not
     * make a rebuild spill many more sorted runs. At most two thirds of the heap then, as with the
     * default cache.
     */
    public static long buildBytesFor(long cacheBytes) {
        return Math.max(cacheBytes, IndexCache.defaultBudget());
    }
}
