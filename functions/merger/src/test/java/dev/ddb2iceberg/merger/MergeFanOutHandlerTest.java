package dev.ddb2iceberg.merger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ddb2iceberg.commit.FanOutMark;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.FaultInjectingBlobStore.Operation;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.testkit.HandlerCalls;
import dev.ddb2iceberg.testkit.InProcessMergeFanOut;
import dev.ddb2iceberg.testkit.MergerFixture;
import dev.ddb2iceberg.testkit.OrderWorkload;
import dev.ddb2iceberg.testkit.TableItems;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The merge fan-out as its state machine runs it: each step through the MergeFanOut function's
 * handler, by {@link InProcessMergeFanOut} (Step Functions cannot run here; the in-process runner
 * takes its place with the same steps, order and retries), against the embedded S3 server and the
 * SQLite catalog.
 */
@ExtendWith(S3ServerExtension.class)
class MergeFanOutHandlerTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;

    private final List<String> progress = Collections.synchronizedList(new ArrayList<>());

    @Test
    void theStateMachinesStepsMergeABigBacklogAndScheduledMergesResume(EmbeddedS3Server server) {
        MergerFixture f = backlog(server, Map.of("MERGE_FAN_OUT_MIN_BACKLOG_BYTES", "1"));

        JsonNode committed = run(f, 3);

        assertTrue(committed.path("snapshotId").isNumber(), "committed: " + committed);
        assertEquals(f.model.items().size(), TableItems.read(f.table()).size(), "one row per item");
        f.assertTableHoldsModel();
        assertTrue(
                f.store().list().isEmpty(), "staged objects left: " + f.store().list());
        assertNull(FanOutMark.read(f.table()), "the mark is gone");
        stageMinute(new OrderWorkload(99, 300), f);
        assertNull(f.merger().run().heldBecause(), "scheduled merges resume");
        f.assertTableHoldsModel();
    }

    @Test
    void aBacklogUnderTheThresholdIsLeftToScheduledMerges(EmbeddedS3Server server) {
        MergerFixture f = backlog(server, Map.of("MERGE_FAN_OUT_MIN_BACKLOG_BYTES", "1000000000"));
        int staged = f.store().list().size();

        JsonNode plan = run(f, 3);

        assertTrue(plan.path("mergeId").isNull(), "no fan-out: " + plan);
        assertEquals(staged, plan.path("objects").asInt(), "staged objects the plan saw");
        assertNull(FanOutMark.read(f.table()), "the table is not marked");
        assertNull(f.merger().run().heldBecause(), "scheduled merges go on");
    }

    @Test
    void aRangeThatFailsOnceIsRetriedAndTheFanOutCommits(EmbeddedS3Server server) {
        MergerFixture f = backlog(server, Map.of("MERGE_FAN_OUT_MIN_BACKLOG_BYTES", "1"));
        AtomicBoolean retried = new AtomicBoolean();
        // Range 1's record cannot be written until the runner retries the step.
        server.faults().failFrom(Operation.PUT, 1, key -> key.endsWith("/ranges/r1.bin") && !retried.get());

        JsonNode committed = run(f, 3, line -> {
            if (line.contains("\"range\"") && line.contains("retrying")) {
                retried.set(true);
            }
        });

        server.faults().clear();
        assertTrue(retried.get(), "the range step was retried: " + progress);
        assertTrue(committed.path("snapshotId").isNumber(), "committed: " + committed);
        f.assertTableHoldsModel();
        assertTrue(
                f.store().list().isEmpty(), "staged objects left: " + f.store().list());
    }

    @Test
    void aRangeThatKeepsFailingAbortsTheFanOutWithNothingCommitted(EmbeddedS3Server server) {
        MergerFixture f = backlog(server, Map.of("MERGE_FAN_OUT_MIN_BACKLOG_BYTES", "1"));
        long before = f.table().currentSnapshot().snapshotId();
        int staged = f.store().list().size();
        server.faults().failFrom(Operation.PUT, 1, key -> key.endsWith("/ranges/r2.bin"));

        assertThrows(RuntimeException.class, () -> run(f, 3), "the fan-out fails");

        server.faults().clear();
        assertTrue(progress.stream().anyMatch(l -> l.contains("aborted")), "aborted: " + progress);
        assertNull(FanOutMark.read(f.table()), "the abort removed the mark");
        assertEquals(before, f.table().currentSnapshot().snapshotId(), "no snapshot was committed");
        assertEquals(staged, f.store().list().size(), "the backlog stays staged");
        while (f.merger().run().backlogObjects() > 0) {
            // scheduled merges take the backlog
        }
        f.assertTableHoldsModel();
    }

    /** A table with its key index (one merge), then a backlog of several minutes, staged. */
    private MergerFixture backlog(EmbeddedS3Server server, Map<String, String> settings) {
        MergerFixture f = new MergerFixture(server, dir, settings);
        OrderWorkload workload = new OrderWorkload(5, 300);
        stageMinute(workload, f);
        f.merger().run();
        for (int minute = 0; minute < 4; minute++) {
            stageMinute(workload, f);
        }
        return f;
    }

    private static void stageMinute(OrderWorkload workload, MergerFixture f) {
        for (OrderWorkload.ShardChanges shard : workload.minute(400, 0)) {
            for (int from = 0; from < shard.changes().size(); from += 100) {
                List<Change> batch =
                        shard.changes().subList(from, Math.min(shard.changes().size(), from + 100));
                f.stage(batch);
            }
        }
    }

    private JsonNode run(MergerFixture f, int workers) {
        return run(f, workers, line -> {});
    }

    private JsonNode run(MergerFixture f, int workers, Consumer<String> also) {
        MergeFanOutHandler handler = new MergeFanOutHandler(new Environment(f.env));
        return new InProcessMergeFanOut(invoker(handler), line -> {
                    progress.add(line);
                    also.accept(line);
                })
                .run(workers, "execution-" + System.nanoTime());
    }

    /** Calls the handler as Lambda would: JSON in, JSON out; an exception it throws is rethrown. */
    private static Function<ObjectNode, JsonNode> invoker(MergeFanOutHandler handler) {
        return HandlerCalls.json(handler);
    }
}
