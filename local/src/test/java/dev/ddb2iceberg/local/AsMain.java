package dev.ddb2iceberg.local;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;

/**
 * Runs a command line the way {@link Main#main} does, its writers on the process's System.out and
 * System.err, both captured: so anything else printed there (a function's metric line, say) shows
 * in {@link Run#out} or {@link Run#err} just as a user would see it.
 */
final class AsMain {
  record Run(int exit, String out, String err) {}

  private AsMain() {}

  static Run run(String... args) {
    PrintStream realOut = System.out;
    PrintStream realErr = System.err;
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    try {
      PrintWriter outWriter = new PrintWriter(System.out, true);
      PrintWriter errWriter = new PrintWriter(System.err, true);
      int exit = Main.execute(outWriter, errWriter, args);
      outWriter.flush();
      errWriter.flush();
      return new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    } finally {
      System.setOut(realOut);
      System.setErr(realErr);
    }
  }
}
