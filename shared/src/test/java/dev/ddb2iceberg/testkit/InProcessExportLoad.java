package dev.ddb2iceberg.testkit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ddb2iceberg.util.Futures;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * Runs the export-load state machine ({@code statemachine/export-load.asl.json}) in process, so the
 * parallel load runs and is tested without AWS: the same steps through the same handler input, in
 * the same order, a thread pool of {@code workers} as the distributed map, and the same retries (a
 * failed step is tried {@link #ATTEMPTS} times in all, except a refusal of bad input, which is
 * final). When a step gives up, the load is aborted, as the state machine's catch does, and the
 * error is rethrown.
 */
public final class InProcessExportLoad {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** As the state machine's retry on any error: the first attempt and two retries. */
    public static final int ATTEMPTS = 3;

    private final Function<ObjectNode, JsonNode> invoke;
    private final Consumer<String> progress;

    /**
     * @param invoke calls the export-load function with one step's input and returns its output
     * @param progress receives a line after each step
     */
    public InProcessExportLoad(Function<ObjectNode, JsonNode> invoke, Consumer<String> progress) {
        this.invoke = invoke;
        this.progress = progress;
    }

    /** Plans, loads, gathers small files, indexes and commits; returns the commit step's output. */
    public JsonNode run(ObjectNode planInput, int workers) {
        ObjectNode planStep = planInput.deepCopy().put("step", "plan").put("workers", workers);
        JsonNode plan = invoke.apply(planStep); // a refusal ends the run: nothing was marked
        String loadId = plan.path("loadId").asText();
        long items = plan.path("items").asLong();
        progress.accept(String.format(
                "planned load %s: %,d items in %d data files, %d work items, %d workers%s",
                loadId,
                items,
                plan.path("files").asInt(),
                plan.path("work").size(),
                workers,
                plan.path("lookups").asBoolean() ? " (the table has rows: workers skip the keys it holds)" : ""));
        ExecutorService pool = Executors.newFixedThreadPool(workers);
        try {
            AtomicLong loaded = new AtomicLong();
            AtomicInteger finished = new AtomicInteger();
            List<Future<?>> tasks = new ArrayList<>();
            for (JsonNode work : plan.path("work")) {
                ObjectNode step = JSON.createObjectNode()
                        .put("step", "load")
                        .put("loadId", loadId)
                        .put("work", work.path("work").asInt());
                tasks.add(pool.submit(() -> {
                    JsonNode done = withRetries(step);
                    long sum = loaded.addAndGet(done.path("items").asLong());
                    progress.accept(String.format(
                            "work item %d done: %,d items in %.1f s; %,d of %,d items, %d of %d work items",
                            done.path("work").asInt(),
                            done.path("items").asLong(),
                            done.path("millis").asLong() / 1000.0,
                            sum,
                            items,
                            finished.incrementAndGet(),
                            plan.path("work").size()));
                }));
            }
            joinAll(tasks, loadId);
            tasks.clear();
            JsonNode arranged =
                    withRetries(JSON.createObjectNode().put("step", "arrange").put("loadId", loadId));
            if (arranged.path("groups").size() > 0) {
                progress.accept(String.format(
                        "merging %d small files (%,d bytes) in %d groups into files of about %,d bytes; %d files kept",
                        arranged.path("filesToMerge").asInt(),
                        arranged.path("bytesToMerge").asLong(),
                        arranged.path("groups").size(),
                        arranged.path("targetBytes").asLong(),
                        arranged.path("filesKept").asInt()));
            }
            AtomicInteger gathered = new AtomicInteger();
            for (JsonNode group : arranged.path("groups")) {
                ObjectNode step = JSON.createObjectNode()
                        .put("step", "gather")
                        .put("loadId", loadId)
                        .put("group", group.asInt());
                tasks.add(pool.submit(() -> {
                    JsonNode done = withRetries(step);
                    progress.accept(String.format(
                            "gather group %d done: %d files into %d in %.1f s; %d of %d groups",
                            done.path("group").asInt(),
                            done.path("filesIn").asInt(),
                            done.path("filesOut").asInt(),
                            done.path("millis").asLong() / 1000.0,
                            gathered.incrementAndGet(),
                            arranged.path("groups").size()));
                }));
            }
            joinAll(tasks, loadId);
            tasks.clear();
            for (JsonNode group : plan.path("indexGroups")) {
                ObjectNode step = JSON.createObjectNode()
                        .put("step", "index")
                        .put("loadId", loadId)
                        .put("group", group.asInt());
                tasks.add(pool.submit(() -> withRetries(step)));
            }
            joinAll(tasks, loadId);
            if (!tasks.isEmpty()) {
                progress.accept("key index built in " + tasks.size() + " groups");
            }
            return withRetries(JSON.createObjectNode().put("step", "commit").put("loadId", loadId));
        } catch (RuntimeException e) {
            abort(loadId, e);
            throw e;
        } finally {
            pool.shutdownNow();
        }
    }

    private void joinAll(List<Future<?>> tasks, String loadId) {
        RuntimeException first = null;
        for (Future<?> t : tasks) {
            try {
                Futures.join(t, "running load " + loadId);
            } catch (RuntimeException e) {
                first = first == null ? e : first; // let the others finish, as the map's other children would
            }
        }
        if (first != null) {
            throw first;
        }
    }

    private JsonNode withRetries(ObjectNode step) {
        for (int attempt = 1; ; attempt++) {
            try {
                return invoke.apply(step);
            } catch (IllegalArgumentException refused) {
                throw refused; // bad input or a damaged export file: retrying cannot help
            } catch (RuntimeException e) {
                if (attempt >= ATTEMPTS) {
                    throw e;
                }
                progress.accept("step " + step + " failed (" + e.getMessage() + "); retrying");
            }
        }
    }

    private void abort(String loadId, RuntimeException cause) {
        try {
            JsonNode out = invoke.apply(JSON.createObjectNode()
                    .put("step", "abort")
                    .put("loadId", loadId)
                    .put("error", String.valueOf(cause.getMessage())));
            progress.accept("load " + loadId + " aborted: nothing of it was committed, "
                    + out.path("filesDeleted").asInt() + " files deleted; merges resume");
        } catch (RuntimeException e) {
            cause.addSuppressed(e);
        }
    }
}
