package dev.ddb2iceberg.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.ProjectFiles;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.local.AsMain.Run;
import dev.ddb2iceberg.testkit.LocalStack;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a user sees when a step is missing or a setting is wrong: the local stack not started, a
 * misspelled setting, a setting in the shell, a stream without new images. One clear line each,
 * a non-zero exit code, no stack trace unless asked for.
 */
@ExtendWith(S3ServerExtension.class)
class LocalErrorsTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Path TEMPLATE = ProjectFiles.root().resolve("template.yaml");

    @TempDir
    Path dir;

    private Map<String, String> env;

    @BeforeEach
    void setUp(EmbeddedS3Server server) {
        env = new LinkedHashMap<>(
                new LocalStack(server, S3ServerExtension.newBucket(server), dir).environment("orders"));
    }

    private Path envFile(Object content) throws Exception {
        Path file = dir.resolve("env-" + System.nanoTime() + ".json");
        JSON.writeValue(file.toFile(), content);
        return file;
    }

    private static Run run(String... args) {
        List<String> all = new ArrayList<>(List.of(args));
        all.addAll(List.of("-t", TEMPLATE.toString()));
        return AsMain.run(all.toArray(String[]::new));
    }

    private static String event(String name) {
        return ProjectFiles.event(name).toString();
    }

    /** The settings of a stack whose server is not running: nothing listens on its port. */
    private int stopStack() throws Exception {
        int closedPort;
        try (ServerSocket socket = new ServerSocket(0)) {
            closedPort = socket.getLocalPort(); // free again once closed
        }
        env.put("S3_ENDPOINT", "http://127.0.0.1:" + closedPort);
        env.put("CATALOG_URI", "jdbc:sqlite:" + Path.of("").toAbsolutePath().resolve(".local/demo/catalog.db"));
        env.put("STAGING_BUCKET", "demo");
        env.put("TABLE_NAME", "demo_orders");
        return closedPort;
    }

    @Test
    void withTheStackDownEveryCommandSaysWhichUpCommandStartsItAndExitsWith2() throws Exception {
        int port = stopStack();
        Path file = envFile(Map.of("Parameters", env));
        String expected = "Error: nothing answers at http://127.0.0.1:" + port + " (Connection refused), the"
                + " S3_ENDPOINT of " + file + ": the local stack is not running. Start it first, in another terminal:"
                + " ./ddb2iceberg up --work-dir .local/demo --port " + port + " --bucket demo --table demo_orders";
        for (List<String> command : List.of(
                List.of("invoke", "Stager", "-e", event("stager-batch.json")),
                List.of("invoke", "Merger", "-e", event("merger-schedule.json")),
                List.of("status"),
                List.of("get", "C-1001", "42"),
                List.of("load-export", "--input", event("merger-load-export.json")),
                List.of("fan-out"))) {
            List<String> args = new ArrayList<>(command);
            args.addAll(List.of("-n", file.toString()));
            Run r = run(args.toArray(String[]::new));
            assertEquals(2, r.exit(), command + ": " + r.err());
            assertEquals(expected, r.err().strip(), command + " prints one line and nothing else");
            assertEquals("", r.out(), command + " prints nothing on stdout");
        }
    }

    @Test
    void aMisspelledSettingInTheEnvVarsFileIsRefusedWithTheNearestSettingsName() throws Exception {
        env.put("MAX_CHANGE_PER_RUN", "500");
        Path file = envFile(Map.of("Parameters", env));
        Run r = run("invoke", "Merger", "-e", event("merger-schedule.json"), "-n", file.toString());
        assertEquals(2, r.exit(), r.err());
        assertEquals(
                "Error: " + file + ": MAX_CHANGE_PER_RUN is not a setting of the pipeline, so no function would read"
                        + " it; did you mean MAX_CHANGES_PER_RUN? Every setting: docs/reference/configuration.md",
                r.err().strip());
    }

    @Test
    void aMisspelledSettingInAFunctionsSectionIsRefusedToo() throws Exception {
        Path file = envFile(Map.of("Parameters", env, "Merger", Map.of("merge_mode", "continuous")));
        Run r = run("status", "-n", file.toString());
        assertEquals(2, r.exit(), r.err());
        assertEquals(
                "Error: " + file + ": merge_mode (in \"Merger\") is not a setting of the pipeline, so no function"
                        + " would read it; did you mean MERGE_MODE? Every setting: docs/reference/configuration.md",
                r.err().strip(),
                "names are case-sensitive, as in Lambda");
    }

    @Test
    void aSettingAboveParametersOrAMisspelledFunctionIsRefusedSayingWhereItGoes() throws Exception {
        Map<String, Object> content = new LinkedHashMap<>(Map.of("Parameters", env));
        content.put("TABLE_NAME", "orders");
        Path flat = envFile(content);
        Run r = run("invoke", "Stager", "-e", event("stager-batch.json"), "-n", flat.toString());
        assertEquals(2, r.exit(), r.err());
        assertEquals(
                "Error: " + flat + ": TABLE_NAME is at the top level, where sam reads only \"Parameters\" and"
                        + " function names; put it inside \"Parameters\": {\"TABLE_NAME\": ...}",
                r.err().strip());

        Path typo = envFile(Map.of("Parameters", env, "Mergr", Map.of("MAX_CHANGES_PER_RUN", "5")));
        Run t = run("invoke", "Stager", "-e", event("stager-batch.json"), "-n", typo.toString());
        assertEquals(2, t.exit(), t.err());
        assertEquals(
                "Error: " + typo + ": \"Mergr\" is neither \"Parameters\" nor a function of the template [Stager,"
                        + " Merger, ExportLoad, MergeFanOut, Maintenance, CompactionWorker]; did you mean Merger?",
                t.err().strip());
    }

    @Test
    void aSettingInTheShellIsUsedAndNamedAndTheEnvVarsFileWinsOverIt() throws Exception {
        Path file = envFile(Map.of("Parameters", env));
        StringWriter err = new StringWriter();
        Map<String, String> shell = Map.of(
                "MAX_CHANGES_PER_RUN", "500", "TABLE_NAME", "from_shell", "AWS_REGION", "eu-west-1", "PATH", "/bin");
        Map<String, String> got =
                FunctionEnvironment.of(SamTemplate.read(TEMPLATE), "Merger", file, shell, new PrintWriter(err, true));
        assertEquals("500", got.get("MAX_CHANGES_PER_RUN"), "the shell's setting is used");
        assertEquals("orders", got.get("TABLE_NAME"), "the env-vars file wins over the shell");
        assertEquals("us-east-1", got.get("AWS_REGION"), "the file's region, as it sets one");
        assertFalse(got.containsKey("PATH"), "only the catalogue's settings are taken from the shell");
        assertEquals(
                "Settings from the shell's environment: MAX_CHANGES_PER_RUN (an env-vars file's values win over the"
                        + " shell's; the template's lose to both)",
                err.toString().strip());
    }

    @Test
    void invokeWithoutAnEnvVarsFileSaysWhichFileIsTheUsualChoice() {
        Run r = run("invoke", "Stager", "-e", event("stager-batch.json"));
        assertTrue(
                r.err()
                        .startsWith("No --env-vars file: the function gets only the template's plain values and the"
                                + " shell's settings. For the local stack, add -n events/env-local.json"),
                r.err());
    }

    @Test
    void aKeysOnlyStreamIsOneLineWithoutAStackTraceUnlessVerbose() throws Exception {
        Path keysOnly = dir.resolve("keys-only.json");
        Files.writeString(
                keysOnly,
                Files.readString(ProjectFiles.event("stager-batch.json")).replace("NEW_AND_OLD_IMAGES", "KEYS_ONLY"));
        Path file = envFile(Map.of("Parameters", env));
        Run r = run("invoke", "Stager", "-e", keysOnly.toString(), "-n", file.toString());
        assertEquals(1, r.exit(), r.err());
        assertTrue(
                r.err()
                        .contains("Error: The DynamoDB stream has StreamViewType KEYS_ONLY, which carries no new item"
                                + " image."),
                r.err());
        assertFalse(r.err().lines().anyMatch(l -> l.strip().startsWith("at ")), "no stack trace: " + r.err());

        Run verbose = run("invoke", "Stager", "-e", keysOnly.toString(), "-n", file.toString(), "--verbose");
        assertEquals(1, verbose.exit(), verbose.err());
        assertTrue(
                verbose.err().lines().anyMatch(l -> l.strip().startsWith("at dev.ddb2iceberg.")),
                "--verbose shows the trace: " + verbose.err());
    }
}
