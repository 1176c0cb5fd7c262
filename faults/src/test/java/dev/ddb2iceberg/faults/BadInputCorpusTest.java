package dev.ddb2iceberg.faults;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.amazonaws.services.lambda.runtime.events.DynamodbEvent;
import com.amazonaws.services.lambda.runtime.events.StreamsEventResponse;
import com.amazonaws.services.lambda.runtime.events.models.dynamodb.AttributeValue;
import com.amazonaws.services.lambda.runtime.events.models.dynamodb.StreamViewType;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ddb2iceberg.config.ConfigurationException;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.function.MaintenanceSettings;
import dev.ddb2iceberg.function.MergerSettings;
import dev.ddb2iceberg.maintainer.MaintenanceHandler;
import dev.ddb2iceberg.merge.MergeResult;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.merger.MergerHandler;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.stager.StagerHandler;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagedFormat;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.testkit.ExpectedTable;
import dev.ddb2iceberg.testkit.KeyedWorkload;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.StreamEvents;
import dev.ddb2iceberg.testkit.TableItems;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.apache.iceberg.Schema;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.SupportsNamespaces;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The bad-input corpus: every kind of bad input a user or AWS can hand the pipeline, the error a
 * user sees for it, and proof that nothing else was lost. Poison records and unreadable staged
 * objects go to the quarantine and the rest goes through (the shard never blocks); bad settings,
 * inputs and tables fail the invocation with a message naming what is wrong and what to do.
 */
@ExtendWith(S3ServerExtension.class)
class BadInputCorpusTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;

    private EmbeddedS3Server server;
    private S3Client s3;
    private final Map<String, String> env = new HashMap<>();

    @BeforeEach
    void setUp(EmbeddedS3Server server) {
        this.server = server;
        this.s3 = server.newClient();
        env.putAll(new LocalStack(server, S3ServerExtension.newBucket(server), dir).environment("orders"));
    }

    private MergerSettings mergerSettings() {
        return MergerSettings.from(new Environment(env));
    }

    private String bucket() {
        return env.get("STAGING_BUCKET");
    }

    private List<String> keys(String prefix) {
        return s3.listObjectsV2(b -> b.bucket(bucket()).prefix(prefix)).contents().stream()
                .map(o -> o.key())
                .toList();
    }

    private MergeResult merge() {
        MergerSettings settings = mergerSettings();
        return new Merger(
                        settings.catalog().load(),
                        settings.table(),
                        new StagingStore(s3, settings.staging()),
                        settings.options())
                .run();
    }

    private void assertTableHolds(List<Change> changes) {
        ExpectedTable expected = new ExpectedTable();
        expected.apply(changes);
        MergerSettings settings = mergerSettings();
        var actual = TableItems.read(settings.catalog().load().loadTable(TableIdentifier.of("ddb2iceberg", "orders")));
        assertTrue(
                expected.items().equals(actual),
                () -> "the good records: " + ExpectedTable.diff(expected.items(), actual));
    }

    // ------------------------------------------------------------------ poison records

    private static AttributeValue n(String text) {
        return new AttributeValue().withN(text);
    }

    static Stream<Arguments> poisonRecords() {
        List<Arguments> cases = new ArrayList<>();
        cases.add(
                Arguments.of("a record without Keys", spoil(r -> r.getDynamodb().setKeys(null)), "record has no Keys"));
        cases.add(Arguments.of(
                "an unknown eventName", spoil(r -> r.setEventName("UPSERT")), "unknown eventName 'UPSERT'"));
        cases.add(Arguments.of("no eventName", spoil(r -> r.setEventName((String) null)), "no eventName"));
        cases.add(Arguments.of(
                "an INSERT without NewImage",
                spoil(r -> {
                    r.setEventName("INSERT");
                    r.getDynamodb().setNewImage(null);
                }),
                "INSERT record has no NewImage"));
        cases.add(Arguments.of(
                "an N that is not a number",
                spoil(r -> r.getDynamodb().getNewImage().put("total", n("twelve"))),
                "N value 'twelve' is not a decimal number"));
        cases.add(Arguments.of(
                "an N beyond DynamoDB's range",
                spoil(r -> r.getDynamodb().getNewImage().put("total", n("1E+200"))),
                "outside DynamoDB's range"));
        cases.add(Arguments.of(
                "an N with 39 significant digits",
                spoil(r -> r.getDynamodb().getNewImage().put("total", n("1" + "2".repeat(38)))),
                "39 significant digits"));
        cases.add(Arguments.of(
                "an empty N", spoil(r -> r.getDynamodb().getNewImage().put("total", n(""))), "N value is empty"));
        cases.add(Arguments.of(
                "a bad N deep inside a map",
                spoil(r -> r.getDynamodb()
                        .getNewImage()
                        .put(
                                "meta",
                                new AttributeValue()
                                        .withM(Map.of("inner", new AttributeValue().withM(Map.of("x", n("1.2.3"))))))),
                "'1.2.3'"));
        cases.add(Arguments.of(
                "a bad N in a number set",
                spoil(r -> r.getDynamodb().getNewImage().put("sizes", new AttributeValue().withNS(List.of("1", "x")))),
                "'x'"));
        cases.add(Arguments.of(
                "an attribute with no type",
                spoil(r -> r.getDynamodb().getNewImage().put("odd", new AttributeValue())),
                "odd"));
        cases.add(Arguments.of(
                "a key attribute missing from NewImage",
                spoil(r -> r.getDynamodb().getNewImage().remove("sk")),
                "NewImage does not hold key attribute 'sk'"));
        cases.add(Arguments.of(
                "no sequence number", spoil(r -> r.getDynamodb().setSequenceNumber(null)), "equence number"));
        cases.add(Arguments.of(
                "a sequence number that is not digits",
                spoil(r -> r.getDynamodb().setSequenceNumber("12ab")),
                "12ab"));
        cases.add(Arguments.of(
                "a map-typed key attribute",
                spoil(r -> r.getDynamodb().getKeys().put("sk", new AttributeValue().withM(Map.of()))),
                "sk"));
        return cases.stream();
    }

    private static Consumer<DynamodbEvent.DynamodbStreamRecord> spoil(Consumer<DynamodbEvent.DynamodbStreamRecord> c) {
        return c;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("poisonRecords")
    void aPoisonRecordIsQuarantinedWithItsReasonAndTheRestOfTheBatchArrives(
            String kind, Consumer<DynamodbEvent.DynamodbStreamRecord> spoil, String reason) throws Exception {
        List<Change> good = new ArrayList<>(new KeyedWorkload(40, 100)
                .next(6).stream().filter(c -> c.operation().isUpsert()).toList());
        DynamodbEvent event = StreamEvents.batch(good);
        DynamodbEvent.DynamodbStreamRecord poison = event.getRecords().get(1);
        poison.getDynamodb().setNewImage(new HashMap<>(poison.getDynamodb().getNewImage()));
        poison.getDynamodb().setKeys(new HashMap<>(poison.getDynamodb().getKeys()));
        spoil.accept(poison);
        good.remove(1);

        StreamsEventResponse response = new StagerHandler(new Environment(env)).handleRequest(event, null);
        assertEquals(List.of(), response.getBatchItemFailures(), kind + ": the shard moves on");
        List<String> quarantined = keys("quarantine/");
        assertEquals(1, quarantined.size(), kind + ": one record quarantined: " + quarantined);
        JsonNode doc = JSON.readTree(s3.getObjectAsBytes(b -> b.bucket(bucket()).key(quarantined.get(0)))
                .asByteArray());
        assertTrue(
                doc.get("reason").asText().contains(reason),
                kind + ": the reason says '" + reason + "': " + doc.get("reason"));
        assertTrue(doc.has("record"), "the record is kept as it came");
        merge();
        assertTableHolds(good);
    }

    // ------------------------------------------------------------------ whole batches the stager refuses

    @Test
    void aStreamWithoutNewImagesFailsTheInvocationNamingTheViewTypeItNeeds() {
        for (StreamViewType type : List.of(StreamViewType.KEYS_ONLY, StreamViewType.OLD_IMAGE)) {
            DynamodbEvent event = StreamEvents.batch(new KeyedWorkload(41, 10).next(3));
            event.getRecords().forEach(r -> r.getDynamodb().setStreamViewType(type));
            RuntimeException e = assertThrows(
                    RuntimeException.class, () -> new StagerHandler(new Environment(env)).handleRequest(event, null));
            assertTrue(e.getMessage().contains("NEW_IMAGE or NEW_AND_OLD_IMAGES"), type + ": " + e.getMessage());
        }
        assertEquals(List.of(), keys(""), "nothing written");
    }

    @Test
    void aScheduleEventGivenToTheStagerIsRefusedAsNotAStreamBatch() {
        DynamodbEvent notAStream = new DynamodbEvent();
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> new StagerHandler(new Environment(env)).handleRequest(notAStream, null));
        assertTrue(e.getMessage().contains("not a DynamoDB Streams batch"), e.getMessage());
    }

    // ------------------------------------------------------------------ staged objects the merger cannot read

    static Stream<Arguments> badStagedObjects() {
        return Stream.of(
                Arguments.of(
                        "a truncated staged object",
                        (UnaryOperator<byte[]>) b -> Arrays.copyOf(b, b.length / 2),
                        "truncated"),
                Arguments.of(
                        "a corrupted byte",
                        (UnaryOperator<byte[]>) b -> {
                            byte[] c = b.clone();
                            c[c.length - 3] ^= 0x55;
                            return c;
                        },
                        ""),
                Arguments.of(
                        "an unknown format version",
                        (UnaryOperator<byte[]>) b -> {
                            byte[] c = b.clone();
                            c[8] = 99;
                            return c;
                        },
                        "version"),
                Arguments.of(
                        "not a staged object at all",
                        (UnaryOperator<byte[]>) b -> "<html>oops</html>".getBytes(),
                        "not a staged object"),
                Arguments.of("an empty object", (UnaryOperator<byte[]>) b -> new byte[0], ""));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badStagedObjects")
    void anUnreadableStagedObjectIsQuarantinedWithTheReasonAndTheOthersAreMerged(
            String kind, UnaryOperator<byte[]> damage, String reason) {
        KeyedWorkload w = new KeyedWorkload(42, 100);
        List<Change> first = w.next(20);
        List<Change> second = w.next(20);
        StagingStore store = new StagingStore(s3, mergerSettings().staging());
        new BatchStager(store).stage(StreamEvents.batch(first).getRecords());
        BatchStager.Result damaged =
                new BatchStager(store).stage(StreamEvents.batch(second).getRecords());
        String key = damaged.stagedObject().key();
        byte[] bytes = s3.getObjectAsBytes(b -> b.bucket(bucket()).key(key)).asByteArray();
        s3.putObject(b -> b.bucket(bucket()).key(key), RequestBody.fromBytes(damage.apply(bytes)));

        MergeResult r = merge();
        assertEquals(1, r.quarantined(), kind);
        assertEquals(1, r.objectsApplied(), kind + ": the other object is merged");
        String why = s3.getObjectAsBytes(b -> b.bucket(bucket())
                        .key("quarantine/staged/" + key.substring("staging/".length()) + ".reason.txt"))
                .asUtf8String();
        assertTrue(why.toLowerCase().contains(reason), kind + ": the reason says '" + reason + "': " + why);
        assertEquals(List.of(), keys("staging/"), "nothing left to block later runs");
        assertTableHolds(first);
    }

    @Test
    void theStagedFormatNamesWhatIsWrongWithAnObject() {
        byte[] good = StagedFormat.write(new KeyedWorkload(43, 10).next(5));
        byte[] version = good.clone();
        version[8] = 7;
        assertTrue(assertThrows(RuntimeException.class, () -> StagedFormat.read(version, "x"))
                .getMessage()
                .contains("version"));
    }

    // ------------------------------------------------------------------ tables

    @Test
    void aTableThePipelineDidNotCreateIsRefusedWithWhatToDo() {
        Catalog catalog = mergerSettings().catalog().load();
        ((SupportsNamespaces) catalog).createNamespace(Namespace.of("ddb2iceberg"));
        catalog.createTable(
                TableIdentifier.of("ddb2iceberg", "orders"),
                new Schema(Types.NestedField.required(1, "id", Types.StringType.get())));
        new BatchStager(new StagingStore(s3, mergerSettings().staging()))
                .stage(StreamEvents.batch(new KeyedWorkload(44, 10).next(5)).getRecords());
        IllegalStateException e = assertThrows(IllegalStateException.class, this::merge);
        assertTrue(e.getMessage().contains("was not created by this pipeline"), e.getMessage());
        assertTrue(e.getMessage().contains("Point TABLE_NAME at a new table"), e.getMessage());
        assertEquals(1, keys("staging/").size(), "the staged changes wait, nothing lost");
    }

    @Test
    void aColumnSomeoneGaveAnotherTypeKeepsItsValuesInTheOverflowAndTheMergeGoesOn() {
        KeyedWorkload w = new KeyedWorkload(45, 20);
        List<Change> changes = w.next(10);
        StagingStore store = new StagingStore(s3, mergerSettings().staging());
        new BatchStager(store).stage(StreamEvents.batch(changes.subList(0, 5)).getRecords());
        merge();
        Catalog catalog = mergerSettings().catalog().load();
        // "count" holds N (long); someone adds a column "rating" as boolean, which the items hold as N
        catalog.loadTable(TableIdentifier.of("ddb2iceberg", "orders"))
                .updateSchema()
                .addColumn("rating", Types.BooleanType.get())
                .commit();
        List<Change> rated = new ArrayList<>();
        for (Change c : changes.subList(5, 10)) {
            if (c.newImage() == null) {
                rated.add(c);
                continue;
            }
            Map<String, dev.ddb2iceberg.model.DdbValue> image = new HashMap<>(c.newImage());
            image.put("rating", new dev.ddb2iceberg.model.DdbValue.N("4.5"));
            rated.add(new Change(
                    c.keys(), c.operation(), image, c.sequenceNumber(), c.approximateCreationMillis(), false));
        }
        new BatchStager(store).stage(StreamEvents.batch(rated).getRecords());
        merge();
        List<Change> all = new ArrayList<>(changes.subList(0, 5));
        all.addAll(rated);
        assertTableHolds(all);
    }

    @Test
    void maintenanceOfATableThatDoesNotExistYetSaysSo() throws Exception {
        MaintenanceHandler handler =
                new MaintenanceHandler(MaintenanceSettings.from(new Environment(env)), Clock.systemUTC());
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        handler.handleRequest(new ByteArrayInputStream("{}".getBytes()), out, null);
        assertTrue(
                out.toString().contains("does not exist yet (the merger creates it on its first run)"), out.toString());
    }

    // ------------------------------------------------------------------ settings and inputs

    static Stream<Arguments> badSettings() {
        return Stream.of(
                Arguments.of("STAGING_BUCKET", null, "STAGING_BUCKET is not set"),
                Arguments.of("S3_ENDPOINT", "localhost:9000", "S3_ENDPOINT='localhost:9000' is not a URL"),
                Arguments.of("CATALOG_TYPE", "hive", "CATALOG_TYPE='hive' is not one of glue, s3tables, rest, jdbc"),
                Arguments.of("CATALOG_URI", null, "CATALOG_URI is not set"),
                Arguments.of("TABLE_NAME", "Orders", "TABLE_NAME='Orders' must be lower-case"),
                Arguments.of("TABLE_NAMESPACE", "my-db", "TABLE_NAMESPACE='my-db' must be lower-case"),
                Arguments.of("TABLE_FORMAT_VERSION", "4", "TABLE_FORMAT_VERSION=4 is not supported"),
                Arguments.of("TABLE_LOCATION", "/tmp/orders", "TABLE_LOCATION='/tmp/orders' is not an S3 location"),
                Arguments.of(
                        "DERIVED_FILES_LOCATION",
                        "tables/orders",
                        "DERIVED_FILES_LOCATION='tables/orders' is not an S3 location"),
                Arguments.of("COLUMN_TYPES", "price=money", "'money' for attribute price is not a type"),
                Arguments.of("ITEM_VARIANT_COLUMN", "true", "needs TABLE_FORMAT_VERSION=3"),
                Arguments.of(
                        "MAX_CHANGES_PER_RUN", "lots", "MAX_CHANGES_PER_RUN='lots' is not a positive whole number"),
                Arguments.of("CATALOG_PROPERTIES", "a=b,nonsense", "'nonsense', which is not key=value"),
                Arguments.of("STAGING_PREFIX", "/staging/", "starts with '/'"),
                Arguments.of("ITEM_JSON_COLUMN", "yes", "ITEM_JSON_COLUMN='yes' is not true or false"));
    }

    @ParameterizedTest(name = "{0}={1}")
    @MethodSource("badSettings")
    void aBadSettingFailsAtColdStartNamingTheVariable(String variable, String value, String message) {
        if (value == null) {
            env.remove(variable);
        } else {
            env.put(variable, value);
        }
        ConfigurationException e = assertThrows(ConfigurationException.class, this::mergerSettings);
        assertTrue(e.getMessage().contains(message), "expected '" + message + "' in: " + e.getMessage());
    }

    @Test
    void anS3TablesCatalogWithAMalformedBucketArnIsNamed() {
        env.put("CATALOG_TYPE", "s3tables");
        env.put("TABLE_BUCKET_ARN", "arn:aws:s3:::orders-lake"); // a general purpose bucket's ARN
        ConfigurationException e = assertThrows(ConfigurationException.class, this::mergerSettings);
        assertTrue(
                e.getMessage().contains("TABLE_BUCKET_ARN='arn:aws:s3:::orders-lake' is not a table bucket ARN"),
                e.getMessage());
        env.remove("TABLE_BUCKET_ARN");
        e = assertThrows(ConfigurationException.class, this::mergerSettings);
        assertTrue(e.getMessage().contains("TABLE_BUCKET_ARN"), e.getMessage());
    }

    @Test
    void theGlueCatalogWithoutItsAccountIdIsNamed() {
        env.put("CATALOG_TYPE", "glue");
        ConfigurationException e = assertThrows(ConfigurationException.class, this::mergerSettings);
        assertTrue(e.getMessage().contains("GLUE_CATALOG_ID"), e.getMessage());
    }

    @Test
    void aBadPartitionSpecIsNamedWhenTheTableIsCreatedAndTheChangesWait() {
        env.put("PARTITION_SPEC", "bucket(pk)");
        new BatchStager(new StagingStore(s3, mergerSettings().staging()))
                .stage(StreamEvents.batch(new KeyedWorkload(46, 10).next(5)).getRecords());
        RuntimeException e = assertThrows(RuntimeException.class, this::merge);
        assertTrue(e.getMessage().contains("bucket(pk)"), e.getMessage());
        assertEquals(1, keys("staging/").size(), "the staged changes wait for a fixed setting");
    }

    static Stream<Arguments> badFunctionInputs() {
        return Stream.of(
                Arguments.of("merger", "{oops", "not JSON"),
                Arguments.of("merger", "{\"maxChangez\": 5}", "'maxChangez'"),
                Arguments.of("merger", "{\"maxChanges\": -1}", "maxChanges=-1"),
                Arguments.of(
                        "merger", "{\"Records\": [{\"eventSource\": \"aws:dynamodb\"}]}", "batches go to the stager"),
                Arguments.of("maintenance", "{\"tasks\": [\"vacuum\"]}", "Unknown maintenance task 'vacuum'"),
                Arguments.of("maintenance", "{oops", "not JSON"));
    }

    @ParameterizedTest(name = "{0} given {1}")
    @MethodSource("badFunctionInputs")
    void aBadScheduledInputIsRefusedNamingTheField(String function, String input, String message) {
        RuntimeException e = assertThrows(RuntimeException.class, () -> {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            if (function.equals("merger")) {
                new MergerHandler(new Environment(env))
                        .handleRequest(new ByteArrayInputStream(input.getBytes()), out, null);
            } else {
                new MaintenanceHandler(new Environment(env))
                        .handleRequest(new ByteArrayInputStream(input.getBytes()), out, null);
            }
        });
        assertTrue(e.getMessage().contains(message), "expected '" + message + "' in: " + e.getMessage());
    }
}
