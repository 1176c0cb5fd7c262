package dev.ddb2iceberg.local;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.function.MaintenanceSettings;
import dev.ddb2iceberg.maintainer.MaintenanceHandler;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.status.TableStatus;
import dev.ddb2iceberg.table.TableCreator;
import java.io.Closeable;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.time.Clock;
import java.util.concurrent.Callable;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code status [--json]}: the table at a glance, with the Maintenance function's settings from the
 * template and an env-vars file (by default the local stack {@code up} runs). The same report the
 * Maintenance function returns for the input {@code {"status": true}}.
 */
@Command(
        name = "status",
        mixinStandardHelpOptions = true,
        description =
                "Show the table at a glance: current snapshot, what waits in staging, files and delete files, last compaction.")
final class StatusCommand implements Callable<Integer> {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @CommandLine.Mixin
    LocalStackOptions stack;

    @Option(names = "--json", description = "print the report as JSON")
    boolean json;

    @Override
    public Integer call() throws Exception {
        PrintWriter err = spec.commandLine().getErr();
        MaintenanceSettings settings = MaintenanceSettings.from(new Environment(stack.environment("Maintenance", err)));
        // The merger's own settings say whether merges wait for the initial load (INITIAL_LOAD is the Merger's).
        MergeOptions merger = MergeOptions.from(new Environment(FunctionEnvironment.of(
                SamTemplate.read(stack.template), "Merger", stack.envVars, new PrintWriter(Writer.nullWriter()))));
        TableStatus status = stack.reach(() -> {
            Catalog catalog = settings.catalog().load();
            try {
                Table table = TableCreator.loadIfExists(
                        catalog,
                        TableIdentifier.of(
                                settings.table().namespace(), settings.table().name()));
                return MaintenanceHandler.status(settings, catalog, table, Clock.systemUTC())
                        .withMergesHeld(Merger.waitingForInitialLoad(merger, table));
            } finally {
                if (catalog instanceof Closeable c) {
                    try {
                        c.close();
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                }
            }
        });
        spec.commandLine()
                .getOut()
                .print(
                        json
                                ? new ObjectMapper()
                                                .enable(SerializationFeature.INDENT_OUTPUT)
                                                .writeValueAsString(status)
                                        + "\n"
                                : status.text());
        spec.commandLine().getOut().flush();
        return 0;
    }
}
