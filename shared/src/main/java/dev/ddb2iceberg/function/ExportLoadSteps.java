package dev.ddb2iceberg.function;

import com.fasterxml.jackson.annotation.JsonSetter;
import com.fasterxml.jackson.annotation.Nulls;
import com.fasterxml.jackson.databind.JsonNode;
import dev.ddb2iceberg.load.parallel.ParallelExportLoad;
import java.util.List;
import java.util.TreeSet;
import java.util.stream.IntStream;

/**
 * The steps of a parallel export load ({@link ParallelExportLoad} explains them), as the export-load
 * state machine ({@code statemachine/export-load.asl.json}) runs them: the input's {@code step}
 * says which.
 *
 * <ul>
 *   <li>{@code {"step": "plan", "export": "s3://…/AWSDynamoDB/<id>/", "keys": [...], "workers": N}}, or
 *       from the state machine {@code {"step": "plan", "input": <the execution's input>, "execution": <its id>}}:
 *       returns the plan: {@code loadId}, the {@code work} items, the {@code indexGroups} and the
 *       {@code concurrency} the map runs at;
 *   <li>{@code {"step": "load", "loadId": …, "work": i}}: one work item;
 *   <li>{@code {"step": "arrange", "loadId": …}}: once every work item is done, groups each
 *       partition's small files; returns the {@code groups} to gather;
 *   <li>{@code {"step": "gather", "loadId": …, "group": g}}: merges one group into a target-size file;
 *   <li>{@code {"step": "index", "loadId": …, "group": g}}: one group of key index parts;
 *   <li>{@code {"step": "commit", "loadId": …}}: the one commit;
 *   <li>{@code {"step": "abort", "loadId": …, "error": …}}: ends a failed load, nothing of it committed.
 * </ul>
 */
public final class ExportLoadSteps {
    /** A step's input: the fields of all steps (each takes the ones it needs). */
    public record Input(
            String step,
            String export,
            @JsonSetter(nulls = Nulls.SET) List<String> keys,
            Integer marginMinutes,
            Boolean skipHandOffCheck,
            @JsonSetter(nulls = Nulls.SET) Integer workers,
            String loadId,
            Integer work,
            Integer group,
            @JsonSetter(nulls = Nulls.SET) JsonNode error,
            Plan input,
            @JsonSetter(nulls = Nulls.SET) String execution) {}

    /** What an execution's input may hold (the state machine hands it to the plan step as "input"). */
    public record Plan(
            String step,
            String export,
            @JsonSetter(nulls = Nulls.SET) List<String> keys,
            Integer marginMinutes,
            Boolean skipHandOffCheck,
            @JsonSetter(nulls = Nulls.SET) Integer workers,
            @JsonSetter(nulls = Nulls.SET) String execution) {}

    /** The plan step's result; the state machine maps over {@code work} at {@code concurrency}. */
    public record Planned(
            String loadId,
            String exportId,
            long items,
            int files,
            boolean lookups,
            int concurrency,
            List<WorkItem> work,
            List<Integer> indexGroups) {}

    public record WorkItem(int work, long items) {}

    public record Indexed(int group, int parts, long entries) {}

    public record Aborted(String loadId, boolean aborted, int filesDeleted) {}

    private final ParallelExportLoad load;
    private final int concurrency;

    /** @param concurrency workers the map runs at once unless the input says ({@code workers}) */
    public ExportLoadSteps(ParallelExportLoad load, int concurrency) {
        this.load = load;
        this.concurrency = concurrency;
    }

    public Object run(Input in) {
        String step = in.step() == null ? "" : in.step();
        return switch (step) {
            case "plan" -> plan(planOf(in));
            case "load" -> load.loadWork(loadId(in), nonNegative("work", in.work()));
            case "arrange" -> load.arrange(loadId(in));
            case "gather" -> load.gather(loadId(in), nonNegative("group", in.group()));
            case "index" -> {
                ParallelExportLoad.GroupDone g = load.buildIndex(loadId(in), nonNegative("group", in.group()));
                yield new Indexed(g.group(), g.parts().size(), g.entries());
            }
            case "commit" -> load.commit(loadId(in));
            case "abort" -> {
                String loadId = loadId(in);
                int deleted =
                        load.abort(loadId, in.error() == null ? "" : in.error().toString());
                yield new Aborted(loadId, true, deleted);
            }
            default ->
                throw new IllegalArgumentException(
                        step.isEmpty() && in.export() != null
                                // The state machine's own input, given to the function that runs its steps.
                                ? "Export load input names an export but no step: it is the export-load state"
                                        + " machine's input, which runs this function once a step. Start the state"
                                        + " machine with it (aws stepfunctions start-execution --input), or locally"
                                        + " run ./ddb2iceberg load-export --input <this file>."
                                : "Export load input step='" + step
                                        + "' is not one of plan, load, arrange, gather, index, commit, abort.");
        };
    }

    /** The plan's fields: the execution's input (from the state machine, with its id), else the step's own. */
    private static Plan planOf(Input in) {
        if (in.input() != null) {
            Plan p = in.input();
            return new Plan(
                    p.step(),
                    p.export(),
                    p.keys(),
                    p.marginMinutes(),
                    p.skipHandOffCheck(),
                    p.workers(),
                    in.execution() != null ? in.execution() : p.execution());
        }
        for (var other : new Object[][] {
            {"loadId", in.loadId()}, {"work", in.work()}, {"group", in.group()}, {"error", in.error()}
        }) {
            if (other[1] != null) {
                throw new IllegalArgumentException("The export load's input has an unknown field '" + other[0]
                        + "'; it takes " + new TreeSet<>(FunctionInput.fields(Plan.class)) + ".");
            }
        }
        return new Plan(
                in.step(),
                in.export(),
                in.keys(),
                in.marginMinutes(),
                in.skipHandOffCheck(),
                in.workers(),
                in.execution());
    }

    private Planned plan(Plan in) {
        int workers = in.workers() == null ? concurrency : in.workers();
        if (workers == 0) {
            throw new IllegalArgumentException("Export load input workers=0 must be positive.");
        }
        nonNegative("workers", workers);
        ParallelExportLoad.Plan plan = load.plan(
                MergeRun.exportRequest(
                        "Export load input export", in.export(), in.keys(), in.marginMinutes(), in.skipHandOffCheck()),
                workers,
                in.execution());
        return new Planned(
                plan.loadId(),
                plan.exportId(),
                plan.items(),
                plan.files(),
                plan.lookups(),
                workers,
                plan.work().stream().map(w -> new WorkItem(w.work(), w.items())).toList(),
                IntStream.range(0, plan.indexGroups()).boxed().toList());
    }

    private static String loadId(Input in) {
        if (in.loadId() == null) {
            throw new IllegalArgumentException("Export load input needs the loadId the plan step returned; got null");
        }
        return in.loadId();
    }

    private static int nonNegative(String field, Integer n) {
        if (n == null || n < 0) {
            throw new IllegalArgumentException("Export load input " + field + "=" + n + " is not a whole number.");
        }
        return n;
    }
}
