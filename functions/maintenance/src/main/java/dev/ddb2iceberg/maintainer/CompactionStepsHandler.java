package dev.ddb2iceberg.maintainer;

import com.amazonaws.services.lambda.runtime.Context;
import com.amazonaws.services.lambda.runtime.RequestStreamHandler;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.function.CompactionSteps;
import dev.ddb2iceberg.function.FunctionCall;
import dev.ddb2iceberg.function.FunctionInput;
import dev.ddb2iceberg.function.MaintenanceSettings;
import dev.ddb2iceberg.function.OwnedClients;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.time.Clock;
import org.apache.iceberg.catalog.Catalog;

/**
 * Lambda entry point of compaction's fan-out steps, in the maintenance jar (the same code and
 * settings), run by the template's compaction state machine ({@code statemachine/compaction.asl.json}).
 * Its input, a {@link CompactionSteps.Input}, says which step ({@link CompactionSteps} lists them).
 * A separate function from Maintenance, which runs one at a time, so that its workers run side by side.
 */
public final class CompactionStepsHandler implements RequestStreamHandler, AutoCloseable {
    private final CompactionSteps steps;
    private final OwnedClients owned;

    /** Used by Lambda: settings are read and checked, and the catalog built, once at cold start. */
    public CompactionStepsHandler() {
        this(Environment.system());
    }

    /** Used by the local runtime, which passes the environment a Lambda would have. */
    public CompactionStepsHandler(Environment env) {
        this(MaintenanceSettings.from(env), new OwnedClients());
    }

    private CompactionStepsHandler(MaintenanceSettings settings, OwnedClients owned) {
        this(settings, owned.own(settings.catalog().load()), owned);
    }

    /** A handler on the caller's catalog, which stays the caller's to close. */
    public CompactionStepsHandler(MaintenanceSettings settings, Catalog catalog) {
        this(settings, catalog, new OwnedClients());
    }

    private CompactionStepsHandler(MaintenanceSettings settings, Catalog catalog, OwnedClients owned) {
        this.owned = owned;
        this.steps = new CompactionSteps(settings.pipeline(), settings.options(), catalog, Clock.systemUTC());
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
                bytes -> steps.run(FunctionInput.read(bytes, "compaction", CompactionSteps.Input.class)));
    }
}
