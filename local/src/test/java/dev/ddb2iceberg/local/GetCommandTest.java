package dev.ddb2iceberg.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.ProjectFiles;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.function.MergerSettings;
import dev.ddb2iceberg.local.AsMain.Run;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbJson;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.StreamEvents;
import java.io.Closeable;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.Schema;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code get} against a table the merger wrote on the embedded S3 server and an SQLite catalog,
 * with the settings a user passes in an env-vars file.
 */
@ExtendWith(S3ServerExtension.class)
class GetCommandTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;

    private Path envVars;
    private Map<String, String> env;
    private MergerSettings settings;
    private EmbeddedS3Server server;

    @BeforeEach
    void setUp(EmbeddedS3Server server) throws Exception {
        this.server = server;
        env = new LinkedHashMap<>(
                new LocalStack(server, S3ServerExtension.newBucket(server), dir).environment("orders"));
        envVars = dir.resolve("env.json");
        JSON.writeValue(envVars.toFile(), Map.of("Parameters", env));
        settings = MergerSettings.from(new Environment(env));
    }

    private static Run get(Path envVars, String... key) {
        String[] args = new String[key.length + 5];
        args[0] = "get";
        System.arraycopy(key, 0, args, 1, key.length);
        args[key.length + 1] = "-n";
        args[key.length + 2] = envVars.toString();
        args[key.length + 3] = "-t";
        args[key.length + 4] = ProjectFiles.root().resolve("template.yaml").toString();
        return AsMain.run(args);
    }

    private Run get(String... key) {
        return get(envVars, key);
    }

    /** Stages the items as inserts and merges them, as the stager and merger functions would. */
    private long merge(List<Map<String, DdbValue>> items) throws IOException {
        StagingStore store = new StagingStore(server.newClient(), settings.staging());
        long seq = 100_000_000_000_000_000L;
        List<Change> changes = new ArrayList<>();
        for (Map<String, DdbValue> item : items) {
            Map<String, DdbValue> keys = new LinkedHashMap<>();
            keys.put("customer_id", item.get("customer_id"));
            keys.put("order_id", item.get("order_id"));
            changes.add(new Change(keys, Operation.INSERT, item, Long.toString(seq++), 1_764_460_800_000L, false));
        }
        assertTrue(new BatchStager(store)
                .stage(StreamEvents.batch(changes).getRecords())
                .complete());
        Catalog catalog = settings.catalog().load();
        try (Closeable closing = (Closeable) catalog) {
            new Merger(catalog, settings.table(), store, settings.options()).run();
            return catalog.loadTable(TableIdentifier.of("ddb2iceberg", "orders"))
                    .currentSnapshot()
                    .snapshotId();
        }
    }

    private static Map<String, DdbValue> order(String customer, String order, String status) {
        Map<String, DdbValue> item = new LinkedHashMap<>();
        item.put("customer_id", new DdbValue.S(customer));
        item.put("order_id", new DdbValue.N(order));
        item.put("status", new DdbValue.S(status));
        return item;
    }

    private static Map<String, DdbValue> readItem(String json) throws IOException {
        try (JsonParser p = new JsonFactory().createParser(json)) {
            p.nextToken();
            return DdbJson.readItem(p);
        }
    }

    @Test
    void aStoredItemComesBackEqualWithItsNestedValuesInGetItemsShape() throws Exception {
        Map<String, DdbValue> nested = order("C-1", "7", "SHIPPED");
        nested.put("total", new DdbValue.N("1234.5"));
        nested.put("gift", new DdbValue.Bool(true));
        nested.put("note", DdbValue.Null.INSTANCE);
        nested.put("tags", new DdbValue.SS(List.of("new", "priority")));
        nested.put("receipt", new DdbValue.B(new byte[] {1, 2, 3}));
        nested.put(
                "lines",
                new DdbValue.L(List.of(new DdbValue.M(Map.of(
                        "sku",
                        new DdbValue.S("A-1"),
                        "qty",
                        new DdbValue.N("2"),
                        "dims",
                        new DdbValue.M(Map.of("w", new DdbValue.N("10.25"))))))));
        long snapshot = merge(List.of(nested, order("C-2", "8", "NEW")));

        Run r = get("C-1", "7");
        assertEquals(0, r.exit(), r.err());
        assertEquals(nested, readItem(JSON.readTree(r.out()).get("Item").toString()), r.out());
        assertTrue(r.err().contains("ddb2iceberg.orders at snapshot " + snapshot), r.err());

        // Exactly as `aws dynamodb get-item` lays it out.
        Run plain = get("C-2", "8");
        assertEquals(0, plain.exit(), plain.err());
        assertEquals("""
        {
            "Item": {
                "customer_id": {
                    "S": "C-2"
                },
                "order_id": {
                    "N": "8"
                },
                "status": {
                    "S": "NEW"
                }
            }
        }
        """, plain.out());

        Run sameNumber = get("C-1", "7.0");
        assertEquals(0, sameNumber.exit(), "7.0 is the number 7, as in DynamoDB: " + sameNumber.err());
    }

    @Test
    void anItemOfCamelCaseAttributesComesBackWithItsOwnNamesFromLowerCaseColumns() throws Exception {
        env.put("PARTITION_KEY", "customerId"); // COLUMN_NAMES is left to its default, lower
        JSON.writeValue(envVars.toFile(), Map.of("Parameters", env));
        settings = MergerSettings.from(new Environment(env));
        Map<String, DdbValue> keys = new LinkedHashMap<>();
        keys.put("customerId", new DdbValue.S("C-1"));
        keys.put("OrderDate", new DdbValue.N("20261201"));
        Map<String, DdbValue> item = new LinkedHashMap<>(keys);
        item.put("Status", new DdbValue.S("SHIPPED"));
        item.put("status", new DdbValue.S("a case twin"));
        item.put("orderTotal", new DdbValue.N("12.5"));
        item.put("gift wrap", new DdbValue.Bool(true));
        item.put(
                "ShipTo",
                new DdbValue.M(Map.of("ZipCode", new DdbValue.S("75001"), "line 1", new DdbValue.S("1 rue"))));
        StagingStore store = new StagingStore(server.newClient(), settings.staging());
        Change insert = new Change(keys, Operation.INSERT, item, "100000000000000000001", 1_764_460_800_000L, false);
        assertTrue(new BatchStager(store)
                .stage(StreamEvents.batch(List.of(insert)).getRecords())
                .complete());
        Schema schema;
        Catalog catalog = settings.catalog().load();
        try (Closeable closing = (Closeable) catalog) {
            new Merger(catalog, settings.table(), store, settings.options()).run();
            schema = catalog.loadTable(TableIdentifier.of("ddb2iceberg", "orders"))
                    .schema();
        }
        assertTrue(
                schema.findField("customerid") != null && schema.findField("shipto.zipcode") != null,
                () -> "lower-case columns: " + schema);

        Run r = get("C-1", "20261201");
        assertEquals(0, r.exit(), r.err());
        assertEquals(item, readItem(JSON.readTree(r.out()).get("Item").toString()), r.out());
        assertTrue(r.out().contains("\"customerId\"") && r.out().contains("\"ZipCode\""), r.out());
    }

    @Test
    void aMissingItemIsAMessageOnStderrAndExitCode1() throws IOException {
        long snapshot = merge(List.of(order("C-1", "7", "SHIPPED")));
        Run r = get("C-1", "99");
        assertEquals(1, r.exit(), r.out());
        assertEquals("", r.out());
        assertEquals(
                "No item with customer_id=C-1, order_id=99 in ddb2iceberg.orders (snapshot " + snapshot + ")",
                r.err().strip());

        Run fraction = get("C-1", "7.5");
        assertEquals(1, fraction.exit(), "a number, but not one the key column holds: " + fraction.err());
        assertEquals(
                "No item with customer_id=C-1, order_id=7.5 in ddb2iceberg.orders (snapshot " + snapshot + "): its"
                        + " order_id column (long) cannot hold {\"N\":\"7.5\"}; the merger sets such changes aside under"
                        + " quarantine/merger/.",
                fraction.err().strip());
    }

    @Test
    void malformedKeysAreUserErrorsSayingWhatToGive() throws IOException {
        merge(List.of(order("C-1", "7", "SHIPPED")));

        Run notANumber = get("C-1", "seven");
        assertEquals(2, notANumber.exit(), notANumber.err());
        assertTrue(
                notANumber
                        .err()
                        .startsWith("Error: order_id is a number key (N), and 'seven' is not a DynamoDB number"),
                notANumber.err());
        assertTrue(notANumber.err().contains("such as 7 or -12.5"), notANumber.err());

        Run noSortKey = get("C-1");
        assertEquals(2, noSortKey.exit(), noSortKey.err());
        assertEquals(
                "Error: ddb2iceberg.orders has a sort key, order_id (N): give it after the partition key, as in:"
                        + " get <customer_id> <order_id>",
                noSortKey.err().strip());
    }

    @Test
    void aBinaryKeyIsGivenInBase64() {
        assertEquals(new DdbValue.B(new byte[] {1, 2, 3}), GetCommand.parse("sk", "B", "AQID"));
        UserError bad = assertThrows(UserError.class, () -> GetCommand.parse("sk", "B", "not base64!"));
        assertTrue(
                bad.getMessage().startsWith("sk is a binary key (B), and 'not base64!' is not base64"),
                bad.getMessage());
    }

    @Test
    void withoutTheLocalStackRunningTheErrorSaysToStartIt() throws Exception {
        Map<String, String> env = new LinkedHashMap<>(new LocalStack(server, "b", dir).environment("orders"));
        env.put("CATALOG_URI", "jdbc:sqlite:" + dir.resolve("not-started/catalog.db"));
        Path gone = dir.resolve("gone.json");
        JSON.writeValue(gone.toFile(), Map.of("Parameters", env));
        Run r = get(gone, "C-1", "7");
        assertEquals(2, r.exit(), r.err());
        assertTrue(
                r.err()
                        .startsWith(
                                "Error: cannot open the catalog jdbc:sqlite:" + dir.resolve("not-started/catalog.db")),
                r.err());
        assertTrue(
                r.err()
                        .strip()
                        .endsWith("for the local stack, start it first: ./ddb2iceberg up --work-dir "
                                + dir.resolve("not-started") + " --port "
                                + server.endpoint().getPort()
                                + " --bucket b"),
                r.err());

        int closedPort;
        try (ServerSocket socket = new ServerSocket(0)) {
            closedPort = socket.getLocalPort(); // free again once closed: nothing listens there
        }
        env.put("S3_ENDPOINT", "http://127.0.0.1:" + closedPort);
        JSON.writeValue(gone.toFile(), Map.of("Parameters", env));
        Run noS3 = get(gone, "C-1", "7");
        assertEquals(2, noS3.exit(), noS3.err());
        assertEquals(
                "Error: nothing answers at http://127.0.0.1:" + closedPort
                        + " (Connection refused), the S3_ENDPOINT of "
                        + gone + ": the local stack is not running. Start it first, in another terminal:"
                        + " ./ddb2iceberg up --work-dir " + dir.resolve("not-started") + " --port " + closedPort
                        + " --bucket b",
                noS3.err().strip());
    }
}
