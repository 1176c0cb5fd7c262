package dev.ddb2iceberg.local;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.function.MaintenanceSettings;
import dev.ddb2iceberg.maintainer.MaintenanceHandler;
import dev.ddb2iceberg.status.TableStatus;
import dev.ddb2iceberg.table.TableCreator;
import java.io.Closeable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Clock;
import java.util.concurrent.Callable;
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
        MaintenanceSettings settings =
                MaintenanceSettings.from(new Environment(stack.environment("Maintenance", spec.commandLine().getErr())));
        TableStatus status = stack.reach(() -> {
            Catalog catalog = settings.catalog().load();
            try {
                return MaintenanceHandler.status(
                        settings,
                        catalog,
                        TableCreator.loadIfExists(
                                catalog,
                                TableIdentifier.of(
                                        settings.table().namespace(),
                                        settings.table().name())),
                        Clock.systemUTC());
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
