package dev.ddb2iceberg.stager;

import com.amazonaws.services.lambda.runtime.Context;
import com.amazonaws.services.lambda.runtime.RequestHandler;
import com.amazonaws.services.lambda.runtime.events.DynamodbEvent;
import com.amazonaws.services.lambda.runtime.events.StreamsEventResponse;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.ops.MetricLine;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import java.time.Clock;
import java.util.List;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Lambda entry point for DynamoDB Streams batches. Thin by design: the staging contract lives in
 * {@link BatchStager}; this class decodes the event, calls it and encodes the partial batch
 * response (the event source mapping must enable {@code ReportBatchItemFailures}).
 */
public final class StagerHandler implements RequestHandler<DynamodbEvent, StreamsEventResponse> {
  private static final Logger LOG = LoggerFactory.getLogger(StagerHandler.class);

  private final BatchStager stager;
  private final String table;
  private Consumer<String> metricsOut = System.out::println;

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
    this.stager = new BatchStager(new StagingStore(s3, settings.staging()));
    this.table = settings.table();
  }

  /** Where metric lines go: standard output in Lambda (CloudWatch reads them from the log). */
  StagerHandler metricsTo(Consumer<String> out) {
    this.metricsOut = out;
    return this;
  }

  @Override
  public StreamsEventResponse handleRequest(DynamodbEvent event, Context context) {
    if (event == null || event.getRecords() == null) {
      throw new IllegalArgumentException("The stager was invoked with an event that is not a DynamoDB Streams batch"
          + " (it has no \"Records\"). Invoke it from the table's stream event source mapping, or with a file like"
          + " events/stager-batch.json.");
    }
    long start = System.nanoTime();
    BatchStager.Result result = stager.stage(event.getRecords());
    long millis = (System.nanoTime() - start) / 1_000_000;
    LOG.info("Batch of {} records: {} staged as {}, {} quarantined, {} in {} ms", result.records(), result.staged(),
        result.stagedObject() == null ? "nothing" : result.stagedObject().key(), result.quarantined(),
        result.complete() ? "complete" : "resume at " + result.firstFailedSequenceNumber(), millis);
    metricsOut.accept(MetricLine.forTable(table, Clock.systemUTC())
        .count("StagedRecords", result.staged())
        .count("QuarantinedRecords", result.quarantined())
        .count("StagingFailures", result.complete() ? 0 : 1)
        .milliseconds("StageMillis", millis)
        .toString());
    return StreamsEventResponse.builder()
        .withBatchItemFailures(result.complete()
            ? List.of()
            : List.of(new StreamsEventResponse.BatchItemFailure(result.firstFailedSequenceNumber())))
        .build();
  }
}
