package dev.ddb2iceberg.merger;

import com.amazonaws.services.lambda.runtime.Context;
import com.amazonaws.services.lambda.runtime.RequestStreamHandler;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.ScheduleInput;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.merge.MergeResult;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.ops.MetricLine;
import dev.ddb2iceberg.staging.StagingStore;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.time.Clock;
import java.util.Set;
import java.util.function.Consumer;
import org.apache.iceberg.catalog.Catalog;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Lambda entry point, run by an EventBridge schedule. Accepts a schedule rule's
 * {@code ScheduledEvent} (whose {@code detail} is the input), the plain JSON input that EventBridge
 * Scheduler delivers, or nothing. Input fields (all optional): {@code maxChanges}.
 * Returns the run's {@link MergeResult} as JSON.
 */
public final class MergerHandler implements RequestStreamHandler {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Set<String> INPUT_FIELDS = Set.of("maxChanges");

  private final MergerSettings settings;
  private final Catalog catalog;
  private final S3Client s3;
  private Consumer<String> metricsOut = System.out::println;

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
    MergeOptions options = options(ScheduleInput.parse(input.readAllBytes(), "merger", INPUT_FIELDS));
    MergeResult result = new Merger(catalog, settings.table(), new StagingStore(s3, settings.staging()), options).run();
    metricsOut.accept(metrics(result).toString());
    JSON.writeValue(output, result);
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
        .count("Upserts", r.upserts())
        .count("Deletes", r.deletes())
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
