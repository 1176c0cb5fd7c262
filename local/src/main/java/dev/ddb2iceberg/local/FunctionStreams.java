package dev.ddb2iceberg.local;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;

/**
 * Points System.out and System.err elsewhere while function code runs in this process, and back
 * when closed. In Lambda a function's standard output is its log, where CloudWatch finds the metric
 * lines; here it must not mix with the command's own output. The command's writers were made from
 * the original streams in {@link Main#main}, so they are unaffected.
 */
final class FunctionStreams implements AutoCloseable {
    private final PrintStream previousOut = System.out;
    private final PrintStream previousErr = System.err;

    private FunctionStreams(PrintStream out, PrintStream err) {
        System.setOut(out);
        System.setErr(err);
    }

    /** Until closed, what functions print on standard output goes to {@code out}, standard error to {@code err}. */
    static FunctionStreams redirect(PrintStream out, PrintStream err) {
        return new FunctionStreams(out, err);
    }

    /** A stream that hands whole lines to {@code target}. */
    static PrintStream lines(PrintWriter target) {
        return new PrintStream(new LineForwarder(target), true, StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
        System.out.flush();
        System.err.flush();
        System.setOut(previousOut);
        System.setErr(previousErr);
    }

    /** Bytes to a writer, a line at a time (so multi-byte characters are decoded whole). */
    private static final class LineForwarder extends OutputStream {
        private final PrintWriter target;
        private final ByteArrayOutputStream line = new ByteArrayOutputStream();

        LineForwarder(PrintWriter target) {
            this.target = target;
        }

        @Override
        public synchronized void write(int b) {
            line.write(b);
            if (b == '\n') {
                flush();
            }
        }

        @Override
        public synchronized void flush() {
            if (line.size() > 0) {
                target.print(line.toString(StandardCharsets.UTF_8));
                target.flush();
                line.reset();
            }
        }
    }
}
