package dev.ddb2iceberg.merge;

import dev.ddb2iceberg.config.Environment;

/**
 * Bounds on one merge run, so it finishes within the Lambda's time and memory whatever the
 * backlog; what does not fit waits for the next run.
 *
 * @param maxChanges stop adding staged objects once this many changes are taken (at least one object is)
 * @param maxStagedBytes stop adding staged objects once their compressed size reaches this
 * @param maxCommitAttempts how often a run re-plans after losing a commit race before giving up
 * @param ioThreads parallel S3 reads (staged objects, data files)
 */
public record MergeOptions(int maxChanges, long maxStagedBytes, int maxCommitAttempts, int ioThreads) {
  /** Safe for a 1 GB Lambda: about 100k changes of ~600-byte items held in memory at once. */
  public static final MergeOptions DEFAULTS = new MergeOptions(100_000, 64L << 20, 5, 8);

  public static MergeOptions from(Environment env) {
    return new MergeOptions(
        env.positiveInt("MAX_CHANGES_PER_RUN", DEFAULTS.maxChanges()),
        env.positiveLong("MAX_STAGED_BYTES_PER_RUN", DEFAULTS.maxStagedBytes()),
        env.positiveInt("MAX_COMMIT_ATTEMPTS", DEFAULTS.maxCommitAttempts()),
        env.positiveInt("IO_THREADS", DEFAULTS.ioThreads()));
  }

  public MergeOptions withMaxChanges(int n) {
    return new MergeOptions(n, maxStagedBytes, maxCommitAttempts, ioThreads);
  }
}
