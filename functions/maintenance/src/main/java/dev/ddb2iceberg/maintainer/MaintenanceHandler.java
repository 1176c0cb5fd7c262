package dev.ddb2iceberg.maintainer;

import dev.ddb2iceberg.observe.Invocation;
import dev.ddb2iceberg.observe.MetricLine;
import dev.ddb2iceberg.status.TableStatus;
import com.amazonaws.services.lambda.runtime.Context;
import com.amazonaws.services.lambda.runtime.RequestStreamHandler;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.ScheduleInput;
import dev.ddb2iceberg.maintenance.Maintenance;
import dev.ddb2iceberg.maintenance.MaintenanceResult;
import dev.ddb2iceberg.maintenance.MaintenanceTask;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.table.TableCreator;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.time.Clock;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Lambda entry point, run by an EventBridge schedule (hourly by default). Input, all optional, as a
 * schedule rule's {@code detail} or EventBridge Scheduler's plain input:
 * {@code {"tasks": ["compact", "manifests", "expire", "orphans"], "dryRun": false}}.
 * Returns the run's {@link MaintenanceResult} as JSON.
 */
public final class MaintenanceHandler implements RequestStreamHandler {
  private static final Logger LOG = LoggerFactory.getLogger(MaintenanceHandler.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Set<String> INPUT_FIELDS = Set.of("tasks", "dryRun", "status");

  private final MaintenanceSettings settings;
  private final Catalog catalog;
  private final Clock clock;
  // System.out as it is at each print (not a method reference, which would keep the stream of
  // construction time): the local runtime points it away from its own output while functions run.
  private Consumer<String> metricsOut = line -> System.out.println(line);

  /** Used by Lambda: settings are read and checked, and the catalog built, once at cold start. */
  public MaintenanceHandler() {
    this(Environment.system());
  }

  /** Used by the local runtime, which passes the environment a Lambda would have. */
  public MaintenanceHandler(Environment env) {
    this(MaintenanceSettings.from(env), Clock.systemUTC());
  }

  public MaintenanceHandler(MaintenanceSettings settings, Clock clock) {
    this(settings, settings.catalog().load(), clock);
  }

  public MaintenanceHandler(MaintenanceSettings settings, Catalog catalog, Clock clock) {
    this.settings = settings;
    this.catalog = catalog;
    this.clock = clock;
  }

  /** Where metric lines go: standard output in Lambda (CloudWatch reads them from the log). */
  MaintenanceHandler metricsTo(Consumer<String> out) {
    this.metricsOut = out;
    return this;
  }

  /** What the input asks for. */
  record Request(Set<MaintenanceTask> tasks, boolean dryRun, boolean status) {
    Request(Set<MaintenanceTask> tasks, boolean dryRun) {
      this(tasks, dryRun, false);
    }
  }

  @Override
  public void handleRequest(InputStream input, OutputStream output, Context context) throws IOException {
    try (Invocation log = Invocation.of(context)) {
      try {
        handle(input, output);
      } catch (RuntimeException e) {
        LOG.atError().setCause(e).log("Maintenance run failed; the table is as its last commit left it");
        throw e;
      }
    }
  }

  private void handle(InputStream input, OutputStream output) throws IOException {
    Request request = request(input.readAllBytes());
    TableIdentifier id = TableIdentifier.of(settings.table().namespace(), settings.table().name());
    MaintenanceResult result;
    Table table = TableCreator.loadIfExists(catalog, id);
    if (request.status()) {
      // Only a report: the table, what waits in staging, files, last compaction. Changes nothing.
      JSON.writeValue(output, status(settings, catalog, table, clock));
      return;
    }
    if (table == null) {
      String note = "Table " + id + " does not exist yet (the merger creates it on its first run): nothing to maintain";
      LOG.info(note);
      result = new MaintenanceResult(request.dryRun(), MaintenanceResult.Compaction.NONE, 0, 0, List.of(), List.of(), 0);
      JSON.writeValue(output, JSON.<com.fasterxml.jackson.databind.node.ObjectNode>valueToTree(result).put("note", note));
      return;
    }
    result = new Maintenance(table, settings.options(), settings.stagingUri(), clock)
        .managedStorage(settings.catalog().isS3Tables())
        .run(request.tasks(), request.dryRun());
    if (!result.dryRun()) {
      metricsOut.accept(metrics(id, result).toString());
    }
    com.fasterxml.jackson.databind.node.ObjectNode out = JSON.valueToTree(result);
    // The change history (HISTORY_TABLE) gets the same tasks, with its own retention.
    Table history = settings.table().historyTable() == null ? null
        : TableCreator.loadIfExists(catalog, TableIdentifier.of(settings.table().namespace(), settings.table().historyTable()));
    if (history != null) {
      // In an S3 table bucket the history has no files of the pipeline's own to look after: the
      // bucket removes its unreferenced files itself.
      Set<MaintenanceTask> tasks = EnumSet.copyOf(request.tasks());
      if (settings.catalog().isS3Tables()) {
        tasks.remove(MaintenanceTask.ORPHANS);
      }
      MaintenanceResult h = new Maintenance(history, settings.options().forHistory(), settings.stagingUri(), clock)
          .managedStorage(settings.catalog().isS3Tables())
          .run(tasks, request.dryRun());
      if (!h.dryRun()) {
        metricsOut.accept(metrics(TableIdentifier.of(settings.table().namespace(), settings.table().historyTable()), h)
            .toString());
      }
      out.set("history", JSON.valueToTree(h));
    }
    JSON.writeValue(output, out);
  }

  static Request request(byte[] bytes) {
    Set<MaintenanceTask> tasks = EnumSet.allOf(MaintenanceTask.class);
    JsonNode detail = ScheduleInput.parse(bytes, "maintenance", INPUT_FIELDS);
    if (detail.has("tasks")) {
      JsonNode list = detail.get("tasks");
      if (!list.isArray() || list.isEmpty()) {
        throw new IllegalArgumentException("Maintenance input \"tasks\" must be a non-empty list such as [\"compact\", \"expire\"].");
      }
      tasks = EnumSet.noneOf(MaintenanceTask.class);
      for (JsonNode t : list) {
        tasks.add(MaintenanceTask.fromInput(t.asText()));
      }
    }
    JsonNode dry = detail.path("dryRun");
    if (!dry.isMissingNode() && !dry.isBoolean()) {
      throw new IllegalArgumentException("Maintenance input \"dryRun\" must be true or false, not " + dry);
    }
    JsonNode status = detail.path("status");
    if (!status.isMissingNode() && !status.isBoolean()) {
      throw new IllegalArgumentException("Maintenance input \"status\" must be true or false, not " + status);
    }
    return new Request(tasks, dry.asBoolean(false), status.asBoolean(false));
  }

  /** The run's metrics: what compaction rewrote, the files left, and what expiry and cleanup removed. */
  private MetricLine metrics(TableIdentifier id, MaintenanceResult r) {
    MaintenanceResult.Compaction c = r.compaction();
    return MetricLine.forTable(id.toString(), clock)
        .count("FilesRewritten", c.filesRewritten())
        .bytes("BytesRewritten", c.bytesRewritten())
        .count("DataFiles", c.dataFilesAfter())
        .count("DeleteFiles", c.deleteFilesAfter())
        .count("CompactionGroupsLeft", c.groupsLeft())
        .count("ManifestsRewritten", r.manifestsRewritten())
        .count("SnapshotsExpired", r.snapshotsExpired())
        .count("OrphansDeleted", r.orphans().size())
        .count("MaintenanceConflicts", r.conflicts().size())
        .milliseconds("MaintenanceMillis", r.millis());
  }

  /**
   * The status report of the table (null if not created yet), its staging prefix, and its change
   * history when HISTORY_TABLE names one.
   */
  public static TableStatus status(MaintenanceSettings settings, Catalog catalog, Table table, Clock clock) {
    TableStatus status;
    try (S3Client s3 = settings.s3().newClient()) { // only a status request needs one: not at cold start
      status = TableStatus.of(settings.table().namespace() + "." + settings.table().name(), table,
          new StagingStore(s3, settings.staging()), settings.options().targetFileSizeBytes(), clock);
    }
    if (settings.table().historyTable() == null) {
      return status;
    }
    TableIdentifier history = TableIdentifier.of(settings.table().namespace(), settings.table().historyTable());
    return status.withHistory(TableStatus.HistoryStatus.of(history.toString(), TableCreator.loadIfExists(catalog, history)));
  }

}
