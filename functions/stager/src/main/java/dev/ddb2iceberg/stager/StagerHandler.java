package dev.ddb2iceberg.stager;

import dev.ddb2iceberg.observe.Invocation;
import dev.ddb2iceberg.observe.MetricLine;
import com.amazonaws.services.lambda.runtime.Context;
import com.amazonaws.services.lambda.runtime.RequestHandler;
import com.amazonaws.services.lambda.runtime.events.DynamodbEvent;
import com.amazonaws.services.lambda.runtime.events.StreamsEventResponse;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import java.time.Clock;
import java.util.List;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;
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
  // System.out as it is at each print (not a method reference, which would keep the stream of
  // construction time): the local runtime points it away from its own output while functions run.
  private Consumer<String> metricsOut = line -> System.out.println(line);

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
    try (Invocation log = Invocation.of(context)) {
      return stage(event.getRecords());
    }
  }

  private StreamsEventResponse stage(List<DynamodbEvent.DynamodbStreamRecord> records) {
    String first = records.isEmpty() ? null : sequenceNumber(records.get(0));
    String last = records.isEmpty() ? null : sequenceNumber(records.get(records.size() - 1));
    long start = System.nanoTime();
    BatchStager.Result result;
    try {
      result = stager.stage(records);
    } catch (RuntimeException e) {
      LOG.atError().setCause(e).addKeyValue("records", records.size()).addKeyValue("firstSequenceNumber", first)
          .addKeyValue("lastSequenceNumber", last).log("Staging the batch failed; Lambda retries it");
      throw e;
    }
    long millis = (System.nanoTime() - start) / 1_000_000;
    // A partial batch is a warning: Lambda retries from resumeAt, and repeated ones mean staging is failing.
    LOG.atLevel(result.complete() ? Level.INFO : Level.WARN)
        .addKeyValue("records", result.records())
        .addKeyValue("firstSequenceNumber", first)
        .addKeyValue("lastSequenceNumber", last)
        .addKeyValue("staged", result.staged())
        .addKeyValue("stagedObject", result.stagedObject() == null ? null : result.stagedObject().key())
        .addKeyValue("quarantined", result.quarantined())
        .addKeyValue("resumeAt", result.firstFailedSequenceNumber())
        .addKeyValue("millis", millis)
        .log(result.complete() ? "Staged the batch" : "Staged part of the batch; Lambda retries from resumeAt");
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

  /** For the log only: a malformed record (quarantined by the stager) may lack its stream fields. */
  private static String sequenceNumber(DynamodbEvent.DynamodbStreamRecord record) {
    return record == null || record.getDynamodb() == null ? null : record.getDynamodb().getSequenceNumber();
  }
}
