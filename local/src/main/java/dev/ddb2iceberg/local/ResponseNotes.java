package dev.ddb2iceberg.local;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.Optional;

/** What a person should know about a function's response that the response cannot say itself. */
final class ResponseNotes {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** A DynamoDB stream keeps a record this long: no deployed merge sees an older change. */
    private static final Duration STREAM_RETENTION = Duration.ofHours(24);

    private ResponseNotes() {}

    /**
     * A merge's {@code lagSeconds} counts from the changes' ApproximateCreationDateTime, which an
     * event file fixes: a lag beyond the stream's retention comes from the file's dates, not from
     * the pipeline, and is said so (with the date it counts from).
     */
    static Optional<String> lag(byte[] response, Instant now) {
        JsonNode lag;
        try {
            lag = JSON.readTree(response).path("lagSeconds");
        } catch (IOException notJson) {
            return Optional.empty();
        }
        if (!lag.canConvertToLong() || lag.asLong() <= STREAM_RETENTION.toSeconds()) {
            return Optional.empty();
        }
        LocalDate oldest = LocalDate.ofInstant(now.minusSeconds(lag.asLong()), ZoneOffset.UTC);
        return Optional.of("Note: lagSeconds " + lag.asLong() + " ("
                + Duration.ofSeconds(lag.asLong()).toDays()
                + " days) counts from the oldest merged change's ApproximateCreationDateTime, on " + oldest
                + ": the event file's own date, not a delay of the pipeline. A DynamoDB stream keeps a record"
                + " 24 hours, so a deployed merge's lag stays below that.");
    }
}
