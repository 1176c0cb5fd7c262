package dev.ddb2iceberg.local;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.Setting;
import dev.ddb2iceberg.config.Settings;
import dev.ddb2iceberg.embedded.LocalContext;
import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
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
            description = "JSON environment overrides, in sam's shape: {\"Parameters\": {...}, \"<LogicalId>\": {...}}")
    Path envVars;

    @Option(
            names = {"-t", "--template"},
            defaultValue = "template.yaml",
            paramLabel = "FILE",
            description = "the SAM template (default: ${DEFAULT-VALUE})")
    Path template;

    @Override
    public Integer call() throws IOException {
        SamTemplate.Function function = SamTemplate.read(template).function(logicalId);
        if (!Files.isRegularFile(event)) {
            throw new UserError("event file " + event + " not found");
        }
        byte[] eventBytes = Files.readAllBytes(event);
        Map<String, String> env = environment(function, envVars);
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        LocalContext context = new LocalContext(logicalId, 1024, 300);
        err.println("START RequestId: " + context.getAwsRequestId() + " Function: " + logicalId + " ("
                + function.handler() + ")");
        long start = System.nanoTime();
        int exit = 0;
        // Everything the function prints (log lines, metric lines on its stdout) goes where this
        // command's errors go, so stdout holds the response alone, as with sam local invoke.
        PrintStream toErr = FunctionStreams.lines(err);
        try (FunctionStreams redirected = FunctionStreams.redirect(toErr, toErr)) {
            Object handler = LocalInvoker.newHandler(function.handler(), env);
            byte[] response;
            try {
                response = LocalInvoker.invoke(handler, eventBytes, context);
            } finally {
                LocalInvoker.close(handler);
            }
            out.println(new String(response, StandardCharsets.UTF_8));
        } catch (UserError e) {
            throw e;
        } catch (Exception e) {
            // What Lambda returns for a function error.
            ObjectNode error = JSON.createObjectNode();
            error.put("errorMessage", e.getMessage());
            error.put("errorType", e.getClass().getName());
            out.println(error);
            err.println("Error: " + LocalInvoker.rootMessage(e));
            exit = 1;
        }
        err.printf(
                "END RequestId: %s Duration: %.0f ms%n", context.getAwsRequestId(), (System.nanoTime() - start) / 1e6);
        return exit;
    }

    /** Host's region and credentials, then the template's variables, then the env-vars file (may be null). */
    static Map<String, String> environment(SamTemplate.Function function, Path envVars) {
        Map<String, String> env = new LinkedHashMap<>();
        Environment host = Environment.system();
        String region = host.raw(Settings.AWS_REGION);
        env.put(Settings.AWS_REGION.name(), region == null ? Settings.AWS_REGION.defaultValue() : region);
        for (Setting s :
                List.of(Settings.AWS_ACCESS_KEY_ID, Settings.AWS_SECRET_ACCESS_KEY, Settings.AWS_SESSION_TOKEN)) {
            if (host.raw(s) != null) {
                env.put(s.name(), host.raw(s));
            }
        }
        env.putAll(function.environment());
        if (envVars != null) {
            if (!Files.isRegularFile(envVars)) {
                throw new UserError("env-vars file " + envVars + " not found");
            }
            JsonNode root;
            try {
                root = JSON.readTree(envVars.toFile());
            } catch (IOException e) {
                throw new UserError("env-vars file " + envVars + " is not JSON: " + e.getMessage());
            }
            addAll(env, root.path("Parameters"));
            addAll(env, root.path(function.logicalId()));
        }
        return env;
    }

    private static void addAll(Map<String, String> env, JsonNode vars) {
        for (Iterator<Map.Entry<String, JsonNode>> it = vars.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            env.put(e.getKey(), e.getValue().asText());
        }
    }
}
