package dev.ddb2iceberg.stager;

import com.amazonaws.services.lambda.runtime.Context;
import com.amazonaws.services.lambda.runtime.RequestHandler;
import com.amazonaws.services.lambda.runtime.events.DynamodbEvent;
import com.amazonaws.services.lambda.runtime.events.StreamsEventResponse;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.function.OwnedClients;
import dev.ddb2iceberg.function.StageRun;
import dev.ddb2iceberg.observe.Invocation;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Lambda entry point for DynamoDB Streams batches. Thin by design: the staging contract lives in
 * {@link BatchStager}, the batch's log line, metrics and partial batch response in {@link StageRun};
 * this class checks the event is a batch and calls it (the event source mapping must enable
 * {@code ReportBatchItemFailures}).
 */
public final class StagerHandler implements RequestHandler<DynamodbEvent, StreamsEventResponse>, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(StagerHandler.class);

    private final StageRun run;
    private final OwnedClients owned;

    /** Used by Lambda: settings are read and checked once, at cold start. */
    public StagerHandler() {
        this(StagerSettings.from(Environment.system()));
    }

    /** Used by the local runtime, which passes the environment a Lambda would have. */
    public StagerHandler(Environment env) {
        this(StagerSettings.from(env));
    }

    public StagerHandler(StagerSettings settings) {
        this(settings, new OwnedClients());
    }

    private StagerHandler(StagerSettings settings, OwnedClients owned) {
        this(settings, owned.own(settings.s3().newClient()), owned);
    }

    /** A handler on the caller's client, which stays the caller's to close. */
    public StagerHandler(StagerSettings settings, S3Client s3) {
        this(settings, s3, new OwnedClients());
    }

    private StagerHandler(StagerSettings settings, S3Client s3, OwnedClients owned) {
        this.owned = owned;
        this.run = new StageRun(new StagingStore(s3, settings.staging()), settings.table(), LOG);
    }

    /** Closes the client this handler built (Lambda never does; the local runtime does). */
    @Override
    public void close() throws Exception {
        owned.close();
    }

    /** Where metric lines go: standard output in Lambda (CloudWatch reads them from the log). */
    StagerHandler metricsTo(Consumer<String> out) {
        run.metricsTo(out);
        return this;
    }

    @Override
    public StreamsEventResponse handleRequest(DynamodbEvent event, Context context) {
        if (event == null || event.getRecords() == null) {
            throw new IllegalArgumentException(
                    "The stager was invoked with an event that is not a DynamoDB Streams batch"
                            + " (it has no \"Records\"). Invoke it from the table's stream event source mapping, or with a file like"
                            + " events/stager-batch.json.");
        }
        try (Invocation log = Invocation.of(context)) {
            return run.stage(event.getRecords());
        }
    }
}
