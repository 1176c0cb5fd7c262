package dev.ddb2iceberg.merger;

import com.amazonaws.services.lambda.runtime.Context;
import com.amazonaws.services.lambda.runtime.RequestStreamHandler;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.Settings;
import dev.ddb2iceberg.function.FanOutMergeSteps;
import dev.ddb2iceberg.function.FunctionCall;
import dev.ddb2iceberg.function.FunctionInput;
import dev.ddb2iceberg.function.MergerSettings;
import dev.ddb2iceberg.function.OwnedClients;
import dev.ddb2iceberg.merge.FanOutMerge;
import dev.ddb2iceberg.staging.StagingStore;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import org.apache.iceberg.catalog.Catalog;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Lambda entry point of a fanned-out merge's steps, in the Merger's jar (the same code and
 * settings), run by the template's merge fan-out state machine
 * ({@code statemachine/merge-fan-out.asl.json}) or locally in process. Its input, a
 * {@link FanOutMergeSteps.Input}, says which step ({@link FanOutMergeSteps} lists them).
 */
public final class MergeFanOutHandler implements RequestStreamHandler, AutoCloseable {
    private final FanOutMergeSteps steps;
    private final OwnedClients owned;

    /** Used by Lambda: settings are read and checked, and clients built, once at cold start. */
    public MergeFanOutHandler() {
        this(Environment.system());
    }

    /** Used by the local runtime, which passes the environment a Lambda would have. */
    public MergeFanOutHandler(Environment env) {
        this(env, MergerSettings.from(env), new OwnedClients());
    }

    private MergeFanOutHandler(Environment env, MergerSettings settings, OwnedClients owned) {
        this(
                settings,
                owned.own(settings.catalog().load()),
                owned.own(settings.s3().newClient()),
                minBacklogBytes(env),
                owned);
    }

    /** A handler on the caller's catalog and client, which stay the caller's to close. */
    public MergeFanOutHandler(MergerSettings settings, Catalog catalog, S3Client s3, long minBacklogBytes) {
        this(settings, catalog, s3, minBacklogBytes, new OwnedClients());
    }

    private MergeFanOutHandler(
            MergerSettings settings, Catalog catalog, S3Client s3, long minBacklogBytes, OwnedClients owned) {
        this.owned = owned;
        this.steps = new FanOutMergeSteps(
                new FanOutMerge(
                        catalog, settings.table(), new StagingStore(s3, settings.staging()), settings.options()),
                minBacklogBytes);
    }

    /** The staged backlog under which the plan step plans nothing. */
    static long minBacklogBytes(Environment env) {
        return env.nonNegativeLong(Settings.MERGE_FAN_OUT_MIN_BACKLOG_BYTES);
    }

    /** Reads (and checks) every setting the handler reads, as its constructor does, without building clients. */
    public static void checkSettings(Environment env) {
        MergerSettings.from(env);
        minBacklogBytes(env);
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
                bytes -> steps.run(FunctionInput.read(bytes, "merge fan-out", FanOutMergeSteps.Input.class)));
    }
}
