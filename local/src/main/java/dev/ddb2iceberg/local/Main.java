package dev.ddb2iceberg.local;

import java.io.PrintWriter;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The local runtime: the whole pipeline on a laptop with only Java, no Docker and no AWS account.
 * {@code demo} runs it end to end, {@code invoke} runs one function on an event file the way
 * {@code sam local invoke} does, {@code up} keeps an S3-compatible server and a catalog running,
 * {@code status} and {@code get} show the table and one item of it, {@code fan-out} merges a
 * backlog with many workers, {@code docs} writes the
 * reference pages made from the code.
 */
@Command(
        name = "ddb2iceberg",
        mixinStandardHelpOptions = true,
        version = "ddb2iceberg 0.1.0",
        description = "Runs the DynamoDB-to-Iceberg pipeline locally.",
        subcommands = {
            DemoCommand.class,
            InvokeCommand.class,
            UpCommand.class,
            StatusCommand.class,
            GetCommand.class,
            LoadExportCommand.class,
            FanOutCommand.class,
            DocsCommand.class
        })
public final class Main implements Runnable {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    public static void main(String[] args) {
        System.exit(execute(new PrintWriter(System.out, true), new PrintWriter(System.err, true), args));
    }

    /** Runs a command line; mistakes in the call print one line to {@code err} and exit with 2. */
    static int execute(PrintWriter out, PrintWriter err, String... args) {
        CommandLine cli = new CommandLine(new Main());
        cli.setOut(out);
        cli.setErr(err);
        cli.setExecutionExceptionHandler((e, commandLine, parseResult) -> {
            if (e instanceof UserError) {
                err.println("Error: " + e.getMessage());
                return 2;
            }
            err.println("Error: " + LocalInvoker.rootMessage(e));
            return 1;
        });
        return cli.execute(args);
    }
}
