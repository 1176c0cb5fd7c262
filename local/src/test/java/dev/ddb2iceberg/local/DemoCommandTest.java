package dev.ddb2iceberg.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.embedded.ProjectFiles;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The README's first command, on a small workload: it must end with the table equal to the source. */
class DemoCommandTest {
  @TempDir Path dir;

  private int demo(StringWriter out, StringWriter err, Path workDir) {
    return Main.execute(new PrintWriter(out, true), new PrintWriter(err, true), "demo", "--items", "300",
        "--changes", "3000", "--minutes", "3", "--batch-size", "50", "--work-dir", workDir.toString(),
        "-t", ProjectFiles.root().resolve("template.yaml").toString());
  }

  @Test
  void theDemoRunsTheWholePipelineAndTheTableEqualsTheSourceTable() {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int exit = demo(out, err, dir.resolve("demo"));
    assertEquals(0, exit, out + "\n" + err);
    assertTrue(out.toString().contains("minute  3/3"), out.toString());
    assertTrue(out.toString().contains("maintenance  compacted"), out.toString());
    assertTrue(out.toString().contains("OK: the Iceberg table equals the source table"), out.toString());
  }

  @Test
  void theDemoRefusesToEmptyAFolderItDidNotMake() throws Exception {
    Path precious = dir.resolve("precious");
    Files.createDirectories(precious);
    Files.writeString(precious.resolve("thesis.txt"), "do not delete");
    StringWriter err = new StringWriter();
    assertEquals(2, demo(new StringWriter(), err, precious));
    assertTrue(err.toString().contains("is not empty and was not made by the demo"), err.toString());
    assertTrue(Files.exists(precious.resolve("thesis.txt")));
  }
}
