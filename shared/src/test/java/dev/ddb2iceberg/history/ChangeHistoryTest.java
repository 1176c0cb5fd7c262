package dev.ddb2iceberg.history;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.config.ConfigurationException;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.function.MergerSettings;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.model.SequenceNumbers;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.testkit.CommitHookCatalog;
import dev.ddb2iceberg.testkit.ExpectedTable;
import dev.ddb2iceberg.testkit.KeyedWorkload;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.TableAssertions;
import dev.ddb2iceberg.testkit.UnknownOutcomeCatalog;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Consumer;
import org.apache.iceberg.PartitionField;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * HISTORY_TABLE: every change the stream delivered, once, in an append-only table, whatever the
 * stream and the merger do: batches delivered twice with other boundaries, a merger crashing
 * between the history's commit and the table's, two appends racing, an unknown commit outcome,
 * new attributes. Real S3 server and SQLite catalog.
 */
@ExtendWith(S3ServerExtension.class)
class ChangeHistoryTest {
    @TempDir
    Path dir;

    private final Map<String, String> env = new HashMap<>();
    private MergerSettings settings;
    private Catalog catalog;
    private StagingStore store;
    /** Every change staged, by sequence number: what the history must hold once each. */
    private final Map<String, Change> streamed = new TreeMap<>(SequenceNumbers::compare);

    private final ExpectedTable model = new ExpectedTable();

    @BeforeEach
    void setUp(EmbeddedS3Server server) {
        env.putAll(new LocalStack(server, S3ServerExtension.newBucket(server), dir).environment("orders"));
        env.put("HISTORY_TABLE", "orders_history");
        settings = MergerSettings.from(new Environment(env));
        catalog = settings.catalog().load();
        store = new StagingStore(server.newClient(), settings.staging());
    }

    private void stage(List<Change> batch) {
        TableAssertions.stage(store, batch);
        batch.forEach(c -> streamed.put(c.sequenceNumber(), c));
        model.apply(batch);
    }

    private Merger merger(MergeOptions options) {
        return new Merger(catalog, settings.table(), store, options);
    }

    /** A merger that runs {@code hook} just before each commit to {@code table}. */
    private Merger merger(String table, Consumer<Table> hook) {
        Catalog hooked = CommitHookCatalog.beforeEachSnapshot(
                catalog, TableIdentifier.of(settings.table().namespace(), table), hook);
        return new Merger(hooked, settings.table(), store, settings.options());
    }

    private void drain(MergeOptions options) {
        for (int i = 0; i < 100 && !store.list().isEmpty(); i++) {
            merger(options).run();
        }
        assertTrue(store.list().isEmpty(), "staged changes left after 100 merges");
    }

    private Table history() {
        return catalog.loadTable(TableIdentifier.of(settings.table().namespace(), "orders_history"));
    }

    private Table table() {
        return catalog.loadTable(TableIdentifier.of(
                settings.table().namespace(), settings.table().name()));
    }

    /** The history holds exactly the streamed changes, each once, as they were. */
    private void assertHistoryHoldsEachChangeOnce(String when) {
        List<Change> rows = ChangeHistory.changes(history());
        Map<String, Change> bySequence = new LinkedHashMap<>();
        List<String> duplicated = new ArrayList<>();
        for (Change c : rows) {
            if (bySequence.put(c.sequenceNumber(), c) != null) {
                duplicated.add(c.sequenceNumber());
            }
        }
        assertEquals(List.of(), duplicated, when + ": changes the history holds twice");
        List<String> missing = streamed.keySet().stream()
                .filter(s -> !bySequence.containsKey(s))
                .toList();
        assertEquals(List.of(), missing, when + ": changes the history lacks");
        for (Change c : streamed.values()) {
            assertEquals(c, bySequence.get(c.sequenceNumber()), when + ": history row of change " + c.sequenceNumber());
        }
        assertEquals(streamed.size(), rows.size(), when + ": history rows");
    }

    private void assertTableEqualsModel() {
        TableAssertions.assertHolds(table(), model);
    }

    @Test
    void everyChangeIsHeldOnceWhenTheStreamDeliversBatchesTwiceWithOtherBoundaries() {
        KeyedWorkload w = new KeyedWorkload(3, 40);
        List<Change> changes = w.next(300);
        for (int from = 0; from < changes.size(); from += 50) {
            stage(changes.subList(from, from + 50));
            // A redelivery after a crash, cut elsewhere (bisected): another staged object, same changes.
            stage(changes.subList(from + 10, from + 35));
            if (from % 100 == 0) {
                drain(settings.options().withMaxChanges(30)); // the copies land in different merges
            }
        }
        drain(settings.options());
        assertHistoryHoldsEachChangeOnce("after overlapping deliveries");
        assertTableEqualsModel();
        Table history = history();
        PartitionField day = history.spec().fields().get(0);
        assertEquals("day", day.transform().toString(), "the history is partitioned by the change's day");
        assertEquals("orders_history", history.name().substring(history.name().lastIndexOf('.') + 1));
    }

    @Test
    void aMergerCrashingBetweenTheHistoryAndTheTableCommitNeitherDuplicatesNorDrops() {
        KeyedWorkload w = new KeyedWorkload(5, 30);
        stage(w.next(80));
        Merger crashing = merger(settings.table().name(), t -> {
            throw new IllegalStateException("injected crash before the table's commit");
        });
        assertThrows(IllegalStateException.class, crashing::run);
        assertEquals(80, ChangeHistory.changes(history()).size(), "the history committed before the crash");
        stage(w.next(40));
        drain(settings.options());
        assertHistoryHoldsEachChangeOnce("after the crash and a rerun");
        assertTableEqualsModel();
    }

    @Test
    void twoAppendsRacingHoldEachChangeOnce() {
        KeyedWorkload w = new KeyedWorkload(9, 30);
        stage(w.next(60));
        boolean[] raced = {false};
        Merger first = merger("orders_history", t -> {
            if (!raced[0]) {
                raced[0] = true;
                merger(settings.options()).run(); // another merger appends the same slice and merges it
            }
        });
        first.run();
        assertTrue(raced[0], "the race never ran");
        drain(settings.options());
        assertHistoryHoldsEachChangeOnce("after two racing appends");
        assertTableEqualsModel();
    }

    @Test
    void anUnknownCommitOutcomeIsSettledByReadingWhatLanded() {
        KeyedWorkload w = new KeyedWorkload(13, 30);
        stage(w.next(20));
        merger(settings.options()).run(); // the tables exist
        stage(w.next(50));
        for (boolean landed : new boolean[] {true, false}) {
            new Merger(new UnknownOutcomeCatalog(catalog, landed), settings.table(), store, settings.options()).run();
            stage(w.next(20));
        }
        drain(settings.options());
        assertHistoryHoldsEachChangeOnce("after unknown commit outcomes");
        assertTableEqualsModel();
    }

    @Test
    void theHistoryTakesTheColumnsTheTableGains() {
        KeyedWorkload w = new KeyedWorkload(17, 20);
        stage(w.next(30));
        drain(settings.options());
        Change withNew = w.upsert(3, Operation.MODIFY);
        Map<String, DdbValue> image = new LinkedHashMap<>(withNew.newImage());
        image.put("coupon", new DdbValue.S("WINTER"));
        Change c = new Change(
                withNew.keys(),
                Operation.MODIFY,
                image,
                withNew.sequenceNumber(),
                withNew.approximateCreationMillis(),
                false);
        stage(List.of(c, w.remove(4, true)));
        drain(settings.options());
        assertNotNull(table().schema().findField("coupon"));
        assertNotNull(history().schema().findField("coupon"), "the history follows the table's new column");
        assertHistoryHoldsEachChangeOnce("after a new attribute");
        assertTrue(
                ChangeHistory.changes(history()).stream()
                        .anyMatch(h -> h.ttlExpiry() && h.operation() == Operation.REMOVE),
                "a TTL removal is in the history, flagged");
    }

    @Test
    void aHistoryTableNamedAsTheTableItselfIsRefused() {
        env.put("HISTORY_TABLE", "orders");
        ConfigurationException e =
                assertThrows(ConfigurationException.class, () -> MergerSettings.from(new Environment(env)));
        assertTrue(e.getMessage().contains("HISTORY_TABLE='orders'"), e.getMessage());
    }
}
