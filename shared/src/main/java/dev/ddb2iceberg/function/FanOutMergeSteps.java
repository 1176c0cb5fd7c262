package dev.ddb2iceberg.function;

import com.fasterxml.jackson.annotation.JsonSetter;
import com.fasterxml.jackson.annotation.Nulls;
import com.fasterxml.jackson.databind.JsonNode;
import dev.ddb2iceberg.merge.FanOutMerge;
import java.util.List;
import java.util.stream.IntStream;

/**
 * The steps of a fanned-out merge ({@link FanOutMerge} explains them), as the template's merge
 * fan-out state machine ({@code statemachine/merge-fan-out.asl.json}) runs them: the input's
 * {@code step} says which.
 *
 * <ul>
 *   <li>{@code {"step": "plan", "workers": N, "execution": <id>}}: returns the {@code mergeId} (null
 *       when the backlog is under {@code MERGE_FAN_OUT_MIN_BACKLOG_BYTES}: scheduled merges take it),
 *       the shuffle {@code works} and the key {@code ranges} to map over, at {@code concurrency};
 *   <li>{@code {"step": "shuffle", "mergeId": …, "work": i}}: one shuffle work item;
 *   <li>{@code {"step": "range", "mergeId": …, "range": r}}: one key range, merged and written;
 *   <li>{@code {"step": "commit", "mergeId": …}}: the one commit, then the staged slice deleted;
 *   <li>{@code {"step": "abort", "mergeId": …, "error": …}}: ends a fan-out that will not commit.
 * </ul>
 */
public final class FanOutMergeSteps {
    /** A step's input: the fields of all steps (each takes the ones it needs). */
    public record Input(
            String step,
            @JsonSetter(nulls = Nulls.SET) Integer workers,
            @JsonSetter(nulls = Nulls.SET) String mergeId,
            Integer work,
            Integer range,
            @JsonSetter(nulls = Nulls.SET) JsonNode error,
            @JsonSetter(nulls = Nulls.SET) String execution) {}

    /** The plan step's result: the state machine maps over {@code works}, then {@code ranges}, at {@code concurrency}. */
    public record Planned(
            String mergeId, int objects, long bytes, int concurrency, List<Integer> works, List<Integer> ranges) {}

    /** An abort's result: {@code aborted} is false when the fan-out had committed and was finished instead. */
    public record Aborted(String mergeId, boolean aborted, int filesDeleted) {}

    private final FanOutMerge merge;
    private final long minBacklogBytes;

    /** @param minBacklogBytes the staged backlog under which the plan step plans nothing */
    public FanOutMergeSteps(FanOutMerge merge, long minBacklogBytes) {
        this.merge = merge;
        this.minBacklogBytes = minBacklogBytes;
    }

    public Object run(Input in) {
        String step = in.step() == null ? "" : in.step();
        return switch (step) {
            case "plan" -> {
                Integer workers = in.workers();
                if (workers == null || workers < 1) {
                    throw new IllegalArgumentException(
                            "Merge fan-out input workers=" + workers + " must be a positive whole number.");
                }
                FanOutMerge.Planned p = merge.plan(workers, in.execution(), minBacklogBytes);
                yield new Planned(
                        p.mergeId(),
                        p.objects(),
                        p.bytes(),
                        workers,
                        IntStream.range(0, p.works()).boxed().toList(),
                        IntStream.range(0, p.ranges()).boxed().toList());
            }
            case "shuffle" -> merge.shuffle(mergeId(in), nonNegative("work", in.work()));
            case "range" -> merge.mergeRange(mergeId(in), nonNegative("range", in.range()));
            case "commit" -> merge.commit(mergeId(in));
            case "abort" -> {
                String mergeId = mergeId(in);
                FanOutMerge.Ended ended = merge.abort(
                        mergeId, in.error() == null ? "" : in.error().toString());
                yield new Aborted(mergeId, ended.aborted(), ended.filesDeleted());
            }
            default ->
                throw new IllegalArgumentException(
                        "Merge fan-out input step='" + step + "' is not one of plan, shuffle, range, commit, abort.");
        };
    }

    private static String mergeId(Input in) {
        if (in.mergeId() == null) {
            throw new IllegalArgumentException(
                    "Merge fan-out input needs the mergeId the plan step returned; got null");
        }
        return in.mergeId();
    }

    private static int nonNegative(String field, Integer n) {
        if (n == null || n < 0) {
            throw new IllegalArgumentException("Merge fan-out input " + field + "=" + n + " is not a whole number.");
        }
        return n;
    }
}
