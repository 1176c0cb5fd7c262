package dev.ddb2iceberg.staging;

import com.amazonaws.services.lambda.runtime.events.models.dynamodb.Record;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.SequenceNumbers;
import dev.ddb2iceberg.stream.PoisonRecordException;
import dev.ddb2iceberg.stream.StreamRecordDecoder;
import dev.ddb2iceberg.stream.StreamRecordJson;
import java.io.UncheckedIOException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.core.exception.SdkException;

/**
 * Stages one Lambda batch of stream records (one shard's, in order) durably in S3.
 *
 * <p>The contract with Lambda (partial batch response): a record counts as done only once it is
 * durably written, either in the batch's staged object or, if it can never be decoded, in the
 * quarantine. The first record that is not done is reported back; Lambda then retries from it
 * and never sees the records after it acknowledged.
 */
public final class BatchStager {
    private static final Logger LOG = LoggerFactory.getLogger(BatchStager.class);
    private static final ObjectMapper JSON = new ObjectMapper();

    private final StagingStore store;

    public BatchStager(StagingStore store) {
        this.store = store;
    }

    /** What happened to a batch. */
    public record Result(
            int records,
            int staged,
            int quarantined,
            StagedObjectName stagedObject,
            String firstFailedSequenceNumber,
            String failure) {
        public boolean complete() {
            return firstFailedSequenceNumber == null;
        }
    }

    public Result stage(List<? extends Record> records) {
        String failure = null; // why a write failed, for the result
        List<Change> good = new ArrayList<>(records.size());
        int quarantined = 0;
        int cutoff = records.size(); // index of the first record that could not be quarantined
        for (int i = 0; i < records.size(); i++) {
            Record record = records.get(i);
            try {
                good.add(StreamRecordDecoder.decode(record));
            } catch (PoisonRecordException poison) {
                try {
                    quarantine(record, poison.getMessage());
                    quarantined++;
                } catch (SdkException | UncheckedIOException e) {
                    failure = "could not quarantine record " + describe(record) + ": " + e;
                    LOG.warn(
                            "Could not quarantine record {}; stopping the batch there: {}",
                            describe(record),
                            e.toString());
                    cutoff = i;
                    break;
                }
            }
        }
        if (cutoff < records.size()) {
            // Everything from the cut-off on is retried by Lambda, so it needs a sequence number to resume at.
            String resumeAt = validSequenceOrNull(records.get(cutoff));
            if (resumeAt == null) {
                throw new IllegalStateException(
                        "Record " + describe(records.get(cutoff))
                                + " has no valid sequence number and could not be quarantined; failing the whole batch so Lambda retries it.");
            }
            StagedObjectName name = null;
            if (!good.isEmpty()) {
                Put put = put(good);
                name = put.name();
                if (name == null) {
                    return new Result(
                            records.size(), 0, quarantined, null, good.get(0).sequenceNumber(), put.failure());
                }
            }
            return new Result(records.size(), good.size(), quarantined, name, resumeAt, failure);
        }
        if (good.isEmpty()) {
            return new Result(records.size(), 0, quarantined, null, null, null);
        }
        Put put = put(good);
        StagedObjectName name = put.name();
        if (name == null) {
            // Quarantined records before the first good one are durable; resume at the first good one.
            return new Result(records.size(), 0, quarantined, null, good.get(0).sequenceNumber(), put.failure());
        }
        return new Result(records.size(), good.size(), quarantined, name, null, null);
    }

    private static byte[] bytes(ObjectNode node) {
        try {
            return JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(node);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot render a quarantined record", e);
        }
    }

    /** The staged object's name, or (name null) why it could not be written. */
    private record Put(StagedObjectName name, String failure) {}

    private Put put(List<Change> changes) {
        try {
            return new Put(store.putBatch(changes), null);
        } catch (SdkException | UncheckedIOException e) {
            LOG.warn(
                    "Could not stage {} changes from {}: {}",
                    changes.size(),
                    changes.get(0).sequenceNumber(),
                    e.toString());
            return new Put(null, "could not stage " + changes.size() + " changes: " + e);
        }
    }

    private void quarantine(Record record, String reason) {
        ObjectNode recordJson = StreamRecordJson.toJson(record);
        ObjectNode doc = JSON.createObjectNode();
        doc.put("reason", reason);
        doc.put("quarantinedAt", Instant.now().toString());
        doc.set("record", recordJson);
        String seq = validSequenceOrNull(record);
        // Deterministic names (from the record alone), so a retried batch overwrites rather than adds.
        String key = seq != null
                ? SequenceNumbers.pad(seq) + ".json"
                : "no-sequence-number/" + sha256(bytes(recordJson)) + ".json";
        byte[] json = bytes(doc);
        store.putQuarantined(key, json);
        LOG.warn(
                "Quarantined record {} under s3://{}/{}{}: {}",
                describe(record),
                store.bucket(),
                store.quarantinePrefix(),
                key,
                reason);
    }

    private static String validSequenceOrNull(Record record) {
        try {
            return SequenceNumbers.check(record.getDynamodb().getSequenceNumber());
        } catch (RuntimeException e) {
            return null;
        }
    }

    private static String describe(Record record) {
        String seq = record == null || record.getDynamodb() == null
                ? null
                : record.getDynamodb().getSequenceNumber();
        return "(eventID " + (record == null ? null : record.getEventID()) + ", sequence number " + seq + ")";
    }

    private static String sha256(byte[] bytes) {
        try {
            return HexFormat.of()
                    .formatHex(MessageDigest.getInstance("SHA-256").digest(bytes))
                    .substring(0, 32);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
