package dev.ddb2iceberg.table;

import dev.ddb2iceberg.commit.CommitProtocol;
import dev.ddb2iceberg.config.RemovalPolicy;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.util.Slices;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import org.apache.iceberg.Table;
import org.apache.iceberg.UpdateSchema;
import org.apache.iceberg.types.Types;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Typed columns for attributes never seen before, and the removal policy's mark columns, added in a
 * commit of their own before the changes that need them are written. Concurrent writers (the
 * parallel load's workers, two mergers) may add columns at the same moment: a lost race is planned
 * again from the new schema, where the other writer's columns may already be what this one needs.
 */
public final class SchemaEvolution {
    private static final Logger LOG = LoggerFactory.getLogger(SchemaEvolution.class);
    /** Schema commits a writer tries before giving up (each loses only to another schema change). */
    private static final int ATTEMPTS = 20;

    private SchemaEvolution() {}

    /** Whether the table's columns already hold every attribute of these changes (no schema change needed). */
    public static boolean covers(Table table, List<Change> changes, TableSettings tableSettings) {
        return needed(table, newImages(changes), tableSettings).isEmpty();
    }

    /** Adds the columns these changes need that the table lacks; returns the table, refreshed if it changed. */
    public static Table evolve(Table table, List<Change> changes, TableSettings tableSettings) {
        return evolve(table, changes, tableSettings, null);
    }

    /**
     * The same, checking the changes on every core of {@code pool} first: almost every merge needs
     * no new column, and then each slice of the images says so on its own (a slice needing nothing
     * has no attribute the table lacks and no value its column cannot hold), so only a merge whose
     * slices ask for something works out the changes over all the images together.
     */
    public static Table evolve(Table table, List<Change> changes, TableSettings tableSettings, ExecutorService pool) {
        List<Map<String, DdbValue>> images = newImages(changes);
        if (Slices.perSlice(
                        images,
                        pool,
                        slice -> needed(table, slice, tableSettings).isEmpty(),
                        "checking the schema")
                .stream()
                .allMatch(Boolean::booleanValue)) {
            return table;
        }
        CommitProtocol protocol = new CommitProtocol(
                "changing the schema of " + table.name(), ATTEMPTS, "Nothing was merged; a later run tries again.");
        return protocol.run(table, attempt -> {
                    TableLayout.SchemaChanges needed = needed(table, images, tableSettings);
                    if (needed.isEmpty()) {
                        return table;
                    }
                    UpdateSchema update = table.updateSchema();
                    needed.applyTo(update);
                    update.commit();
                    table.refresh();
                    LOG.info("Schema: {}", needed);
                    return table;
                })
                .value();
    }

    private static List<Map<String, DdbValue>> newImages(List<Change> changes) {
        List<Map<String, DdbValue>> images = new ArrayList<>();
        for (Change c : changes) {
            if (c.newImage() != null) {
                images.add(c.newImage());
            }
        }
        return images;
    }

    /** The columns these images need that the table lacks (new field ids follow the schema's highest). */
    private static TableLayout.SchemaChanges needed(
            Table table, List<Map<String, DdbValue>> images, TableSettings tableSettings) {
        int[] placeholderIds = {table.schema().highestFieldId()};
        TableLayout.SchemaChanges changes =
                TableLayout.of(table).schemaChanges(images, tableSettings.columnTypes(), () -> ++placeholderIds[0]);
        // The removal policy's mark columns exist from the first merge under it, so queries that
        // filter on them work before any removal comes.
        List<TableLayout.Addition> marks = new ArrayList<>();
        RemovalPolicy policy = tableSettings.removals();
        for (boolean ttl : new boolean[] {true, false}) {
            String column = policy.markColumn(ttl);
            if (column != null && table.schema().findField(column) == null) {
                marks.add(new TableLayout.Addition(
                        null,
                        column,
                        Types.TimestampType.withZone(),
                        ttl
                                ? "when DynamoDB's TTL expired the item (TTL_EXPIRIES=mark); null while it lives"
                                : "when a user deleted the item (DELETES=soft); null while it lives"));
            }
        }
        if (marks.isEmpty()) {
            return changes;
        }
        marks.addAll(0, changes.additions());
        return new TableLayout.SchemaChanges(marks, changes.promotions());
    }
}
