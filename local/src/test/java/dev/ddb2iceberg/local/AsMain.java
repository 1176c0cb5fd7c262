package dev.ddb2iceberg.local;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;

/**
 * Runs a command line the way {@link Main#main} does, its output writer on the process's
 * System.out, which is captured: so anything else printed there (a function's metric line, say)
 * shows in {@link Run#out} just as a user would see it on stdout. {@link Run#err} is what the
 * command wrote to its error writer (the process's stderr also carries log lines of other tests).
 */
final class AsMain {
    record Run(int exit, String out, String err) {}

    private AsMain() {}

    static Run run(String... args) {
        PrintStream realOut = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        StringWriter err = new StringWriter();
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        try {
            PrintWriter outWriter = new PrintWriter(System.out, true);
            int exit = Main.execute(outWriter, new PrintWriter(err, true), args);
            outWriter.flush();
            return new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString());
        } finally {
            System.setOut(realOut);
        }
    }
}
