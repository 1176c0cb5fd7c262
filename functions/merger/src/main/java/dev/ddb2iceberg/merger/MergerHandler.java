package dev.ddb2iceberg.merger;

import com.amazonaws.services.lambda.runtime.Context;
import com.amazonaws.services.lambda.runtime.RequestStreamHandler;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.function.FunctionCall;
import dev.ddb2iceberg.function.FunctionInput;
import dev.ddb2iceberg.function.MergeRun;
import dev.ddb2iceberg.function.MergerSettings;
import dev.ddb2iceberg.function.OwnedClients;
import dev.ddb2iceberg.load.ExportLoadResult;
import dev.ddb2iceberg.merge.ContinuousMerge;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.merge.MergeResult;
import dev.ddb2iceberg.observe.JvmSettings;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.time.Clock;
import java.util.function.Consumer;
import org.apache.iceberg.catalog.Catalog;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Lambda entry point, run by an EventBridge schedule. Accepts a schedule rule's
 * {@code ScheduledEvent} (whose {@code detail} is the input), the plain JSON input that EventBridge
 * Scheduler delivers, or nothing: a {@link MergerInput}. Returns the run's {@link MergeResult} as
 * JSON (continuous mode: a {@link MergeRun.ContinuousResult}). With {@code loadExport} it loads a
 * DynamoDB export instead and returns an {@link ExportLoadResult}. The work is {@link MergeRun}'s.
 */
public final class MergerHandler implements RequestStreamHandler, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(MergerHandler.class);
    private final MergerSettings settings;
    private final MergeRun run;
    private final OwnedClients owned;

    /** Used by Lambda: settings are read and checked, and clients built, once at cold start. */
    public MergerHandler() {
        this(MergerSettings.from(Environment.system()));
        JvmSettings.logInBackground(LOG);
    }

    /** Used by the local runtime, which passes the environment a Lambda would have. */
    public MergerHandler(Environment env) {
        this(MergerSettings.from(env));
    }

    public MergerHandler(MergerSettings settings) {
        this(settings, new OwnedClients());
    }

    private MergerHandler(MergerSettings settings, OwnedClients owned) {
        this(
                settings,
                owned.own(settings.catalog().load()),
                owned.own(settings.s3().newClient()),
                owned);
    }

    /** A handler on the caller's catalog and client, which stay the caller's to close. */
    public MergerHandler(MergerSettings settings, Catalog catalog, S3Client s3) {
        this(settings, catalog, s3, new OwnedClients());
    }

    private MergerHandler(MergerSettings settings, Catalog catalog, S3Client s3, OwnedClients owned) {
        this.settings = settings;
        this.owned = owned;
        this.run = new MergeRun(catalog, settings.table(), settings.staging(), s3, settings.continuous(), LOG);
    }

    /** Closes the catalog and client this handler built (Lambda never does; the local runtime does). */
    @Override
    public void close() throws Exception {
        owned.close();
    }

    @Override
    public void handleRequest(InputStream input, OutputStream output, Context context) throws IOException {
        FunctionCall.run(input, output, context, bytes -> {
            MergerInput in = FunctionInput.read(bytes, "merger", MergerInput.class);
            MergeOptions options = MergeRun.options(settings.options(), in.maxChanges());
            if (in.loadExport() != null) {
                return run.loadExport(
                        MergeRun.exportRequest(
                                "Merger input loadExport",
                                in.loadExport(),
                                in.keys(),
                                in.marginMinutes(),
                                in.skipHandOffCheck()),
                        options,
                        context);
            }
            return run.scheduled(options, in.scheduledTime(), context, in.maxChanges() != null);
        });
    }

    /** Testing hook: the clock and the wait continuous mode uses (the system clock and a sleep otherwise). */
    MergerHandler timing(Clock clock, ContinuousMerge.Pause pause) {
        run.timing(clock, pause);
        return this;
    }

    /** Where metric lines go: standard output in Lambda (CloudWatch reads them from the log). */
    MergerHandler metricsTo(Consumer<String> out) {
        run.metricsTo(out);
        return this;
    }
}
