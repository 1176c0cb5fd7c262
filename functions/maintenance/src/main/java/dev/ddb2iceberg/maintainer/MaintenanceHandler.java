package dev.ddb2iceberg.maintainer;

import com.amazonaws.services.lambda.runtime.Context;
import com.amazonaws.services.lambda.runtime.RequestStreamHandler;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.function.FunctionCall;
import dev.ddb2iceberg.function.FunctionInput;
import dev.ddb2iceberg.function.MaintenanceRun;
import dev.ddb2iceberg.function.MaintenanceSettings;
import dev.ddb2iceberg.function.OwnedClients;
import dev.ddb2iceberg.maintenance.MaintenanceResult;
import dev.ddb2iceberg.maintenance.MaintenanceTask;
import dev.ddb2iceberg.observe.JvmSettings;
import dev.ddb2iceberg.status.TableStatus;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.time.Clock;
import java.util.EnumSet;
import java.util.Set;
import java.util.function.Consumer;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Lambda entry point, run by an EventBridge schedule (hourly by default). Input, all optional, as a
 * schedule rule's {@code detail} or EventBridge Scheduler's plain input (a {@link MaintenanceInput}):
 * {@code {"tasks": ["compact", "manifests", "expire", "orphans", "catalog-versions"], "dryRun": false}}, or
 * {@code {"status": true}} for a report only. Returns the run's {@link MaintenanceResult} as JSON,
 * with its change history's under {@code history}. The work is {@link MaintenanceRun}'s.
 */
public final class MaintenanceHandler implements RequestStreamHandler, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(MaintenanceHandler.class);

    private final MaintenanceRun run;
    private final OwnedClients owned;

    /** Used by Lambda: settings are read and checked, and the catalog built, once at cold start. */
    public MaintenanceHandler() {
        this(Environment.system());
        JvmSettings.logInBackground(LOG);
    }

    /** Used by the local runtime, which passes the environment a Lambda would have. */
    public MaintenanceHandler(Environment env) {
        this(MaintenanceSettings.from(env), Clock.systemUTC());
    }

    public MaintenanceHandler(MaintenanceSettings settings, Clock clock) {
        this(settings, clock, new OwnedClients());
    }

    private MaintenanceHandler(MaintenanceSettings settings, Clock clock, OwnedClients owned) {
        this(settings, owned.own(settings.catalog().load()), clock, owned);
    }

    /** A handler on the caller's catalog, which stays the caller's to close. */
    public MaintenanceHandler(MaintenanceSettings settings, Catalog catalog, Clock clock) {
        this(settings, catalog, clock, new OwnedClients());
    }

    private MaintenanceHandler(MaintenanceSettings settings, Catalog catalog, Clock clock, OwnedClients owned) {
        this.owned = owned;
        this.run = new MaintenanceRun(settings.pipeline(), settings.options(), catalog, clock, LOG)
                .catalogVersions(owned.own(settings.glueTableVersions()));
    }

    /** Where metric lines go: standard output in Lambda (CloudWatch reads them from the log). */
    MaintenanceHandler metricsTo(Consumer<String> out) {
        run.metricsTo(out);
        return this;
    }

    /** What the input asks for. */
    record Request(Set<MaintenanceTask> tasks, boolean dryRun, boolean status) {
        Request(Set<MaintenanceTask> tasks, boolean dryRun) {
            this(tasks, dryRun, false);
        }
    }

    /** Closes the catalog this handler built (Lambda never does; the local runtime does). */
    @Override
    public void close() throws Exception {
        owned.close();
    }

    @Override
    public void handleRequest(InputStream input, OutputStream output, Context context) throws IOException {
        FunctionCall.run(
                input,
                output,
                context,
                LOG,
                "Maintenance run failed; the table is as its last commit left it",
                bytes -> {
                    Request request = request(bytes);
                    return request.status() ? run.status() : run.run(request.tasks(), request.dryRun());
                });
    }

    static Request request(byte[] bytes) {
        MaintenanceInput in = FunctionInput.read(bytes, "maintenance", MaintenanceInput.class);
        Set<MaintenanceTask> tasks = EnumSet.allOf(MaintenanceTask.class);
        if (in.tasks() != null) {
            if (in.tasks().isEmpty()) {
                throw new IllegalArgumentException(
                        "Maintenance input \"tasks\" must be a non-empty list such as" + " [\"compact\", \"expire\"].");
            }
            tasks = EnumSet.noneOf(MaintenanceTask.class);
            for (String t : in.tasks()) {
                tasks.add(MaintenanceTask.fromInput(t));
            }
        }
        return new Request(tasks, Boolean.TRUE.equals(in.dryRun()), Boolean.TRUE.equals(in.status()));
    }

    /**
     * The status report of the table (null if not created yet), its staging prefix, and its change
     * history when HISTORY_TABLE names one.
     */
    public static TableStatus status(MaintenanceSettings settings, Catalog catalog, Table table, Clock clock) {
        return MaintenanceRun.status(settings.pipeline(), settings.options(), catalog, table, clock);
    }
}
