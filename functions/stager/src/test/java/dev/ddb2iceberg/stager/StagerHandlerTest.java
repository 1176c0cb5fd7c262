package dev.ddb2iceberg.stager;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.amazonaws.services.lambda.runtime.events.DynamodbEvent;
import com.amazonaws.services.lambda.runtime.events.StreamsEventResponse;
import com.amazonaws.services.lambda.runtime.events.models.dynamodb.StreamViewType;
import com.amazonaws.services.lambda.runtime.tests.EventLoader;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ddb2iceberg.config.ConfigurationException;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.S3Settings;
import dev.ddb2iceberg.config.StagingSettings;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.FaultInjectingBlobStore.Operation;
import dev.ddb2iceberg.embedded.LocalContext;
import dev.ddb2iceberg.embedded.MetricLines;
import dev.ddb2iceberg.embedded.ProjectFiles;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.staging.StagedObject;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.stream.StreamRecordDecoder;
import dev.ddb2iceberg.stream.UnsupportedStreamViewTypeException;
import dev.ddb2iceberg.testkit.LogCapture;
import dev.ddb2iceberg.testkit.RandomChanges;
import dev.ddb2iceberg.testkit.StreamEvents;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * The stager handler against a real S3-compatible server over HTTP, with events decoded from the
 * sample files by the Lambda Java runtime's own serializers (EventLoader).
 */
@ExtendWith(S3ServerExtension.class)
class StagerHandlerTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private EmbeddedS3Server server;
    private S3Client s3;
    private String bucket;
    private StagerHandler handler;
    private StagingStore store;

    @BeforeEach
    void setUp(EmbeddedS3Server server) {
        this.server = server;
        this.s3 = server.newClient();
        this.bucket = S3ServerExtension.newBucket(server);
        StagerSettings settings = new StagerSettings(new StagingSettings(bucket, "staging/", "quarantine/"), null);
        this.handler = new StagerHandler(settings, s3);
        this.store = new StagingStore(s3, settings.staging());
    }

    private static DynamodbEvent event(String file) {
        return EventLoader.loadDynamoDbEvent(ProjectFiles.event(file).toString());
    }

    private static List<Change> decodeAll(DynamodbEvent event) throws Exception {
        List<Change> out = new ArrayList<>();
        for (var r : event.getRecords()) {
            out.add(StreamRecordDecoder.decode(r));
        }
        return out;
    }

    private List<String> keys(String prefix) {
        return s3.listObjectsV2(b -> b.bucket(bucket).prefix(prefix)).contents().stream()
                .map(S3Object::key)
                .toList();
    }

    private List<Change> allStaged() {
        List<Change> out = new ArrayList<>();
        for (StagedObject o : store.list()) {
            out.addAll(store.read(o.name()));
        }
        return out;
    }

    @Test
    void sampleBatchIsStagedAsOneObjectThatReadsBackEqual() throws Exception {
        DynamodbEvent event = event("stager-batch.json");
        StreamsEventResponse response = handler.handleRequest(event, null);

        assertEquals(List.of(), response.getBatchItemFailures(), "no failures");
        assertEquals(
                List.of("staging/" + "0".repeat(19) + "111100000000000000001-" + "0".repeat(19)
                        + "111500000000000000005.ddbstage"),
                keys("staging/"));
        List<Change> staged = allStaged();
        assertEquals(decodeAll(event), staged);

        Change insert = staged.get(0);
        assertEquals(
                new DdbValue.N("12345678901234567890.123456789012345678"),
                insert.newImage().get("total"));
        assertArrayEquals(
                new byte[] {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'},
                ((DdbValue.B) insert.newImage().get("thumbnail")).bytes());
        assertEquals(
                new DdbValue.NS(List.of("9.99", "1E+2", "-0.5")),
                insert.newImage().get("line_prices"));
        assertEquals(DdbValue.Null.INSTANCE, insert.newImage().get("coupon"));
        DdbValue.M address = (DdbValue.M) insert.newImage().get("address");
        assertEquals(
                new DdbValue.N("-71.0942"),
                ((DdbValue.M) address.fields().get("geo")).fields().get("lon"));
        assertEquals(1764460800_000L, insert.approximateCreationMillis());
        assertEquals(
                List.of(false, false, false, false, true),
                staged.stream().map(Change::ttlExpiry).toList(),
                "only the last REMOVE came from TTL");
        assertEquals(dev.ddb2iceberg.model.Operation.REMOVE, staged.get(3).operation());
    }

    @Test
    void theSameBatchTwiceGivesOneObjectWithIdenticalContent() {
        DynamodbEvent event = event("stager-batch.json");
        handler.handleRequest(event, null);
        List<String> first = keys("staging/");
        byte[] firstBytes =
                s3.getObjectAsBytes(b -> b.bucket(bucket).key(first.get(0))).asByteArray();

        handler.handleRequest(event("stager-batch.json"), null);
        assertEquals(first, keys("staging/"), "a retried batch overwrites its own object");
        assertArrayEquals(
                firstBytes,
                s3.getObjectAsBytes(b -> b.bucket(bucket).key(first.get(0))).asByteArray());
    }

    @Test
    void poisonRecordIsQuarantinedWithItsReasonWhileTheRestIsStaged() throws Exception {
        DynamodbEvent event = event("stager-poison.json");
        StreamsEventResponse response = handler.handleRequest(event, null);

        assertEquals(List.of(), response.getBatchItemFailures(), "a poison record does not block the shard");
        List<Change> staged = allStaged();
        assertEquals(
                List.of("111100000000000000001", "111360000000000000005"),
                staged.stream().map(Change::sequenceNumber).toList());
        String quarantineKey = "quarantine/" + "0".repeat(19) + "111350000000000000004.json";
        assertEquals(List.of(quarantineKey), keys("quarantine/"));
        JsonNode doc = JSON.readTree(
                s3.getObjectAsBytes(b -> b.bucket(bucket).key(quarantineKey)).asByteArray());
        assertEquals(
                "NewImage.total: N value 'twelve' is not a decimal number",
                doc.get("reason").asText());
        assertEquals("twelve", doc.at("/record/dynamodb/NewImage/total/N").asText(), "the record is kept as it came");
        assertEquals(
                "1679091c5a880faf6fb5e6087eb1b2dc", doc.at("/record/eventID").asText());
    }

    /**
     * A batch [good0, poison1, good2, poison3, good4]: quarantine writes fail from the k-th on.
     * The response must name the first record not durably handled, and every record before it must
     * be durable (staged or quarantined).
     */
    @ParameterizedTest
    @ValueSource(ints = {1, 2})
    void quarantineOutageStopsTheBatchAtThatRecord(int k) throws Exception {
        List<DynamodbEvent.DynamodbStreamRecord> records = mixedBatch();
        server.faults().failFrom(Operation.PUT, k, key -> key.startsWith("quarantine/"));

        StreamsEventResponse response = handler.handleRequest(event(records), null);

        int failedIndex = k == 1 ? 1 : 3;
        assertEquals(List.of(seq(records.get(failedIndex))), failureIds(response));
        List<String> expectedStaged =
                k == 1 ? List.of(seq(records.get(0))) : List.of(seq(records.get(0)), seq(records.get(2)));
        assertEquals(
                expectedStaged, allStaged().stream().map(Change::sequenceNumber).toList());
        assertEquals(k - 1, keys("quarantine/").size(), "quarantined before the outage");

        // Lambda retries from the reported record once S3 is back: everything ends up durable, once.
        server.faults().clear();
        assertEquals(
                List.of(),
                failureIds(handler.handleRequest(event(records.subList(failedIndex, records.size())), null)));
        assertEquals(
                List.of(seq(records.get(0)), seq(records.get(2)), seq(records.get(4))),
                allStaged().stream().map(Change::sequenceNumber).distinct().toList());
        assertEquals(2, keys("quarantine/").size());
    }

    @Test
    void stagingOutageReportsTheFirstRecordNotDurable() {
        List<DynamodbEvent.DynamodbStreamRecord> records = mixedBatch();
        server.faults().failFrom(Operation.PUT, 1, key -> key.startsWith("staging/"));
        assertEquals(List.of(seq(records.get(0))), failureIds(handler.handleRequest(event(records), null)));
        assertEquals(List.of(), keys("staging/"));
    }

    @Test
    void whenTheBatchStartsWithAQuarantinedRecordAStagingOutageResumesAtTheFirstGoodOne() {
        List<DynamodbEvent.DynamodbStreamRecord> records = mixedBatch().subList(1, 5); // poison1 first
        server.faults().failFrom(Operation.PUT, 1, key -> key.startsWith("staging/"));
        assertEquals(List.of(seq(records.get(1))), failureIds(handler.handleRequest(event(records), null)));
        assertEquals(2, keys("quarantine/").size());
    }

    @Test
    void eachBatchPrintsAnEmbeddedMetricLineWithWhatWasStagedAndQuarantined() throws Exception {
        List<String> lines = new ArrayList<>();
        StagerSettings settings =
                new StagerSettings(new StagingSettings(bucket, "staging/", "quarantine/"), null, "shop.orders");
        new StagerHandler(settings, s3).metricsTo(lines::add).handleRequest(event(mixedBatch()), null);
        JsonNode line = MetricLines.single(lines, "shop.orders");
        assertEquals(3, line.path("StagedRecords").asInt(), "the three good records of the mixed batch: " + line);
        assertEquals(2, line.path("QuarantinedRecords").asInt(), line.toString());
        assertEquals(0, line.path("StagingFailures").asInt());
    }

    @Test
    void eachBatchLogsAJsonLineNamingTheFunctionTheSequenceRangeAndTheStagedObject() {
        List<DynamodbEvent.DynamodbStreamRecord> records = mixedBatch();
        LocalContext context = new LocalContext("ddb2iceberg-stager", 512, 60);
        JsonNode line;
        try (LogCapture logs = LogCapture.json()) {
            handler.handleRequest(event(records), context);
            line = logs.line(context.getAwsRequestId(), "Staged the batch");
        }
        assertEquals("ddb2iceberg-stager", line.path("function").asText(), line.toString());
        assertEquals(seq(records.get(0)), line.path("firstSequenceNumber").asText(), line.toString());
        assertEquals(
                seq(records.get(records.size() - 1)),
                line.path("lastSequenceNumber").asText(),
                line.toString());
        assertEquals(keys("staging/"), List.of(line.path("stagedObject").asText()), line.toString());
        assertEquals(3, line.path("staged").asInt());
        assertEquals(2, line.path("quarantined").asInt());
        assertTrue(line.path("millis").isIntegralNumber(), line.toString());
    }

    @Test
    void aFailedBatchLogsTheErrorWithItsCauseAndTheRange() {
        List<DynamodbEvent.DynamodbStreamRecord> records = mixedBatch();
        server.faults().failFrom(Operation.PUT, 1, key -> key.startsWith("staging/"));
        LocalContext context = new LocalContext("ddb2iceberg-stager", 512, 60);
        JsonNode line;
        try (LogCapture logs = LogCapture.json()) {
            handler.handleRequest(event(records), context);
            line = logs.line(context.getAwsRequestId(), "Staged part of the batch");
        }
        assertEquals("WARN", line.path("level").asText(), line.toString());
        assertEquals(seq(records.get(0)), line.path("resumeAt").asText(), line.toString());
    }

    @Test
    void randomItemsOfEveryTypeRoundTripThroughTheHandler() {
        List<Change> changes = RandomChanges.generate(42, 500);
        handler.handleRequest(StreamEvents.batch(changes), null);
        assertEquals(changes, allStaged());
    }

    @Test
    void keysOnlyStreamFailsTheInvocationNamingTheNeededViewType() {
        DynamodbEvent event = event("stager-batch.json");
        event.getRecords().forEach(r -> r.getDynamodb().setStreamViewType(StreamViewType.KEYS_ONLY));
        UnsupportedStreamViewTypeException e =
                assertThrows(UnsupportedStreamViewTypeException.class, () -> handler.handleRequest(event, null));
        assertTrue(e.getMessage().contains("NEW_IMAGE or NEW_AND_OLD_IMAGES"), e.getMessage());
        assertEquals(List.of(), keys(""), "nothing written");
    }

    @Test
    void aScheduleEventIsRejectedAsNotAStreamBatch() {
        DynamodbEvent notAStream =
                EventLoader.loadEvent(ProjectFiles.event("merger-schedule.json").toString(), DynamodbEvent.class);
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> handler.handleRequest(notAStream, null));
        assertTrue(e.getMessage().contains("not a DynamoDB Streams batch"), e.getMessage());
    }

    @Test
    void missingBucketSettingIsNamed() {
        ConfigurationException e = assertThrows(
                ConfigurationException.class,
                () -> StagerSettings.from(new Environment(Map.of("STAGING_PREFIX", "staging/"))));
        assertTrue(e.getMessage().contains("STAGING_BUCKET"), e.getMessage());
        ConfigurationException overlap = assertThrows(
                ConfigurationException.class,
                () -> StagerSettings.from(new Environment(
                        Map.of("STAGING_BUCKET", "b", "STAGING_PREFIX", "data/", "QUARANTINE_PREFIX", "data/bad/"))));
        assertTrue(overlap.getMessage().contains("overlap"), overlap.getMessage());
        ConfigurationException endpoint = assertThrows(
                ConfigurationException.class,
                () -> S3Settings.from(new Environment(Map.of("S3_ENDPOINT", "localhost"))));
        assertTrue(endpoint.getMessage().contains("S3_ENDPOINT"), endpoint.getMessage());
    }

    private static List<DynamodbEvent.DynamodbStreamRecord> mixedBatch() {
        List<Change> changes = RandomChanges.generate(3, 5);
        List<DynamodbEvent.DynamodbStreamRecord> records = new ArrayList<>();
        for (int i = 0; i < changes.size(); i++) {
            var r = StreamEvents.record(changes.get(i));
            if (i % 2 == 1) {
                r.setEventName("BOGUS"); // poison: can never be decoded
            }
            records.add(r);
        }
        return records;
    }

    private static DynamodbEvent event(List<DynamodbEvent.DynamodbStreamRecord> records) {
        DynamodbEvent e = new DynamodbEvent();
        e.setRecords(new ArrayList<>(records));
        return e;
    }

    private static String seq(DynamodbEvent.DynamodbStreamRecord r) {
        return r.getDynamodb().getSequenceNumber();
    }

    private static List<String> failureIds(StreamsEventResponse response) {
        return response.getBatchItemFailures().stream()
                .map(StreamsEventResponse.BatchItemFailure::getItemIdentifier)
                .toList();
    }
}
