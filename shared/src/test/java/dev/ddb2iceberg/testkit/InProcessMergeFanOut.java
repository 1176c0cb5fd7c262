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
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * Runs the merge fan-out state machine ({@code statemachine/merge-fan-out.asl.json}) in process:
 * the same steps through the same handler input, in the same order, a thread pool of {@code
 * workers} as each distributed map, and the same retries (a failed shuffle, range or commit step is
 * tried {@link #ATTEMPTS} times in all, but a commit that lost its race). When a step gives up, the fan-out is aborted, as the state
 * machine's catch does, and the error is rethrown.
 */
public final class InProcessMergeFanOut {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** As the state machine's retry on any error: the first attempt and two retries. */
    public static final int ATTEMPTS = 3;

    private final Function<ObjectNode, JsonNode> invoke;
    private final Consumer<String> progress;

    /**
     * @param invoke calls the merge fan-out function with one step's input and returns its output
     * @param progress receives a line after each step
     */
    public InProcessMergeFanOut(Function<ObjectNode, JsonNode> invoke, Consumer<String> progress) {
        this.invoke = invoke;
        this.progress = progress;
    }

    /**
     * Plans and, when a big enough backlog waits, shuffles, merges the ranges and commits, and plans
     * again while the commit says objects were left past the slice's bound; returns the last
     * step's output.
     */
    public JsonNode run(int workers, String execution) {
        JsonNode last = runOne(workers, execution);
        while (last.path("objectsLeft").asInt() > 0) {
            last = runOne(workers, execution);
        }
        return last;
    }

    private JsonNode runOne(int workers, String execution) {
        JsonNode plan = invoke.apply(JSON.createObjectNode()
                .put("step", "plan")
                .put("workers", workers)
                .put("execution", execution));
        if (plan.path("mergeId").isNull()) {
            progress.accept(String.format(
                    "%d staged objects (%,d bytes): scheduled merges keep up, nothing fanned out",
                    plan.path("objects").asInt(), plan.path("bytes").asLong()));
            return plan;
        }
        String mergeId = plan.path("mergeId").asText();
        progress.accept(String.format(
                "planned fan-out %s: %d staged objects (%,d bytes), %d shuffle work items, %d key ranges",
                mergeId,
                plan.path("objects").asInt(),
                plan.path("bytes").asLong(),
                plan.path("works").size(),
                plan.path("ranges").size()));
        ExecutorService pool = Executors.newFixedThreadPool(workers);
        try {
            map(pool, mergeId, "shuffle", "work", plan.path("works"));
            map(pool, mergeId, "range", "range", plan.path("ranges"));
            JsonNode committed =
                    withRetries(JSON.createObjectNode().put("step", "commit").put("mergeId", mergeId));
            progress.accept(String.format(
                    "fan-out %s committed snapshot %s: %,d changes, %,d items written, %,d removed",
                    mergeId,
                    committed.path("snapshotId").asText(),
                    committed.path("changes").asLong(),
                    committed.path("itemsWritten").asLong(),
                    committed.path("itemsRemoved").asLong()));
            return committed;
        } catch (RuntimeException e) {
            try {
                JsonNode ended = invoke.apply(JSON.createObjectNode()
                        .put("step", "abort")
                        .put("mergeId", mergeId)
                        .put("error", String.valueOf(e.getMessage())));
                progress.accept(
                        ended.path("aborted").asBoolean()
                                ? "fan-out " + mergeId
                                        + " aborted: nothing of it committed; scheduled merges take the backlog"
                                : "fan-out " + mergeId + " had committed: finished instead of aborted");
            } catch (RuntimeException abortFailed) {
                e.addSuppressed(abortFailed);
            }
            throw e;
        } finally {
            pool.shutdownNow();
        }
    }

    /** One step per item on the pool, as a distributed map runs its children; the first failure, once all are done. */
    private void map(ExecutorService pool, String mergeId, String step, String field, JsonNode items) {
        List<Future<JsonNode>> tasks = new ArrayList<>();
        for (JsonNode item : items) {
            ObjectNode input = JSON.createObjectNode()
                    .put("step", step)
                    .put("mergeId", mergeId)
                    .put(field, item.asInt());
            tasks.add(pool.submit(() -> withRetries(input)));
        }
        RuntimeException first = null;
        for (Future<JsonNode> t : tasks) {
            try {
                Futures.join(t, step + " of fan-out " + mergeId);
            } catch (RuntimeException e) {
                first = first == null ? e : first;
            }
        }
        if (first != null) {
            throw first;
        }
        progress.accept(String.format("%d %s steps done", tasks.size(), step));
    }

    private JsonNode withRetries(ObjectNode step) {
        for (int attempt = 1; ; attempt++) {
            try {
                return invoke.apply(step);
            } catch (RuntimeException e) {
                boolean lostRace = step.path("step").asText().equals("commit")
                        && e.getClass().getName().startsWith("org.apache.iceberg.exceptions.");
                if (attempt >= ATTEMPTS || lostRace) {
                    throw e; // as the state machine: a commit that lost its race is not tried again
                }
                progress.accept("step " + step + " failed (" + e.getMessage() + "); retrying");
            }
        }
    }
}
