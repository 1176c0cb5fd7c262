package dev.ddb2iceberg.local;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ddb2iceberg.embedded.LocalContext;
import dev.ddb2iceberg.testkit.InProcessExportLoad;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code load-export s3://…/AWSDynamoDB/<id>/}: loads a DynamoDB export through the Merger function,
 * invoking it with {@code {"loadExport": …}} again and again, as a user would with
 * {@code aws lambda invoke}, until the export is in, printing progress after each invocation.
 * With {@code --parallel N}, runs the export-load state machine's steps instead, in process, with N
 * workers at once (see {@link InProcessExportLoad}), through the ExportLoad function.
 */
@Command(
        name = "load-export",
        mixinStandardHelpOptions = true,
        description = "Load a DynamoDB export (DYNAMODB_JSON) into the table through the Merger function, resumably.")
final class LoadExportCommand implements Callable<Integer> {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Each local invocation gets this long, like a Lambda timeout, so progress shows between them. */
    private static final int INVOCATION_SECONDS = 90;
    /** Workers of a parallel load whose input names none. */
    private static final int DEFAULT_WORKERS = 4;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Parameters(
            index = "0",
            arity = "0..1",
            paramLabel = "EXPORT",
            description = "the export's folder, s3://<bucket>/<prefix>AWSDynamoDB/<ExportId>/")
    String export;

    @Option(
            names = "--input",
            paramLabel = "FILE",
            description = "take the export and options from a JSON input: the Merger's ({\"loadExport\": ...},"
                    + " events/merger-load-export.json) or the export-load state machine's ({\"export\": ...,"
                    + " \"workers\": N}, events/export-load-execution.json, loaded as with --parallel N);"
                    + " options given on the command line win")
    Path inputFile;

    @Option(
            names = "--keys",
            split = ",",
            paramLabel = "PK[,SK]",
            description = "the source table's key attributes; needed only when the Iceberg table does not exist yet")
    List<String> keys;

    @Option(
            names = "--margin-minutes",
            description = "how far before the export time the staged stream must reach (default: 5)")
    Integer marginMinutes;

    @Option(
            names = "--skip-hand-off-check",
            description = "load although no staged stream change shows that the stream covers the export time")
    boolean skipHandOffCheck;

    @Option(
            names = "--parallel",
            paramLabel = "N",
            description = "load a full export with N workers at once, as the export-load state machine does (one commit"
                    + " at the end; merges wait meanwhile), instead of chunk by chunk through the Merger")
    Integer parallel;

    @CommandLine.Mixin
    LocalStackOptions stack;

    @Override
    public Integer call() throws Exception {
        if (inputFile != null) {
            takeFrom(inputFile);
        }
        if (export == null) {
            throw new UserError("give the export's folder, s3://<bucket>/<prefix>AWSDynamoDB/<ExportId>/, or --input"
                    + " FILE (such as events/merger-load-export.json)");
        }
        if (parallel != null) {
            return parallel();
        }
        SamTemplate.Function function = SamTemplate.read(stack.template).function("Merger");
        Map<String, String> env = stack.environment("Merger", spec.commandLine().getErr());
        ObjectNode input = input("loadExport");
        PrintWriter out = spec.commandLine().getOut();
        // What the function prints on its stdout (JSON logs with LOG_FORMAT=json) is not this command's output.
        try (FunctionStreams redirected = FunctionStreams.redirect(
                FunctionStreams.lines(spec.commandLine().getErr()), System.err)) {
            Object handler = LocalInvoker.newHandler(function.handler(), env);
            try {
                return invokeUntilDone(handler, input, out);
            } finally {
                LocalInvoker.close(handler);
            }
        }
    }

    /** Invokes the merger on {@code input} until it says the load is done, printing each invocation's progress. */
    private static int invokeUntilDone(Object handler, ObjectNode input, PrintWriter out) throws IOException {
        for (int invocation = 1; ; invocation++) {
            JsonNode result;
            try {
                result = JSON.readTree(LocalInvoker.invoke(
                        handler, JSON.writeValueAsBytes(input), new LocalContext("Merger", 2048, INVOCATION_SECONDS)));
            } catch (IllegalArgumentException | IllegalStateException refused) {
                throw new UserError(LocalInvoker.rootMessage(refused));
            }
            out.printf(
                    "invocation %d: %,d of %,d items loaded (%d of %d data files); this run skipped %,d as older than"
                            + " the stream%n",
                    invocation,
                    result.path("itemsLoaded").asLong(),
                    result.path("itemsInExport").asLong(),
                    result.path("filesDone").asInt(),
                    result.path("files").asInt(),
                    result.path("skipped").asLong());
            out.flush();
            if (result.path("done").asBoolean()) {
                out.println(result.path("note").asText());
                return 0;
            }
        }
    }

    /**
     * The export and the options the command line leaves unset, from a Merger input ({@code loadExport})
     * or the state machine's ({@code export}, and {@code workers}: a parallel load).
     */
    private void takeFrom(Path file) throws IOException {
        if (!Files.isRegularFile(file)) {
            throw new UserError("input file " + file + " not found");
        }
        JsonNode in;
        try {
            in = JSON.readTree(file.toFile());
        } catch (IOException e) {
            throw new UserError("input file " + file + " is not JSON: " + LocalInvoker.rootMessage(e));
        }
        boolean stateMachine = in.path("export").isTextual();
        if (!stateMachine && !in.path("loadExport").isTextual()) {
            throw new UserError("input file " + file + " names no export: it needs \"loadExport\" (the Merger's"
                    + " input) or \"export\" (the export-load state machine's)");
        }
        if (export == null) {
            export = in.path(stateMachine ? "export" : "loadExport").asText();
        }
        if (keys == null && in.path("keys").isArray()) {
            keys = new ArrayList<>();
            in.path("keys").forEach(k -> keys.add(k.asText()));
        }
        if (marginMinutes == null && in.path("marginMinutes").canConvertToInt()) {
            marginMinutes = in.path("marginMinutes").asInt();
        }
        skipHandOffCheck |= in.path("skipHandOffCheck").asBoolean(false);
        if (stateMachine && parallel == null) {
            parallel = in.path("workers").asInt(DEFAULT_WORKERS);
        }
    }

    /** The function's input: the export's folder under {@code exportField}, and the options given. */
    private ObjectNode input(String exportField) {
        ObjectNode input = JSON.createObjectNode()
                .put(exportField, export)
                .put("marginMinutes", marginMinutes == null ? 5 : marginMinutes)
                .put("skipHandOffCheck", skipHandOffCheck);
        if (keys != null && !keys.isEmpty()) {
            keys.forEach(input.putArray("keys")::add);
        }
        return input;
    }

    /** The state machine's steps, in process, through the ExportLoad function. */
    private int parallel() throws Exception {
        if (parallel < 1) {
            throw new UserError("--parallel " + parallel + ": give the number of workers, 1 or more.");
        }
        SamTemplate.Function function = SamTemplate.read(stack.template).function("ExportLoad");
        Map<String, String> env =
                stack.environment("ExportLoad", spec.commandLine().getErr());
        ObjectNode input = input("export");
        PrintWriter out = spec.commandLine().getOut();
        try (FunctionStreams redirected = FunctionStreams.redirect(
                FunctionStreams.lines(spec.commandLine().getErr()), System.err)) {
            Object handler = LocalInvoker.newHandler(function.handler(), env);
            JsonNode result;
            try {
                result = new InProcessExportLoad(
                                LocalInvoker.steps(handler, "ExportLoad", 4096), LocalInvoker.lines(out))
                        .run(input, parallel);
            } finally {
                LocalInvoker.close(handler);
            }
            out.println(result.path("note").asText());
            return 0;
        } catch (IllegalArgumentException | IllegalStateException refused) {
            throw new UserError(LocalInvoker.rootMessage(refused));
        }
    }
}
