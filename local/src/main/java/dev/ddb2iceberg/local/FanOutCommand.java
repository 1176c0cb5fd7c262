package dev.ddb2iceberg.local;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ddb2iceberg.testkit.InProcessMergeFanOut;
import java.io.PrintWriter;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code fan-out --workers N}: merges what is staged as the merge fan-out state machine does, its
 * steps run in process with N workers at once (see {@link InProcessMergeFanOut}) through the
 * MergeFanOut function of the template, with its settings and an env-vars file. With the template's
 * MERGE_FAN_OUT_MIN_BACKLOG_BYTES a small local backlog is left to the Merger; {@code --any-backlog}
 * fans out whatever is staged.
 */
@Command(
        name = "fan-out",
        mixinStandardHelpOptions = true,
        description =
                "Merge the staged backlog with N workers and one commit, as the merge fan-out state machine does.")
final class FanOutCommand implements Callable<Integer> {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Option(
            names = "--workers",
            paramLabel = "N",
            defaultValue = "4",
            description = "key ranges, and workers at once (default: ${DEFAULT-VALUE})")
    int workers;

    @Option(
            names = "--any-backlog",
            description = "fan out whatever is staged, not only a backlog of MERGE_FAN_OUT_MIN_BACKLOG_BYTES or more")
    boolean anyBacklog;

    @CommandLine.Mixin
    LocalStackOptions stack;

    @Override
    public Integer call() throws Exception {
        if (workers < 1) {
            throw new UserError("--workers " + workers + ": give the number of workers, 1 or more.");
        }
        SamTemplate.Function function = SamTemplate.read(stack.template).function("MergeFanOut");
        Map<String, String> env =
                stack.environment("MergeFanOut", spec.commandLine().getErr());
        if (anyBacklog) {
            env.put("MERGE_FAN_OUT_MIN_BACKLOG_BYTES", "0");
        }
        PrintWriter out = spec.commandLine().getOut();
        try (FunctionStreams redirected = FunctionStreams.redirect(
                FunctionStreams.lines(spec.commandLine().getErr()), System.err)) {
            Object handler = LocalInvoker.newHandler(function.handler(), env);
            try {
                JsonNode last = new InProcessMergeFanOut(
                                LocalInvoker.steps(handler, "MergeFanOut", 4096), LocalInvoker.lines(out))
                        .run(workers, "local-" + UUID.randomUUID());
                return last.path("snapshotId").isNumber()
                                || last.path("mergeId").isNull()
                        ? 0
                        : 1;
            } finally {
                LocalInvoker.close(handler);
            }
        } catch (IllegalArgumentException | IllegalStateException refused) {
            throw new UserError(LocalInvoker.rootMessage(refused));
        }
    }
}
