package dev.ddb2iceberg.merge;

import dev.ddb2iceberg.config.ConfigurationException;
import dev.ddb2iceberg.config.Environment;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Continuous mode: one scheduled invocation merges again and again, every {@code interval} while
 * changes keep arriving, and returns before the next scheduled invocation starts, so exactly one
 * merger runs at a time (the function's concurrency is 1) and none waits for another.
 *
 * <p>Why a fixed interval rather than "merge whenever something is staged": a merge right after
 * the last one would commit once or twice a second under steady traffic, and every commit adds a
 * snapshot to the table's metadata, small files to compact and a catalog update. Five seconds
 * keeps freshness well under ten seconds (a change waits half an interval on average) at 720
 * commits an hour. A backlog (a merge that left objects waiting) is merged at once, without
 * waiting for the interval: then merges are big and the commit rate bounds itself.
 *
 * <p>The loop never starts a merge it does not expect to commit before the deadline: a merge
 * needs, by estimate, twice the longest merge of this run (the first one {@code firstMerge}). The
 * deadline is 57 s after the run's scheduled time by default: the next run cannot start before
 * 60 s (EventBridge Scheduler never fires early), and 3 s cover the last merge's deletes and return.
 * It returns early when nothing is staged at its start (an idle minute costs what a scheduled
 * run does) or when nothing has been staged for {@code idle} (30 s by default: measured with
 * bursts every 30 s, a shorter wait returned between bursts, and the next burst waited for the
 * next minute's run).
 */
public final class ContinuousMerge {
    private static final Logger LOG = LoggerFactory.getLogger(ContinuousMerge.class);

    /** How the merger runs: one merge per scheduled invocation, or merges for the rest of the minute. */
    public enum Mode {
        SCHEDULED,
        CONTINUOUS
    }

    /**
     * @param mode {@code MERGE_MODE}
     * @param interval {@code MERGE_INTERVAL_SECONDS}: the time from one merge's start to the next one's, while keeping up
     * @param idle {@code MERGE_IDLE_SECONDS}: return after this long with nothing staged
     * @param runLength {@code MERGE_RUN_SECONDS}: a run's merges end this long after its scheduled time;
     *     keep it below the schedule's period, with a few seconds to spare
     * @param firstMerge what the first merge of a run is assumed to take (it has no earlier one to go by)
     */
    public record Settings(Mode mode, Duration interval, Duration idle, Duration runLength, Duration firstMerge) {
        public static final Settings DEFAULTS = new Settings(
                Mode.SCHEDULED,
                Duration.ofSeconds(5),
                Duration.ofSeconds(30),
                Duration.ofSeconds(57),
                Duration.ofSeconds(30));

        public static Settings from(Environment env) {
            Settings s = new Settings(
                    env.choice(dev.ddb2iceberg.config.Settings.MERGE_MODE, Mode.class),
                    Duration.ofSeconds(env.positiveInt(dev.ddb2iceberg.config.Settings.MERGE_INTERVAL_SECONDS)),
                    Duration.ofSeconds(env.positiveInt(dev.ddb2iceberg.config.Settings.MERGE_IDLE_SECONDS)),
                    Duration.ofSeconds(env.positiveInt(dev.ddb2iceberg.config.Settings.MERGE_RUN_SECONDS)),
                    DEFAULTS.firstMerge);
            if (s.interval.compareTo(s.runLength) >= 0) {
                throw new ConfigurationException("MERGE_INTERVAL_SECONDS=" + s.interval.toSeconds()
                        + " must be shorter than" + " MERGE_RUN_SECONDS=" + s.runLength.toSeconds()
                        + " (how long a continuous run keeps merging).");
            }
            return s;
        }

        public boolean continuous() {
            return mode == Mode.CONTINUOUS;
        }
    }

    /** Waits until a time: the real clock sleeps; tests move a clock of their own. */
    public interface Pause {
        void until(Instant time);

        /** Sleeps on the system clock. */
        static Pause sleeping(Clock clock) {
            return time -> {
                long millis = Duration.between(clock.instant(), time).toMillis();
                if (millis > 0) {
                    try {
                        Thread.sleep(millis);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new IllegalStateException("Interrupted while waiting for the next merge", e);
                    }
                }
            };
        }
    }

    /** Why a run returned. */
    public enum Stop {
        /** The first merge found nothing staged: an idle minute. */
        NOTHING_STAGED,
        /** Nothing was staged for the idle time. */
        IDLE,
        /** Another merge would not have committed before the deadline. */
        DEADLINE,
        /** Merges are held (a parallel export load is in progress): the next scheduled run looks again. */
        HELD
    }

    /**
     * What a run did.
     *
     * @param merges the merges it ran, in order
     * @param stoppedBecause why it returned
     * @param deadline the time its merges had to commit by
     * @param longestMergeMillis its longest merge
     */
    public record Result(List<MergeResult> merges, Stop stoppedBecause, Instant deadline, long longestMergeMillis) {
        public long commits() {
            return merges.stream().filter(r -> r.snapshotId() != null).count();
        }

        public long changesApplied() {
            return merges.stream().mapToLong(MergeResult::changesApplied).sum();
        }
    }

    private final Settings settings;
    private final Supplier<MergeResult> merge;
    private final BooleanSupplier anyStaged;
    private final Clock clock;
    private final Pause pause;

    /**
     * @param merge runs one merge (a new {@link Merger} each time: it re-reads the table and the staging prefix)
     * @param anyStaged whether something waits in the staging prefix (one cheap LIST)
     */
    public ContinuousMerge(
            Settings settings, Supplier<MergeResult> merge, BooleanSupplier anyStaged, Clock clock, Pause pause) {
        this.settings = settings;
        this.merge = merge;
        this.anyStaged = anyStaged;
        this.clock = clock;
        this.pause = pause;
    }

    /** Merges until {@code deadline} (the time the last merge must have committed by), idleness or an empty start. */
    public Result run(Instant deadline) {
        List<MergeResult> merges = new ArrayList<>();
        Duration longest = Duration.ZERO;
        Instant lastFound = clock.instant();
        Stop stop;
        while (true) {
            Instant start = clock.instant();
            if (start.plus(needed(merges, longest)).isAfter(deadline)) {
                stop = Stop.DEADLINE;
                break;
            }
            MergeResult r = merge.get();
            Duration took = Duration.between(start, clock.instant());
            longest = took.compareTo(longest) > 0 ? took : longest;
            merges.add(r);
            if (r.heldBecause() != null) {
                stop = Stop.HELD; // looking again every few seconds would only list the growing backlog
                break;
            }
            boolean found =
                    r.objectsApplied() + r.objectsAlreadyApplied() + r.quarantined() > 0 || r.backlogObjects() > 0;
            if (found) {
                lastFound = start;
            } else if (merges.size() == 1) {
                stop = Stop.NOTHING_STAGED;
                break;
            }
            if (r.backlogObjects() > 0) {
                continue; // behind: merge the rest at once
            }
            // Keeping up: the next merge starts an interval after this one did, once something is staged.
            stop = waitForChanges(start.plus(settings.interval), lastFound, deadline, needed(merges, longest));
            if (stop != null) {
                break;
            }
        }
        LOG.atInfo()
                .addKeyValue("merges", merges.size())
                .addKeyValue(
                        "commits",
                        merges.stream().filter(r -> r.snapshotId() != null).count())
                .addKeyValue(
                        "changesApplied",
                        merges.stream().mapToLong(MergeResult::changesApplied).sum())
                .addKeyValue("longestMergeMillis", longest.toMillis())
                .addKeyValue("stoppedBecause", stop)
                .addKeyValue("deadline", deadline)
                .log(
                        "Continuous merge run ended ({})",
                        switch (stop) {
                            case NOTHING_STAGED -> "nothing staged at its start";
                            case IDLE -> "nothing staged for " + settings.idle.toSeconds() + " s";
                            case DEADLINE -> "another merge would not commit before the next scheduled run";
                            case HELD ->
                                "merges are held: "
                                        + merges.get(merges.size() - 1).heldBecause();
                        });
        return new Result(merges, stop, deadline, longest.toMillis());
    }

    /** The time a merge is expected to need: the first run's assumption, then twice the longest so far. */
    private Duration needed(List<MergeResult> merges, Duration longest) {
        return merges.isEmpty() ? settings.firstMerge : longest.multipliedBy(2);
    }

    /**
     * Looks at each interval tick until something is staged (null: merge now), or says why to stop.
     * When the next tick comes too late for a merge to commit before the deadline, the run takes a
     * last look at the latest moment a merge still fits: the gap until the next run's first merge,
     * which changes arriving then must wait out, is then as short as the deadline allows.
     */
    private Stop waitForChanges(Instant tick, Instant lastFound, Instant deadline, Duration needed) {
        Instant latest = deadline.minus(needed);
        while (true) {
            Instant now = clock.instant();
            if (latest.isBefore(now)) {
                return Stop.DEADLINE;
            }
            Instant at = tick.isAfter(latest) ? latest : tick;
            at = at.isBefore(now) ? now : at;
            if (Duration.between(lastFound, at).compareTo(settings.idle) > 0) {
                return Stop.IDLE;
            }
            pause.until(at);
            if (anyStaged.getAsBoolean()) {
                return null;
            }
            if (!at.isBefore(latest)) {
                return Stop.DEADLINE; // the last look found nothing
            }
            tick = tick.plus(settings.interval);
        }
    }
}
