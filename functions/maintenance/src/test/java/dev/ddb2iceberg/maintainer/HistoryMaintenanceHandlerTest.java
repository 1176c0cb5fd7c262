package dev.ddb2iceberg.maintainer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.function.MaintenanceSettings;
import dev.ddb2iceberg.history.ChangeHistory;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.SequenceNumbers;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.testkit.DatedMerges;
import dev.ddb2iceberg.testkit.KeyedWorkload;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.StreamEvents;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Maintenance of the change history (HISTORY_TABLE) through the maintenance function's handler: the
 * scheduled run compacts its small files in sequence order and drops the days
 * HISTORY_RETENTION_DAYS no longer keeps, and reports it beside the table's own result. Real S3
 * server and SQLite catalog. The library's side is {@code dev.ddb2iceberg.maintenance.HistoryMaintenanceTest}.
 */
@ExtendWith(S3ServerExtension.class)
class HistoryMaintenanceHandlerTest {
    /** Merges that leave their small files and delete files, as before folding: work for maintenance. */
    private static final MergeOptions UNFOLDED = MergeOptions.DEFAULTS.withRewriteFilesBelow(0);

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Instant DAY_ONE = Instant.parse("2026-11-20T10:00:00Z");

    @TempDir
    Path dir;

    private MaintenanceSettings settings;
    private Catalog catalog;
    private StagingStore store;

    @BeforeEach
    void setUp(EmbeddedS3Server server) {
        Map<String, String> env =
                new LocalStack(server, S3ServerExtension.newBucket(server), dir).environment("orders");
        env.put("HISTORY_TABLE", "orders_history");
        env.put("HISTORY_RETENTION_DAYS", "3");
        settings = MaintenanceSettings.from(new Environment(env));
        catalog = settings.catalog().load();
        store = new StagingStore(server.newClient(), settings.staging());
    }

    /** Changes made on {@code day}, merged one small slice at a time (a history file per merge). */
    private List<Change> mergeChangesOn(Instant day, KeyedWorkload w, int merges) {
        return DatedMerges.mergeChangesOn(
                day, w, merges, store, () -> new Merger(catalog, settings.table(), store, UNFOLDED));
    }

    @Test
    void theScheduledRunCompactsTheHistoryAndDropsTheDaysItNoLongerKeeps() throws Exception {
        KeyedWorkload w = new KeyedWorkload(21, 50);
        mergeChangesOn(DAY_ONE, w, 6);
        List<Change> kept = mergeChangesOn(DAY_ONE.plus(Duration.ofDays(5)), w, 6);
        Table history = catalog.loadTable(TableIdentifier.of(settings.table().namespace(), "orders_history"));
        int filesBefore = Integer.parseInt(history.currentSnapshot().summary().get("total-data-files"));
        assertEquals(12, filesBefore, "one history file per merge");

        // Six days after day one: three days of retention keep only the second day's changes.
        Clock clock = Clock.fixed(DAY_ONE.plus(Duration.ofDays(6)), ZoneOffset.UTC);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        new MaintenanceHandler(settings, catalog, clock)
                .handleRequest(new ByteArrayInputStream("{}".getBytes()), out, null);
        JsonNode result = JSON.readTree(out.toByteArray());
        JsonNode h = result.path("history");
        assertTrue(h.isObject(), "the run reports the history beside the table: " + result);
        assertEquals(0, h.get("conflicts").size(), h.toString());

        history.refresh();
        List<Change> rows = ChangeHistory.changes(history);
        List<String> expected = kept.stream()
                .map(Change::sequenceNumber)
                .sorted(SequenceNumbers::compare)
                .toList();
        assertEquals(
                expected,
                rows.stream().map(Change::sequenceNumber).toList(),
                "the history keeps exactly the retained day's changes, each once");
        assertEquals(
                kept.stream()
                        .sorted((a, b) -> SequenceNumbers.compare(a.sequenceNumber(), b.sequenceNumber()))
                        .toList(),
                rows,
                "the retained changes as they were");
        int filesAfter = Integer.parseInt(history.currentSnapshot().summary().get("total-data-files"));
        assertEquals(1, filesAfter, "the retained day's six small files compacted into one (files before: 12)");
        assertTrue(h.get("compaction").get("filesRewritten").asInt() >= 5, h.toString());

        // A staged copy of a dropped day's change (a batch delivered again, late) is not appended:
        // the history could no longer tell it from a new change.
        Change late = w.next(1).get(0);
        Change dropped = new Change(
                late.keys(),
                late.operation(),
                late.newImage(),
                late.sequenceNumber(),
                DAY_ONE.toEpochMilli(),
                late.ttlExpiry());
        new BatchStager(store).stage(StreamEvents.batch(List.of(dropped)).getRecords());
        new Merger(catalog, settings.table(), store, UNFOLDED).run();
        assertEquals(
                expected,
                ChangeHistory.changes(history).stream()
                        .map(Change::sequenceNumber)
                        .toList(),
                "a change older than the days the history keeps is not appended");
    }
}
