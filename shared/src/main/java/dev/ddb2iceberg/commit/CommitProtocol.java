package dev.ddb2iceberg.commit;

import java.util.Collection;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Function;
import java.util.function.Supplier;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotUpdate;
import org.apache.iceberg.Table;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.apache.iceberg.exceptions.ValidationException;
import org.apache.iceberg.util.SnapshotUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one way the pipeline meets the two failures of an optimistic commit; every committer (merge,
 * export loads, change history, schema changes, maintenance) goes through it.
 *
 * <ul>
 *   <li><b>A lost race</b>: another writer committed first and Iceberg's own retry could not rebase
 *       this commit ({@link ValidationException}: a file it deletes from was rewritten, say; or
 *       {@link CommitFailedException}). The attempt's files are deleted and, after a jittered pause
 *       (so racing writers do not retry in step), the table is refreshed and the caller plans again
 *       from what the winner left, up to a bound; then {@link #run} gives up with a message that says
 *       what is kept for a later run.
 *   <li><b>An unknown outcome</b> ({@link CommitStateUnknownException}: the catalog did not answer):
 *       the commit may or may not have landed. Every commit carries its run id ({@link
 *       PipelineProperties#RUN_ID}), so {@link #commit} refreshes the table and looks for it: found,
 *       the commit landed; not found, it is treated as a lost race and planned again.
 * </ul>
 */
public final class CommitProtocol {
    private static final Logger LOG = LoggerFactory.getLogger(CommitProtocol.class);
    /** The longest pause between two attempts. */
    private static final long MAX_PAUSE_MILLIS = 5_000;

    private final String what;
    private final int maxAttempts;
    private final String whenGivingUp;

    /**
     * @param what what is being committed, for logs and the give-up message ("merging into db.orders")
     * @param maxAttempts attempts before giving up
     * @param whenGivingUp what a user should know when it gives up: what is kept, what happens next
     */
    public CommitProtocol(String what, int maxAttempts, String whenGivingUp) {
        if (maxAttempts < 1) {
            throw new IllegalArgumentException("maxAttempts must be at least 1, not " + maxAttempts);
        }
        this.what = what;
        this.maxAttempts = maxAttempts;
        this.whenGivingUp = whenGivingUp;
    }

    /** One attempt: plan against the table as it is now, write, and commit (see {@link #commit}). */
    @FunctionalInterface
    public interface Attempt<T> {
        /** Throws ValidationException or CommitFailedException when the race is lost. */
        T run(int attempt);
    }

    /** What the attempt that committed returned, and how many attempts it took. */
    public record Outcome<T>(T value, int attempts) {}

    /**
     * Runs attempts until one returns. A lost race is planned again after a pause and a refresh of
     * {@code table}; after {@code maxAttempts} lost races it gives up (IllegalStateException).
     */
    public <T> Outcome<T> run(Table table, Attempt<T> attempt) {
        for (int n = 1; ; n++) {
            try {
                return new Outcome<>(attempt.run(n), n);
            } catch (ValidationException | CommitFailedException lost) {
                if (n >= maxAttempts) {
                    throw new IllegalStateException(
                            "Gave up " + what + " after " + n + " commit attempts, each racing another"
                                    + " commit (a concurrent merger, load or maintenance run). " + whenGivingUp
                                    + " Last conflict: "
                                    + lost.getMessage(),
                            lost);
                }
                LOG.info(
                        "{}: commit attempt {} lost a race ({}); re-planning from the new table state",
                        what,
                        n,
                        lost.getMessage());
            }
            pause(n);
            table.refresh();
        }
    }

    /**
     * Commits {@code update} stamped with {@code runId} and returns the snapshot it made. A lost race
     * deletes {@code written} (the attempt's files, referenced by nothing now) and is rethrown; an
     * unknown outcome is settled by looking for the run id, and rethrown as a lost race when the
     * commit did not land.
     */
    public static Snapshot commit(Table table, SnapshotUpdate<?> update, String runId, Collection<String> written) {
        update.set(PipelineProperties.RUN_ID, runId);
        try {
            update.commit();
            return table.currentSnapshot(); // a successful commit leaves the table at its snapshot
        } catch (CommitStateUnknownException unknown) {
            table.refresh();
            Snapshot ours = snapshotOf(table, runId);
            if (ours == null) {
                LOG.warn("Commit outcome unknown and run {} is not in the table history: planning again", runId);
                throw new CommitFailedException(unknown, "commit state unknown and not committed");
            }
            LOG.warn("Commit outcome was unknown, but run {} is in the table history: it committed", runId);
            return ours;
        } catch (ValidationException | CommitFailedException lost) {
            deleteQuietly(table, written);
            throw lost;
        }
    }

    /**
     * Runs a commit that is not worth planning again in this run (maintenance: the next run does the
     * work); a lost race is logged and handed to {@code raced}, whose value is returned instead.
     */
    public static <T> T unlessRaced(String what, Supplier<T> commit, Function<RuntimeException, T> raced) {
        try {
            return commit.get();
        } catch (ValidationException | CommitFailedException lost) {
            LOG.info("{} lost a race with another commit and gives up for this run: {}", what, lost.getMessage());
            return raced.apply(lost);
        }
    }

    /** The snapshot run {@code runId} wrote, if it is in the table's current history; else null. */
    public static Snapshot snapshotOf(Table table, String runId) {
        Snapshot current = table.currentSnapshot();
        if (current == null) {
            return null;
        }
        for (Snapshot s : SnapshotUtil.ancestorsOf(current.snapshotId(), table::snapshot)) {
            if (runId.equals(s.summary().get(PipelineProperties.RUN_ID))) {
                return s;
            }
        }
        return null;
    }

    /** A jittered pause before attempt {@code lost + 1}: half the step, plus up to the other half. */
    private static void pause(int lost) {
        long millis = Math.min(MAX_PAUSE_MILLIS, 100L << Math.min(lost, 6));
        try {
            Thread.sleep(millis / 2 + ThreadLocalRandom.current().nextLong(millis / 2 + 1));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting to commit again", e);
        }
    }

    /** Best effort: files of a commit that lost are unreferenced; orphan cleanup catches any left. */
    private static void deleteQuietly(Table table, Collection<String> files) {
        try {
            files.forEach(table.io()::deleteFile);
        } catch (RuntimeException e) {
            LOG.warn("Could not delete the files of a failed commit attempt: {}", e.toString());
        }
    }
}
