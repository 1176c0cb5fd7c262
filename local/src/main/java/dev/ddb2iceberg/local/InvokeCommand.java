package dev.ddb2iceberg.local;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ddb2iceberg.embedded.LocalContext;
import dev.ddb2iceberg.observe.LogSettings;
import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code invoke <LogicalId> -e event.json [--env-vars env.json]}: like {@code sam local invoke}. */
@Command(
        name = "invoke",
        mixinStandardHelpOptions = true,
        description = "Runs one function of template.yaml on an event file, in this process, like `sam local invoke`."
                + " Only the response goes to stdout; the function's logs and metric lines go to stderr.")
final class InvokeCommand implements Callable<Integer> {
    private static final ObjectMapper JSON = new ObjectMapper();

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Parameters(
            index = "0",
            paramLabel = "LogicalId",
            description = "the function's logical id in the template, e.g. Stager")
    String logicalId;

    @Option(
            names = {"-e", "--event"},
            required = true,
            paramLabel = "FILE",
            description = "JSON event file")
    Path event;

    @Option(
            names = {"-n", "--env-vars"},
            paramLabel = "FILE",
            description = "JSON environment overrides, in sam's shape: {\"Parameters\": {...}, \"<LogicalId>\": {...}};"
                    + " events/env-local.json for `up` with its defaults, DIR/env-vars.json for `up --work-dir DIR`")
    Path envVars;

    @Option(
            names = {"-t", "--template"},
            defaultValue = "template.yaml",
            paramLabel = "FILE",
            description = "the SAM template (default: ${DEFAULT-VALUE})")
    Path template;

    @Option(
            names = "--verbose",
            description = "on an error, show its stack trace too (in the function's log lines as well), not only its"
                    + " message")
    boolean verbose;

    @Override
    public Integer call() throws IOException {
        SamTemplate samTemplate = SamTemplate.read(template);
        SamTemplate.Function function = samTemplate.function(logicalId);
        if (!Files.isRegularFile(event)) {
            throw new UserError("event file " + event + " not found");
        }
        byte[] eventBytes = Files.readAllBytes(event);
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        if (envVars == null) {
            err.println("No --env-vars file: the function gets only the template's plain values and the shell's"
                    + " settings. For the local stack, add -n events/env-local.json (`./ddb2iceberg up` with its"
                    + " defaults), or -n DIR/env-vars.json, the file `up --work-dir DIR` writes.");
        }
        Map<String, String> env = FunctionEnvironment.of(samTemplate, logicalId, envVars, err);
        LocalStackProbe.requireRunning(env, envVars);
        LocalContext context = new LocalContext(logicalId, 1024, 300);
        err.println("START RequestId: " + context.getAwsRequestId() + " Function: " + logicalId + " ("
                + function.handler() + ")");
        long start = System.nanoTime();
        int exit = 0;
        // Everything the function prints (log lines, metric lines on its stdout) goes where this
        // command's errors go, so stdout holds the response alone, as with sam local invoke.
        PrintStream toErr = FunctionStreams.lines(err);
        boolean stackTraces = LogSettings.textStackTraces(verbose);
        try (FunctionStreams redirected = FunctionStreams.redirect(toErr, toErr)) {
            Object handler = LocalInvoker.newHandler(function.handler(), env);
            byte[] response;
            try {
                response = LocalInvoker.invoke(handler, eventBytes, context);
            } finally {
                LocalInvoker.close(handler);
            }
            out.println(new String(response, StandardCharsets.UTF_8));
            ResponseNotes.lag(response, Instant.now()).ifPresent(err::println);
        } catch (UserError e) {
            throw e;
        } catch (Exception e) {
            // What Lambda returns for a function error.
            ObjectNode error = JSON.createObjectNode();
            error.put("errorMessage", e.getMessage());
            error.put("errorType", e.getClass().getName());
            out.println(error);
            if (verbose) {
                e.printStackTrace(err);
            }
            err.println(
                    "Error: " + LocalInvoker.rootMessage(e) + (verbose ? "" : " (--verbose shows the stack trace)"));
            exit = 1;
        } finally {
            LogSettings.textStackTraces(stackTraces);
        }
        err.printf(
                "END RequestId: %s Duration: %.0f ms%n", context.getAwsRequestId(), (System.nanoTime() - start) / 1e6);
        return exit;
    }
}
