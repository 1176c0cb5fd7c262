package dev.ddb2iceberg.merger;

import com.amazonaws.services.lambda.runtime.Context;
import com.amazonaws.services.lambda.runtime.RequestStreamHandler;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.Settings;
import dev.ddb2iceberg.function.ExportLoadSteps;
import dev.ddb2iceberg.function.FunctionCall;
import dev.ddb2iceberg.function.FunctionInput;
import dev.ddb2iceberg.function.MergerSettings;
import dev.ddb2iceberg.function.OwnedClients;
import dev.ddb2iceberg.load.parallel.ParallelExportLoad;
import dev.ddb2iceberg.staging.StagingStore;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import org.apache.iceberg.catalog.Catalog;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Lambda entry point of the parallel export load's steps, in the Merger's jar (the same code and
 * settings), run by the template's export-load state machine ({@code statemachine/export-load.asl.json})
 * or locally by {@code ./ddb2iceberg load-export --parallel N}. Its input, an
 * {@link ExportLoadSteps.Input}, says which step ({@link ExportLoadSteps} lists them and their results).
 */
public final class ExportLoadHandler implements RequestStreamHandler, AutoCloseable {
    private final ExportLoadSteps steps;
    private final OwnedClients owned;

    /** Used by Lambda: settings are read and checked, and clients built, once at cold start. */
    public ExportLoadHandler() {
        this(Environment.system());
    }

    /** Used by the local runtime, which passes the environment a Lambda would have. */
    public ExportLoadHandler(Environment env) {
        this(env, MergerSettings.from(env));
    }

    private ExportLoadHandler(Environment env, MergerSettings settings) {
        this(env, settings, new OwnedClients());
    }

    private ExportLoadHandler(Environment env, MergerSettings settings, OwnedClients owned) {
        this(
                settings,
                owned.own(settings.catalog().load()),
                owned.own(settings.s3().newClient()),
                concurrency(env),
                batchItems(env),
                owned);
    }

    /** Workers the map runs at once unless the execution's input says ({@code workers}). */
    static int concurrency(Environment env) {
        return env.positiveInt(Settings.EXPORT_LOAD_CONCURRENCY);
    }

    /** Items a worker writes at once at most (its heap bounds a batch too: ParallelExportLoad.BATCH_HEAP_SHARE). */
    static int batchItems(Environment env) {
        return env.positiveInt(Settings.LOAD_BATCH_ITEMS);
    }

    /** Reads (and checks) every setting the handler reads, as its constructor does, without building clients. */
    public static void checkSettings(Environment env) {
        MergerSettings.from(env);
        concurrency(env);
        batchItems(env);
    }

    /** A handler on the caller's catalog and client, which stay the caller's to close. */
    public ExportLoadHandler(MergerSettings settings, Catalog catalog, S3Client s3, int concurrency, int batchItems) {
        this(settings, catalog, s3, concurrency, batchItems, new OwnedClients());
    }

    private ExportLoadHandler(
            MergerSettings settings,
            Catalog catalog,
            S3Client s3,
            int concurrency,
            int batchItems,
            OwnedClients owned) {
        this.owned = owned;
        this.steps = new ExportLoadSteps(
                new ParallelExportLoad(
                        catalog,
                        settings.table(),
                        new StagingStore(s3, settings.staging()),
                        settings.options(),
                        s3,
                        batchItems),
                concurrency);
    }

    /** Closes the catalog and client this handler built (Lambda never does; the local runtime does). */
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
                bytes -> steps.run(FunctionInput.read(bytes, "export load", ExportLoadSteps.Input.class)));
    }
}
