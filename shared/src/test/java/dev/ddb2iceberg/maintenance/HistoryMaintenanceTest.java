package dev.ddb2iceberg.maintenance;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.function.MaintenanceSettings;
import dev.ddb2iceberg.history.ChangeHistory;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.testkit.DatedMerges;
import dev.ddb2iceberg.testkit.KeyedWorkload;
import dev.ddb2iceberg.testkit.LocalStack;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.EnumSet;
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
 * Maintenance of the change history (HISTORY_TABLE): the scheduled run compacts its small files in
 * sequence order and drops the days HISTORY_RETENTION_DAYS no longer keeps, and reports it beside
 * the table's own result. Real S3 server and SQLite catalog.
 */
@ExtendWith(S3ServerExtension.class)
class HistoryMaintenanceTest {
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
    void retentionDropsOldDaysInAnS3TableBucketTooWhereSnapshotExpiryIsLeftToTheBucket() {
        KeyedWorkload w = new KeyedWorkload(22, 50);
        mergeChangesOn(DAY_ONE, w, 2);
        List<Change> kept = mergeChangesOn(DAY_ONE.plus(Duration.ofDays(5)), w, 2);
        Table history = catalog.loadTable(TableIdentifier.of(settings.table().namespace(), "orders_history"));
        new Maintenance(
                        history,
                        settings.options().forHistory(),
                        settings.stagingUri(),
                        Clock.fixed(DAY_ONE.plus(Duration.ofDays(6)), ZoneOffset.UTC))
                .managedStorage(true)
                .run(EnumSet.of(MaintenanceTask.EXPIRE), false);
        assertEquals(kept.size(), ChangeHistory.changes(history).size(), "only the retained day's changes are left");
    }
}
