package dev.ddb2iceberg.function;

import com.amazonaws.services.lambda.runtime.Context;
import dev.ddb2iceberg.config.StagingSettings;
import dev.ddb2iceberg.export.ExportLocation;
import dev.ddb2iceberg.load.ExportLoadResult;
import dev.ddb2iceberg.load.ExportLoader;
import dev.ddb2iceberg.merge.ContinuousMerge;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.merge.MergeResult;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.observe.MetricLine;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.table.TableSettings;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.function.Consumer;
import org.apache.iceberg.catalog.Catalog;
import org.slf4j.Logger;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The merger function's work: one merge with its metrics, a continuous run bounded by its
 * schedule and the invocation's time, or a chunk of an export load bounded by the invocation's time.
 */
public final class MergeRun {
    /** Time a continuous run leaves itself before the Lambda's own deadline. */
    static final Duration CONTINUOUS_RESERVE = Duration.ofSeconds(5);
    /** Time a load run leaves itself before the Lambda's deadline to finish its last chunk's commit. */
    static final Duration LOAD_RESERVE = Duration.ofSeconds(45);
    /** A load's deadline when there is no Lambda context (a local run). */
    static final Duration LOCAL_LOAD_BUDGET = Duration.ofMinutes(10);

    /** What a continuous run returns. */
    public record ContinuousResult(
            String mode,
            String stoppedBecause,
            String deadline,
            long commits,
            long changesApplied,
            long longestMergeMillis,
            List<MergeResult> merges) {}

    private final Logger log;
    private final Catalog catalog;
    private final TableSettings table;
    private final StagingSettings staging;
    private final S3Client s3;
    private final ContinuousMerge.Settings continuous;
    private Consumer<String> metricsOut = FunctionCall.STANDARD_OUTPUT;
    private Clock clock = Clock.systemUTC();
    private ContinuousMerge.Pause pause = ContinuousMerge.Pause.sleeping(clock);

    /** @param log the handler's logger, which the log lines name */
    public MergeRun(
            Catalog catalog,
            TableSettings table,
            StagingSettings staging,
            S3Client s3,
            ContinuousMerge.Settings continuous,
            Logger log) {
        this.log = log;
        this.catalog = catalog;
        this.table = table;
        this.staging = staging;
        this.s3 = s3;
        this.continuous = continuous;
    }

    /** Where metric lines go: standard output in Lambda (CloudWatch reads them from the log). */
    public MergeRun metricsTo(Consumer<String> out) {
        this.metricsOut = out;
        return this;
    }

    /** The clock and the wait continuous mode uses (the system clock and a sleep otherwise). */
    public MergeRun timing(Clock clock, ContinuousMerge.Pause pause) {
        this.clock = clock;
        this.pause = pause;
        return this;
    }

    /**
     * A scheduled run. In continuous mode, merges until the run's deadline. In scheduled mode, one
     * merge, and while it leaves a backlog, more merges back to back ({@link #catchingUp}) unless
     * {@code oneMerge} (the input set maxChanges: a run of that bound alone).
     */
    public Object scheduled(MergeOptions options, String scheduledTime, Context context, boolean oneMerge) {
        if (continuous.continuous()) {
            return continuous(options, scheduledTime(scheduledTime), context);
        }
        return oneMerge ? mergeOnce(options) : catchingUp(options, scheduledTime(scheduledTime), context);
    }

    /**
     * One merge, then more while the last left staged objects waiting and another is expected to
     * commit by the run's deadline (the one continuous mode keeps: MERGE_RUN_SECONDS after the
     * scheduled time, within the Lambda's own time), by the estimate continuous mode uses: twice the
     * longest merge so far. Each merge is bounded as before; only a backlog makes the run longer.
     * Without it a scheduled merger took at most MAX_CHANGES_PER_RUN a minute (100,000: about 1,700
     * changes a second) whatever its memory, and a backlog of a million changes waited ten minutes.
     */
    public MergeResult catchingUp(MergeOptions options, Instant scheduledTime, Context context) {
        Instant deadline = deadline(scheduledTime, context);
        MergeResult run = mergeOnce(options);
        long longest = run.millis();
        int merges = 1;
        MergeResult last = run;
        while (last.backlogObjects() > 0
                && last.snapshotId() != null // held, or nothing it could apply: the next run looks again
                && !clock.instant().plusMillis(2 * longest).isAfter(deadline)) {
            last = mergeOnce(options);
            longest = Math.max(longest, last.millis());
            run = run.followedBy(last);
            merges++;
        }
        if (merges > 1) {
            log.atInfo()
                    .addKeyValue("merges", merges)
                    .addKeyValue("changesApplied", run.changesApplied())
                    .addKeyValue("backlogObjects", run.backlogObjects())
                    .addKeyValue("longestMergeMillis", longest)
                    .addKeyValue("deadline", deadline)
                    .log("Scheduled run caught up with its backlog in {} merges", merges);
        }
        return run;
    }

    /** When a run's last merge must have committed: the scheduled time plus the run's length, within the Lambda's time. */
    private Instant deadline(Instant scheduledTime, Context context) {
        Instant deadline = scheduledTime.plus(continuous.runLength());
        if (context != null) {
            Instant lambdaDeadline = clock.instant()
                    .plusMillis(context.getRemainingTimeInMillis())
                    .minus(CONTINUOUS_RESERVE);
            deadline = lambdaDeadline.isBefore(deadline) ? lambdaDeadline : deadline;
        }
        return deadline;
    }

    /** One merge, its metrics printed. */
    public MergeResult mergeOnce(MergeOptions options) {
        MergeResult result;
        try {
            result = new Merger(catalog, table, new StagingStore(s3, staging), options).run();
        } catch (RuntimeException e) {
            log.atError()
                    .setCause(e)
                    .log("Merge run failed; nothing it did is lost, the next run starts from the"
                            + " table's checkpoint");
            throw e;
        }
        metricsOut.accept(metrics(result).toString());
        return result;
    }

    /**
     * Continuous mode ({@link ContinuousMerge}): merges until shortly before the next scheduled run.
     * Its merges must commit by the scheduled time plus MERGE_RUN_SECONDS, and within the Lambda's
     * own time; the schedule passes its scheduled time in the input (else the invocation's start counts).
     */
    public ContinuousResult continuous(MergeOptions options, Instant scheduledTime, Context context) {
        Instant deadline = deadline(scheduledTime, context);
        StagingStore store = new StagingStore(s3, staging);
        ContinuousMerge.Result run =
                new ContinuousMerge(continuous, () -> mergeOnce(options), store::anyStaged, clock, pause).run(deadline);
        return new ContinuousResult(
                "continuous",
                run.stoppedBecause().name(),
                run.deadline().toString(),
                run.commits(),
                run.changesApplied(),
                run.longestMergeMillis(),
                run.merges());
    }

    /** The schedule's time for this run (the input's scheduledTime); now when there is none. */
    private Instant scheduledTime(String time) {
        if (time == null) {
            return clock.instant();
        }
        try {
            return Instant.parse(time);
        } catch (DateTimeParseException e) {
            throw new IllegalArgumentException("Merger input scheduledTime=\"" + time + "\" is not an ISO-8601 UTC time"
                    + " such as 2026-11-30T12:00:00Z (the template passes <aws.scheduler.scheduled-time>).");
        }
    }

    /**
     * Loads (part of) a DynamoDB export instead of merging. Runs chunks until the export is in or the
     * invocation's time is nearly up; invoke again with the same input to resume.
     */
    public ExportLoadResult loadExport(ExportLoader.Request request, MergeOptions options, Context context) {
        Instant deadline = context == null
                ? Instant.now().plus(LOCAL_LOAD_BUDGET)
                : Instant.now().plusMillis(context.getRemainingTimeInMillis()).minus(LOAD_RESERVE);
        ExportLoadResult result =
                new ExportLoader(catalog, table, new StagingStore(s3, staging), options, s3).run(request, deadline);
        log.atInfo()
                .addKeyValue("exportId", result.exportId())
                .addKeyValue("itemsLoaded", result.itemsLoaded())
                .addKeyValue("itemsInExport", result.itemsInExport())
                .addKeyValue("itemsThisRun", result.itemsThisRun())
                .addKeyValue("snapshots", result.snapshots())
                .addKeyValue("done", result.done())
                .addKeyValue("millis", result.millis())
                .log("Export load run: {}", result.note());
        return result;
    }

    /**
     * What to load: {@code location} (the export's s3:// folder, named {@code what} in errors) and the
     * optional {@code keys} (the partition key and the sort key, if any), {@code marginMinutes}
     * (default 5) and {@code skipHandOffCheck} (default false).
     */
    public static ExportLoader.Request exportRequest(
            String what, String location, List<String> keys, Integer marginMinutes, Boolean skipHandOffCheck) {
        if (location == null) {
            throw new IllegalArgumentException(what + " must be the export's s3:// folder, not null");
        }
        if (keys != null && (keys.isEmpty() || keys.size() > 2)) {
            throw new IllegalArgumentException("Input keys must list the partition key and, if any, the sort key,"
                    + " such as [\"pk\", \"sk\"]; got " + FunctionCall.JSON.valueToTree(keys));
        }
        if (marginMinutes != null && marginMinutes < 0) {
            throw new IllegalArgumentException(
                    "Input marginMinutes=" + marginMinutes + " is not a whole number of minutes.");
        }
        return new ExportLoader.Request(
                ExportLocation.parse(location),
                keys == null ? List.of() : List.copyOf(keys),
                Duration.ofMinutes(marginMinutes == null ? 5 : marginMinutes),
                skipHandOffCheck != null && skipHandOffCheck);
    }

    /** The run's bounds: the configured ones, unless the input sets maxChanges. */
    public static MergeOptions options(MergeOptions configured, Integer maxChanges) {
        if (maxChanges == null) {
            return configured;
        }
        if (maxChanges <= 0) {
            throw new IllegalArgumentException(
                    "Merger input maxChanges=" + maxChanges + " is not a positive whole number.");
        }
        return configured.withMaxChanges(maxChanges);
    }

    /**
     * The run's metrics. FreshnessLagSeconds is the age of the oldest staged change still waiting
     * (0 when none waits): the alarm on it fires when merges fall behind or stop reporting.
     */
    private MetricLine metrics(MergeResult r) {
        return MetricLine.forTable(table.namespace() + "." + table.name(), Clock.systemUTC())
                .seconds("FreshnessLagSeconds", r.oldestUnmergedAgeSeconds())
                .count("BacklogObjects", r.backlogObjects())
                .bytes("BacklogBytes", r.backlogBytes())
                .count("ChangesMerged", r.changesApplied())
                .count("ItemsWritten", r.itemsWritten())
                .count("RowsReplaced", r.rowsReplaced())
                .count("ItemsRemoved", r.itemsRemoved())
                .count("QuarantinedRecords", r.quarantined())
                .count("CommitAttempts", r.commitAttempts())
                .count("CommitConflicts", Math.max(0, r.commitAttempts() - 1))
                .count("DataFilesSeen", r.filesInTable())
                .milliseconds("MergeMillis", r.millis());
    }
}
