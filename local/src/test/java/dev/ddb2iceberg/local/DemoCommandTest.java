package dev.ddb2iceberg.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.MetricLines;
import dev.ddb2iceberg.embedded.ProjectFiles;
import dev.ddb2iceberg.local.AsMain.Run;
import dev.ddb2iceberg.testkit.LocalStack;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The README's first command, on a small workload: it must end with the table equal to the source. */
class DemoCommandTest {
    private static final String TABLE = "ddb2iceberg.demo_orders";

    @TempDir
    Path dir;

    private static Run demo(Path workDir, String... more) {
        List<String> args = new ArrayList<>(List.of(
                "demo",
                "--batch-size",
                "50",
                "--work-dir",
                workDir.toString(),
                "-t",
                ProjectFiles.root().resolve("template.yaml").toString()));
        args.addAll(List.of(more));
        return AsMain.run(args.toArray(String[]::new));
    }

    @Test
    void theDemoRunsTheWholePipelineAndTheTableEqualsTheSourceTable() throws Exception {
        Path workDir = dir.resolve("demo");
        Run r = demo(workDir, "--items", "300", "--changes", "3000", "--minutes", "3");
        assertEquals(0, r.exit(), r.out() + "\n" + r.err());
        assertTrue(r.out().contains("minute  3/3"), r.out());
        assertTrue(
                r.out()
                        .matches("(?s).*merged +1,000 changes: [0-9,]+ items written \\([0-9,]+ replaced a row\\),"
                                + " [0-9,]+ items removed.*"),
                r.out());
        assertTrue(r.out().contains("maintenance  compacted"), r.out());
        assertTrue(r.out().contains("OK: the Iceberg table equals the source table"), r.out());

        // The terminal keeps to the story; metric lines go to a file, which the output names.
        assertFalse(r.out().contains("\"_aws\""), "no metric line on stdout: " + r.out());
        assertFalse(r.err().contains("\"_aws\""), "no metric line on stderr: " + r.err());
        Path metricsLog = workDir.resolve("metrics.log");
        assertTrue(r.out().contains("Metric lines (CloudWatch EMF) go to " + metricsLog), r.out());
        List<JsonNode> mergerLines = mergerLines(Files.readAllLines(metricsLog));
        assertEquals(3, mergerLines.size(), "one merger line per simulated minute in " + metricsLog);

        // Its last lines say how to look at the table afterwards; they work on the folder it left.
        String up = "./ddb2iceberg up --work-dir " + workDir + " --port 9322 --bucket demo --table demo_orders";
        assertTrue(r.out().contains("To look at the table: " + up), r.out());
        Path envVars = workDir.resolve("env-vars.json");
        String get = r.out()
                .lines()
                .filter(l -> l.startsWith("  ./ddb2iceberg get "))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no get line in: " + r.out()));
        assertTrue(get.endsWith(" -n " + envVars), get);
        String[] key = get.substring("  ./ddb2iceberg get ".length(), get.indexOf(" -n "))
                .split(" ");
        // What up does for that folder (on a free port here): serve it, write its env-vars file.
        try (EmbeddedS3Server server = EmbeddedS3Server.onDisk(workDir.resolve("s3"))) {
            new ObjectMapper()
                    .writeValue(
                            envVars.toFile(),
                            Map.of("Parameters", new LocalStack(server, "demo", workDir).environment("demo_orders")));
            String template = ProjectFiles.root().resolve("template.yaml").toString();
            Run status = AsMain.run("status", "-n", envVars.toString(), "-t", template);
            assertEquals(0, status.exit(), status.err());
            assertTrue(status.out().startsWith("table        ddb2iceberg.demo_orders\n"), status.out());
            Run item = AsMain.run("get", key[0], key[1], "-n", envVars.toString(), "-t", template);
            assertEquals(0, item.exit(), item.err());
            assertTrue(item.out().contains("\"S\": \"" + key[0] + "\""), item.out());
        }
    }

    @Test
    void withVerboseTheMetricLinesGoToStderr() {
        Path workDir = dir.resolve("demo");
        Run r = demo(workDir, "--items", "50", "--changes", "200", "--minutes", "2", "--verbose");
        assertEquals(0, r.exit(), r.out() + "\n" + r.err());
        assertFalse(r.out().contains("\"_aws\""), "no metric line on stdout: " + r.out());
        assertEquals(
                2, mergerLines(r.err().lines().toList()).size(), "one merger line per minute on stderr: " + r.err());
        assertFalse(Files.exists(workDir.resolve("metrics.log")), "no metrics.log with --verbose");
    }

    /** The merger's metric lines among {@code lines}, each checked to be a well-formed line for the demo's table. */
    private static List<JsonNode> mergerLines(List<String> lines) {
        return lines.stream()
                .filter(l -> l.startsWith("{\"_aws\"") && l.contains("\"ChangesMerged\""))
                .map(l -> MetricLines.single(List.of(l), TABLE))
                .toList();
    }

    @Test
    void theDemoRefusesToEmptyAFolderItDidNotMake() throws Exception {
        Path precious = dir.resolve("precious");
        Files.createDirectories(precious);
        Files.writeString(precious.resolve("thesis.txt"), "do not delete");
        Run r = demo(precious);
        assertEquals(2, r.exit());
        assertTrue(r.err().contains("is not empty and was not made by the demo"), r.err());
        assertTrue(Files.exists(precious.resolve("thesis.txt")));
    }
}
