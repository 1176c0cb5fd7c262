package dev.ddb2iceberg.merger;

import dev.ddb2iceberg.load.ExportLoadResult;
import dev.ddb2iceberg.load.ExportLoader;
import dev.ddb2iceberg.observe.Invocation;
import dev.ddb2iceberg.observe.MetricLine;
import com.amazonaws.services.lambda.runtime.Context;
import com.amazonaws.services.lambda.runtime.RequestStreamHandler;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.ScheduleInput;
import dev.ddb2iceberg.export.ExportLocation;
import dev.ddb2iceberg.merge.ContinuousMerge;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.merge.MergeResult;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.staging.StagingStore;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;
import org.apache.iceberg.catalog.Catalog;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Lambda entry point, run by an EventBridge schedule. Accepts a schedule rule's
 * {@code ScheduledEvent} (whose {@code detail} is the input), the plain JSON input that EventBridge
 * Scheduler delivers, or nothing. Input fields (all optional): {@code maxChanges}, and
 * {@code scheduledTime} (the schedule's time for this run, which bounds a continuous run).
 * Returns the run's {@link MergeResult} as JSON. With {@code loadExport} it loads a DynamoDB export
 * instead (see {@link #loadExport}) and returns an {@link ExportLoadResult}.
 */
public final class MergerHandler implements RequestStreamHandler {
  private static final Logger LOG = LoggerFactory.getLogger(MergerHandler.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Set<String> INPUT_FIELDS =
      Set.of("maxChanges", "loadExport", "keys", "marginMinutes", "skipHandOffCheck", "scheduledTime");
  /** Time a continuous run leaves itself before the Lambda's own deadline. */
  private static final Duration CONTINUOUS_RESERVE = Duration.ofSeconds(5);
  /** Time a load run leaves itself before the Lambda's deadline to finish its last chunk's commit. */
  private static final Duration LOAD_RESERVE = Duration.ofSeconds(45);
  /** A load's deadline when there is no Lambda context (a local run). */
  private static final Duration LOCAL_LOAD_BUDGET = Duration.ofMinutes(10);

  private final MergerSettings settings;
  private final Catalog catalog;
  private final S3Client s3;
  // System.out as it is at each print (not a method reference, which would keep the stream of
  // construction time): the local runtime points it away from its own output while functions run.
  private Consumer<String> metricsOut = line -> System.out.println(line);
  private Clock clock = Clock.systemUTC();
  private ContinuousMerge.Pause pause = ContinuousMerge.Pause.sleeping(clock);

  /** Used by Lambda: settings are read and checked, and clients built, once at cold start. */
  public MergerHandler() {
    this(MergerSettings.from(Environment.system()));
  }

  /** Used by the local runtime, which passes the environment a Lambda would have. */
  public MergerHandler(Environment env) {
    this(MergerSettings.from(env));
  }

  public MergerHandler(MergerSettings settings) {
    this(settings, settings.catalog().load(), settings.s3().newClient());
  }

  public MergerHandler(MergerSettings settings, Catalog catalog, S3Client s3) {
    this.settings = settings;
    this.catalog = catalog;
    this.s3 = s3;
  }

  @Override
  public void handleRequest(InputStream input, OutputStream output, Context context) throws IOException {
    try (Invocation log = Invocation.of(context)) {
      JsonNode detail = ScheduleInput.parse(input.readAllBytes(), "merger", INPUT_FIELDS);
      MergeOptions options = options(detail);
      if (detail.has("loadExport")) {
        JSON.writeValue(output, loadExport(detail, options, context));
        return;
      }
      if (settings.continuous().continuous()) {
        JSON.writeValue(output, continuous(options, scheduledTime(detail), context));
        return;
      }
      JSON.writeValue(output, mergeOnce(options));
    }
  }

  /** One merge, its metrics printed. */
  private MergeResult mergeOnce(MergeOptions options) {
    MergeResult result;
    try {
      result = new Merger(catalog, settings.table(), new StagingStore(s3, settings.staging()), options).run();
    } catch (RuntimeException e) {
      LOG.atError().setCause(e).log("Merge run failed; nothing it did is lost, the next run starts from the"
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
  private ObjectNode continuous(MergeOptions options, Instant scheduledTime, Context context) {
    Instant deadline = scheduledTime.plus(settings.continuous().runLength());
    if (context != null) {
      Instant lambdaDeadline = clock.instant().plusMillis(context.getRemainingTimeInMillis()).minus(CONTINUOUS_RESERVE);
      deadline = lambdaDeadline.isBefore(deadline) ? lambdaDeadline : deadline;
    }
    StagingStore store = new StagingStore(s3, settings.staging());
    ContinuousMerge.Result run = new ContinuousMerge(settings.continuous(), () -> mergeOnce(options), store::anyStaged,
        clock, pause).run(deadline);
    ObjectNode out = JSON.createObjectNode();
    out.put("mode", "continuous");
    out.put("stoppedBecause", run.stoppedBecause().name());
    out.put("deadline", run.deadline().toString());
    out.put("commits", run.commits());
    out.put("changesApplied", run.changesApplied());
    out.put("longestMergeMillis", run.longestMergeMillis());
    out.set("merges", JSON.valueToTree(run.merges()));
    return out;
  }

  /** The schedule's time for this run, from the input's scheduledTime; now when there is none. */
  private Instant scheduledTime(JsonNode detail) {
    JsonNode t = detail.path("scheduledTime");
    if (t.isMissingNode() || t.isNull()) {
      return clock.instant();
    }
    try {
      return Instant.parse(t.asText());
    } catch (DateTimeParseException e) {
      throw new IllegalArgumentException("Merger input scheduledTime=" + t + " is not an ISO-8601 UTC time such as"
          + " 2026-11-30T12:00:00Z (the template passes <aws.scheduler.scheduled-time>).");
    }
  }

  /** Testing hook: the clock and the wait continuous mode uses (the system clock and a sleep otherwise). */
  MergerHandler timing(Clock clock, ContinuousMerge.Pause pause) {
    this.clock = clock;
    this.pause = pause;
    return this;
  }

  /**
   * Loads (part of) a DynamoDB export instead of merging: {@code {"loadExport": "s3://…/AWSDynamoDB/<id>/",
   * "keys": ["pk", "sk"], "marginMinutes": 5, "skipHandOffCheck": false}}. Runs chunks until the
   * export is in or the invocation's time is nearly up; invoke again with the same input to resume.
   */
  private ExportLoadResult loadExport(JsonNode detail, MergeOptions options, Context context) {
    ExportLoader.Request request = exportRequest(detail.get("loadExport"), detail, "Merger input loadExport");
    Instant deadline = context == null
        ? Instant.now().plus(LOCAL_LOAD_BUDGET)
        : Instant.now().plusMillis(context.getRemainingTimeInMillis()).minus(LOAD_RESERVE);
    ExportLoadResult result = new ExportLoader(catalog, settings.table(), new StagingStore(s3, settings.staging()),
        options, s3).run(request, deadline);
    LOG.atInfo().addKeyValue("exportId", result.exportId()).addKeyValue("itemsLoaded", result.itemsLoaded())
        .addKeyValue("itemsInExport", result.itemsInExport()).addKeyValue("itemsThisRun", result.itemsThisRun())
        .addKeyValue("snapshots", result.snapshots()).addKeyValue("done", result.done())
        .addKeyValue("millis", result.millis()).log("Export load run: {}", result.note());
    return result;
  }

  /**
   * What to load, from an input: {@code location} (the export's s3:// folder, named {@code what} in
   * errors) and the optional {@code keys}, {@code marginMinutes} and {@code skipHandOffCheck}.
   */
  static ExportLoader.Request exportRequest(JsonNode location, JsonNode detail, String what) {
    if (location == null || !location.isTextual()) {
      throw new IllegalArgumentException(what + " must be the export's s3:// folder, not " + location);
    }
    List<String> keys = new ArrayList<>();
    JsonNode keysNode = detail.path("keys");
    if (!keysNode.isMissingNode() && !keysNode.isNull()) {
      if (!keysNode.isArray() || keysNode.isEmpty() || keysNode.size() > 2) {
        throw new IllegalArgumentException("Input keys must list the partition key and, if any, the sort key,"
            + " such as [\"pk\", \"sk\"]; got " + keysNode);
      }
      keysNode.forEach(k -> keys.add(k.asText()));
    }
    JsonNode margin = detail.path("marginMinutes");
    if (!margin.isMissingNode() && (!margin.canConvertToInt() || margin.asInt() < 0)) {
      throw new IllegalArgumentException("Input marginMinutes=" + margin + " is not a whole number of minutes.");
    }
    JsonNode skip = detail.path("skipHandOffCheck");
    if (!skip.isMissingNode() && !skip.isBoolean()) {
      throw new IllegalArgumentException("Input skipHandOffCheck must be true or false, not " + skip);
    }
    return new ExportLoader.Request(ExportLocation.parse(location.asText()), keys,
        Duration.ofMinutes(margin.asInt(5)), skip.asBoolean(false));
  }

  /** Where metric lines go: standard output in Lambda (CloudWatch reads them from the log). */
  MergerHandler metricsTo(Consumer<String> out) {
    this.metricsOut = out;
    return this;
  }

  /**
   * The run's metrics. FreshnessLagSeconds is the age of the oldest staged change still waiting
   * (0 when none waits): the alarm on it fires when merges fall behind or stop reporting.
   */
  private MetricLine metrics(MergeResult r) {
    return MetricLine.forTable(settings.table().namespace() + "." + settings.table().name(), Clock.systemUTC())
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

  /** The run's bounds: the configured ones, unless the input sets maxChanges. */
  MergeOptions options(JsonNode detail) {
    MergeOptions options = settings.options();
    if (detail.has("maxChanges")) {
      JsonNode n = detail.get("maxChanges");
      if (!n.canConvertToInt() || n.asInt() <= 0) {
        throw new IllegalArgumentException("Merger input maxChanges=" + n + " is not a positive whole number.");
      }
      options = options.withMaxChanges(n.asInt());
    }
    return options;
  }
}
