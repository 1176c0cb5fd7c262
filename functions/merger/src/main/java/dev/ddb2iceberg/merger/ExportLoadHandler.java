package dev.ddb2iceberg.merger;

import dev.ddb2iceberg.load.parallel.ParallelExportLoad;
import dev.ddb2iceberg.observe.Invocation;
import com.amazonaws.services.lambda.runtime.Context;
import com.amazonaws.services.lambda.runtime.RequestStreamHandler;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.ScheduleInput;
import dev.ddb2iceberg.staging.StagingStore;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.Set;
import java.util.stream.IntStream;
import org.apache.iceberg.catalog.Catalog;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Lambda entry point of the parallel export load's steps, in the Merger's jar (the same code and
 * settings), run by the template's export-load state machine ({@code statemachine/export-load.asl.json})
 * or locally by {@code ./ddb2iceberg load-export --parallel N}. The input's {@code step} says which
 * ({@link ParallelExportLoad} explains them):
 *
 * <ul>
 *   <li>{@code {"step": "plan", "export": "s3://…/AWSDynamoDB/<id>/", "keys": [...], "workers": N}}:
 *       returns the plan: {@code loadId}, the {@code work} items, the {@code indexGroups} and the
 *       {@code concurrency} the map runs at;
 *   <li>{@code {"step": "load", "loadId": …, "work": i}}: one work item;
 *   <li>{@code {"step": "index", "loadId": …, "group": g}}: one group of key index parts;
 *   <li>{@code {"step": "commit", "loadId": …}}: the one commit;
 *   <li>{@code {"step": "abort", "loadId": …, "error": …}}: ends a failed load, nothing of it committed.
 * </ul>
 */
public final class ExportLoadHandler implements RequestStreamHandler {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Set<String> INPUT_FIELDS = Set.of("step", "export", "keys", "marginMinutes",
      "skipHandOffCheck", "workers", "loadId", "work", "group", "error", "input", "execution");
  /** What an execution's input may hold (the state machine hands it to the plan step as "input"). */
  private static final Set<String> PLAN_FIELDS = Set.of("export", "keys", "marginMinutes", "skipHandOffCheck",
      "workers");
  /** Items a worker writes at once at most (its heap bounds a batch too: ParallelExportLoad.BATCH_HEAP_SHARE). */
  static final int DEFAULT_BATCH_ITEMS = 1_000_000;

  private final ParallelExportLoad load;
  private final int concurrency;

  /** Used by Lambda: settings are read and checked, and clients built, once at cold start. */
  public ExportLoadHandler() {
    this(Environment.system());
  }

  /** Used by the local runtime, which passes the environment a Lambda would have. */
  public ExportLoadHandler(Environment env) {
    this(env, MergerSettings.from(env));
  }

  private ExportLoadHandler(Environment env, MergerSettings settings) {
    this(settings, settings.catalog().load(), settings.s3().newClient(), concurrency(env), batchItems(env));
  }

  /** Workers the map runs at once unless the execution's input says ({@code workers}). */
  static int concurrency(Environment env) {
    return env.positiveInt(dev.ddb2iceberg.config.Settings.EXPORT_LOAD_CONCURRENCY);
  }

  static int batchItems(Environment env) {
    return env.positiveInt(dev.ddb2iceberg.config.Settings.LOAD_BATCH_ITEMS);
  }

  /** Reads (and checks) every setting the handler reads, as its constructor does, without building clients. */
  public static void checkSettings(Environment env) {
    MergerSettings.from(env);
    concurrency(env);
    batchItems(env);
  }

  public ExportLoadHandler(MergerSettings settings, Catalog catalog, S3Client s3, int concurrency, int batchItems) {
    this.concurrency = concurrency;
    this.load = new ParallelExportLoad(catalog, settings.table(), new StagingStore(s3, settings.staging()),
        settings.options(), s3, batchItems);
  }

  @Override
  public void handleRequest(InputStream input, OutputStream output, Context context) throws IOException {
    try (Invocation log = Invocation.of(context)) {
      JsonNode in = ScheduleInput.parse(input.readAllBytes(), "export load", INPUT_FIELDS);
      JSON.writeValue(output, run(in));
    }
  }

  private Object run(JsonNode in) {
    String step = in.path("step").asText("");
    switch (step) {
      case "plan": {
        JsonNode plan = in;
        if (in.path("input").isObject()) { // from the state machine: the execution's input, and its id
          ObjectNode copy = in.get("input").deepCopy();
          if (in.path("execution").isTextual()) {
            copy.put("execution", in.get("execution").asText());
          }
          plan = copy;
        }
        plan.fieldNames().forEachRemaining(f -> {
          if (!PLAN_FIELDS.contains(f) && !f.equals("step") && !f.equals("execution")) {
            throw new IllegalArgumentException("The export load's input has an unknown field '" + f + "'; it takes "
                + new java.util.TreeSet<>(PLAN_FIELDS) + ".");
          }
        });
        return plan(plan);
      }
      case "load":
        return load.loadWork(loadId(in), nonNegative(in, "work"));
      case "index": {
        ParallelExportLoad.GroupDone g = load.buildIndex(loadId(in), nonNegative(in, "group"));
        return JSON.createObjectNode().put("group", g.group()).put("parts", g.parts().size()).put("entries", g.entries());
      }
      case "commit":
        return load.commit(loadId(in));
      case "abort": {
        String loadId = loadId(in);
        int deleted = load.abort(loadId, in.path("error").toString());
        return JSON.createObjectNode().put("loadId", loadId).put("aborted", true).put("filesDeleted", deleted);
      }
      default:
        throw new IllegalArgumentException("Export load input step='" + step + "' is not one of plan, load, index,"
            + " commit, abort.");
    }
  }

  /** Testing hook: runs just before the final commit. */
  ExportLoadHandler beforeCommit(java.util.function.Consumer<org.apache.iceberg.Table> hook) {
    load.beforeCommit(hook);
    return this;
  }

  private ObjectNode plan(JsonNode in) {
    int workers = in.has("workers") && !in.get("workers").isNull() ? positive(in, "workers") : concurrency;
    JsonNode execution = in.path("execution");
    ParallelExportLoad.Plan plan = load.plan(MergerHandler.exportRequest(in.get("export"), in,
        "Export load input export"), workers, execution.isTextual() ? execution.asText() : null);
    ObjectNode out = JSON.createObjectNode();
    out.put("loadId", plan.loadId());
    out.put("exportId", plan.exportId());
    out.put("items", plan.items());
    out.put("files", plan.files());
    out.put("lookups", plan.lookups());
    out.put("concurrency", workers);
    out.set("work", JSON.valueToTree(plan.work().stream().map(w -> JSON.createObjectNode().put("work", w.work())
        .put("items", w.items())).toList()));
    out.set("indexGroups", JSON.valueToTree(IntStream.range(0, plan.indexGroups()).boxed().toList()));
    return out;
  }

  private static String loadId(JsonNode in) {
    if (!in.path("loadId").isTextual()) {
      throw new IllegalArgumentException("Export load input needs the loadId the plan step returned; got "
          + in.path("loadId"));
    }
    return in.get("loadId").asText();
  }

  private static int positive(JsonNode in, String field) {
    int n = nonNegative(in, field);
    if (n == 0) {
      throw new IllegalArgumentException("Export load input " + field + "=0 must be positive.");
    }
    return n;
  }

  private static int nonNegative(JsonNode in, String field) {
    JsonNode n = in.path(field);
    if (!n.canConvertToInt() || n.asInt() < 0) {
      throw new IllegalArgumentException("Export load input " + field + "=" + n + " is not a whole number.");
    }
    return n.asInt();
  }
}
