package dev.ddb2iceberg.function;

import com.amazonaws.services.lambda.runtime.events.DynamodbEvent;
import com.amazonaws.services.lambda.runtime.events.StreamsEventResponse;
import dev.ddb2iceberg.observe.MetricLine;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import java.time.Clock;
import java.util.List;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.event.Level;

/**
 * The stager function's work: one DynamoDB Streams batch staged ({@link BatchStager} holds the
 * staging contract), logged, its metrics printed, and answered with the partial batch response
 * (the event source mapping must enable {@code ReportBatchItemFailures}).
 */
public final class StageRun {

    private final Logger log;
    private final BatchStager stager;
    private final String table;
    private Consumer<String> metricsOut = FunctionCall.STANDARD_OUTPUT;

    /**
     * @param table {@code namespace.name} of the table fed, only to label the metrics
     * @param log the handler's logger, which the log lines name
     */
    public StageRun(StagingStore store, String table, Logger log) {
        this.log = log;
        this.stager = new BatchStager(store);
        this.table = table;
    }

    /** Where metric lines go: standard output in Lambda (CloudWatch reads them from the log). */
    public StageRun metricsTo(Consumer<String> out) {
        this.metricsOut = out;
        return this;
    }

    public StreamsEventResponse stage(List<DynamodbEvent.DynamodbStreamRecord> records) {
        String first = records.isEmpty() ? null : sequenceNumber(records.get(0));
        String last = records.isEmpty() ? null : sequenceNumber(records.get(records.size() - 1));
        long start = System.nanoTime();
        BatchStager.Result result;
        try {
            result = stager.stage(records);
        } catch (RuntimeException e) {
            log.atError()
                    .setCause(e)
                    .addKeyValue("records", records.size())
                    .addKeyValue("firstSequenceNumber", first)
                    .addKeyValue("lastSequenceNumber", last)
                    .log("Staging the batch failed; Lambda retries it");
            throw e;
        }
        long millis = (System.nanoTime() - start) / 1_000_000;
        // A partial batch is a warning: Lambda retries from resumeAt, and repeated ones mean staging is failing.
        log.atLevel(result.complete() ? Level.INFO : Level.WARN)
                .addKeyValue("records", result.records())
                .addKeyValue("firstSequenceNumber", first)
                .addKeyValue("lastSequenceNumber", last)
                .addKeyValue("staged", result.staged())
                .addKeyValue(
                        "stagedObject",
                        result.stagedObject() == null
                                ? null
                                : result.stagedObject().key())
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
                .withBatchItemFailures(
                        result.complete()
                                ? List.of()
                                : List.of(
                                        new StreamsEventResponse.BatchItemFailure(result.firstFailedSequenceNumber())))
                .build();
    }

    /** For the log only: a malformed record (quarantined by the stager) may lack its stream fields. */
    private static String sequenceNumber(DynamodbEvent.DynamodbStreamRecord record) {
        return record == null || record.getDynamodb() == null
                ? null
                : record.getDynamodb().getSequenceNumber();
    }
}
