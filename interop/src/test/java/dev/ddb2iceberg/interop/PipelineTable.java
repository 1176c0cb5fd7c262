package dev.ddb2iceberg.interop;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.function.MaintenanceSettings;
import dev.ddb2iceberg.function.MergerSettings;
import dev.ddb2iceberg.maintenance.Maintenance;
import dev.ddb2iceberg.maintenance.MaintenanceResult;
import dev.ddb2iceberg.maintenance.MaintenanceTask;
import dev.ddb2iceberg.merge.MergeResult;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.table.TableLayout;
import dev.ddb2iceberg.testkit.ExpectedTable;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.TableItems;
import java.time.Clock;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * One table the pipeline keeps on the local stack: changes are staged as the stager stages them
 * and merged and compacted by the merger's and maintenance's own code, with the settings the
 * functions would read; {@link #model} is the source table those changes describe.
 */
final class PipelineTable {
    final String name;
    final Map<String, String> env;
    final ExpectedTable model = new ExpectedTable();
    /** Every change staged, in stream order: what a change history must hold. */
    final List<Change> streamed = new ArrayList<>();

    final MergerSettings settings;
    final Catalog catalog;
    final StagingStore store;

    PipelineTable(LocalStack stack, String name, Map<String, String> overrides) {
        this.name = name;
        this.env = new LinkedHashMap<>(stack.environment(name));
        env.put("STAGING_PREFIX", "staging/" + name + "/"); // each table its own stream
        env.putAll(overrides);
        this.settings = MergerSettings.from(new Environment(env));
        this.catalog = settings.catalog().load();
        this.store = new StagingStore(stack.server().newClient(), settings.staging());
    }

    /** Stages the changes in Lambda-sized batches and records them in the model. */
    void stage(List<Change> changes) {
        for (int i = 0; i < changes.size(); i += 100) {
            List<Change> batch = changes.subList(i, Math.min(changes.size(), i + 100));
            BatchStager.Result r = new BatchStager(store)
                    .stage(dev.ddb2iceberg.testkit.StreamEvents.batch(batch).getRecords());
            assertTrue(r.complete(), () -> "staging failed: " + r.failure());
            model.apply(batch, settings.table().removals());
            streamed.addAll(batch);
        }
    }

    MergeResult merge() {
        return new Merger(catalog, settings.table(), store, settings.options()).run();
    }

    MaintenanceResult compact() {
        MaintenanceSettings maintenance = MaintenanceSettings.from(new Environment(env));
        return new Maintenance(table(), maintenance.options(), maintenance.stagingUri(), Clock.systemUTC())
                .run(EnumSet.of(MaintenanceTask.COMPACT), false);
    }

    /** Orphan removal as maintenance runs it, at {@code clock}'s time (past the files' minimum age). */
    MaintenanceResult removeOrphans(Clock clock) {
        MaintenanceSettings maintenance = MaintenanceSettings.from(new Environment(env));
        return new Maintenance(table(), maintenance.options(), maintenance.stagingUri(), clock)
                .run(EnumSet.of(MaintenanceTask.ORPHANS), false);
    }

    Table table() {
        return catalog.loadTable(TableIdentifier.of(settings.table().namespace(), name));
    }

    /** The name Spark knows the table by, through the README's catalog settings. */
    String sparkName() {
        return settings.catalog().name() + "." + settings.table().namespace() + "." + name;
    }

    TableLayout layout() {
        return TableLayout.of(table());
    }

    /** What Iceberg's own reader sees equals the model: the precondition of every Spark comparison. */
    void assertIcebergReadsTheModel() {
        var actual = TableItems.read(table());
        assertTrue(
                model.items().equals(actual),
                () -> name + " read by Iceberg's own reader: " + ExpectedTable.diff(model.items(), actual));
    }

    long summary(String property) {
        return Long.parseLong(table().currentSnapshot().summary().getOrDefault(property, "0"));
    }
}
