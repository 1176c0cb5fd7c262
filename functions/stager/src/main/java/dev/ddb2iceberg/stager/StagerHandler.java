package dev.ddb2iceberg.stager;

import com.amazonaws.services.lambda.runtime.Context;
import com.amazonaws.services.lambda.runtime.RequestHandler;
import com.amazonaws.services.lambda.runtime.events.DynamodbEvent;
import com.amazonaws.services.lambda.runtime.events.StreamsEventResponse;
import dev.ddb2iceberg.config.Environment;
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
public final class StagerHandler implements RequestHandler<DynamodbEvent, StreamsEventResponse> {
    private static final Logger LOG = LoggerFactory.getLogger(StagerHandler.class);

    private final StageRun run;

    /** Used by Lambda: settings are read and checked once, at cold start. */
    public StagerHandler() {
        this(StagerSettings.from(Environment.system()));
    }

    /** Used by the local runtime, which passes the environment a Lambda would have. */
    public StagerHandler(Environment env) {
        this(StagerSettings.from(env));
    }

    public StagerHandler(StagerSettings settings) {
        this(settings, settings.s3().newClient());
    }

    public StagerHandler(StagerSettings settings, S3Client s3) {
        this.run = new StageRun(new StagingStore(s3, settings.staging()), settings.table(), LOG);
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
