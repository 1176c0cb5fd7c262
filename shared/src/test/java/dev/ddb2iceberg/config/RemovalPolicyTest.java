package dev.ddb2iceberg.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.function.MergerSettings;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.merge.MergeResult;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.testkit.ExpectedTable;
import dev.ddb2iceberg.testkit.KeyedWorkload;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.LogCapture;
import dev.ddb2iceberg.testkit.StreamEvents;
import dev.ddb2iceberg.testkit.TableItems;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * TTL_EXPIRIES and DELETES: what removals do to rows, on generated workloads with TTL expiries and
 * user deletes, read back and compared with {@link ExpectedTable}'s model of each policy, marks
 * and all; and a policy changed on a live table applies from the next merge on.
 */
@ExtendWith(S3ServerExtension.class)
class RemovalPolicyTest {
    @TempDir
    Path dir;

    private final Map<String, String> env = new HashMap<>();
    private MergerSettings settings;
    private Catalog catalog;
    private StagingStore store;
    private final ExpectedTable model = new ExpectedTable();

    @BeforeEach
    void setUp(EmbeddedS3Server server) {
        env.putAll(new LocalStack(server, S3ServerExtension.newBucket(server), dir).environment("orders"));
        configure();
        store = new StagingStore(server.newClient(), settings.staging());
    }

    private void configure() {
        settings = MergerSettings.from(new Environment(env));
        catalog = settings.catalog().load();
    }

    private void use(String ttlExpiries, String deletes) {
        env.put("TTL_EXPIRIES", ttlExpiries);
        env.put("DELETES", deletes);
        configure();
    }

    /** Stages the changes in batches and merges them under the current policy; the model follows. */
    private MergeResult stageAndMerge(List<Change> changes, MergeOptions options) {
        for (int from = 0; from < changes.size(); from += 25) {
            List<Change> batch = changes.subList(from, Math.min(changes.size(), from + 25));
            BatchStager.Result r =
                    new BatchStager(store).stage(StreamEvents.batch(batch).getRecords());
            assertTrue(r.complete(), "staging failed: " + r.failure());
        }
        MergeResult last = null;
        for (int i = 0; i < 100 && !store.list().isEmpty(); i++) {
            last = new Merger(catalog, settings.table(), store, options).run();
        }
        assertTrue(store.list().isEmpty(), "staged changes left after 100 merges");
        model.apply(changes, settings.table().removals());
        return last;
    }

    private Table table() {
        return catalog.loadTable(TableIdentifier.of(
                settings.table().namespace(), settings.table().name()));
    }

    private void assertTableEqualsModel(String when) {
        Table table = table();
        var expected = model.items();
        var actual = TableItems.read(table);
        assertEquals(expected.size(), actual.size(), () -> when + ": rows; " + ExpectedTable.diff(expected, actual));
        assertTrue(expected.equals(actual), () -> when + ": " + ExpectedTable.diff(expected, actual));
        assertEquals(model.marks(), TableItems.marks(table), when + ": removal marks (key -> column -> epoch ms)");
    }

    @ParameterizedTest(name = "TTL_EXPIRIES={0}, DELETES={1}, key index {2}")
    @CsvSource({"keep,hard,on", "mark,hard,off", "delete,soft,on", "mark,soft,on", "keep,soft,off"})
    void eachPolicyGivesItsModelsRows(String ttl, String deletes, String keyIndex) {
        use(ttl, deletes);
        env.put("KEY_INDEX", keyIndex);
        configure();
        KeyedWorkload w = new KeyedWorkload(ttl.hashCode() * 31L + deletes.hashCode(), 60);
        for (int round = 0; round < 4; round++) {
            // Small slices: a removal's item comes now from the same merge, now from the table's row.
            stageAndMerge(w.next(150), settings.options().withMaxChanges(round % 2 == 0 ? 40 : 1000));
            assertTableEqualsModel("after round " + round);
        }
        boolean marksTtl = ttl.equals("mark");
        boolean soft = deletes.equals("soft");
        assertEquals(marksTtl, table().schema().findField(RemovalPolicy.EXPIRED_AT) != null, "expired-at column");
        assertEquals(soft, table().schema().findField(RemovalPolicy.DELETED_AT) != null, "deleted-at column");
        if (marksTtl || soft) {
            assertTrue(!model.marks().isEmpty(), "the workload marked no row: the test proves nothing");
        }
    }

    @Test
    void aSoftDeletedItemKeepsItsLastImageAndARe_insertClearsTheMark() {
        use("delete", "soft");
        KeyedWorkload w = new KeyedWorkload(7, 10);
        Change put = w.upsert(1, Operation.INSERT);
        stageAndMerge(List.of(put, w.upsert(2, Operation.INSERT)), settings.options());
        Change delete = w.remove(1, false);
        stageAndMerge(List.of(delete), settings.options()); // the item comes from the table's data file
        Map<String, DdbValue> key = w.key(1);
        assertEquals(
                put.newImage(), TableItems.read(table()).get(key), "a soft-deleted row keeps the item's last image");
        assertEquals(
                Map.of(RemovalPolicy.DELETED_AT, delete.approximateCreationMillis()),
                TableItems.marks(table()).get(key));

        Change again = w.upsert(1, Operation.INSERT);
        stageAndMerge(List.of(again), settings.options());
        assertEquals(again.newImage(), TableItems.read(table()).get(key));
        assertNull(TableItems.marks(table()).get(key), "a re-insert clears the deletion mark");
        assertTableEqualsModel("at the end");
    }

    @Test
    void aPolicyChangedOnALiveTableAppliesFromTheNextMergeAndIsLogged() {
        KeyedWorkload w = new KeyedWorkload(11, 40);
        stageAndMerge(w.next(200), settings.options()); // today's default: removals delete rows
        assertTableEqualsModel("under delete/hard");
        int rowsBefore = TableItems.read(table()).size();

        use("mark", "soft");
        try (LogCapture logs = LogCapture.json()) {
            stageAndMerge(w.next(200), settings.options());
            List<String> messages =
                    logs.all().stream().map(l -> l.path("message").asText()).toList();
            assertTrue(
                    messages.stream()
                            .anyMatch(m -> m.startsWith("TTL_EXPIRIES of") && m.contains("from delete to mark")),
                    "no log line says TTL_EXPIRIES changed: " + messages);
            assertTrue(
                    messages.stream().anyMatch(m -> m.startsWith("DELETES of") && m.contains("from hard to soft")),
                    "no log line says DELETES changed: " + messages);
        }
        assertTableEqualsModel("after switching to mark/soft");
        assertEquals("mark", table().properties().get(PipelineProperties.TTL_EXPIRIES));
        assertTrue(TableItems.read(table()).size() > rowsBefore / 2, "rows");

        use("keep", "hard");
        stageAndMerge(w.next(200), settings.options());
        assertTableEqualsModel("after switching to keep/hard");

        use("delete", "hard"); // back: rows kept or marked before stay as they are
        stageAndMerge(w.next(200), settings.options());
        assertTableEqualsModel("after switching back to delete/hard");
        assertNotNull(table().schema().findField(RemovalPolicy.DELETED_AT), "the mark columns stay");
    }

    @Test
    void aBadPolicyIsRefusedNamingTheVariableAndTheChoices() {
        env.put("TTL_EXPIRIES", "archive");
        ConfigurationException e = assertThrows(ConfigurationException.class, this::configure);
        assertTrue(
                e.getMessage().contains("TTL_EXPIRIES='archive'")
                        && e.getMessage().contains("mark"),
                e.getMessage());
        env.put("TTL_EXPIRIES", "keep");
        env.put("DELETES", "logical");
        e = assertThrows(ConfigurationException.class, this::configure);
        assertTrue(
                e.getMessage().contains("DELETES='logical'") && e.getMessage().contains("soft"), e.getMessage());
    }
}
