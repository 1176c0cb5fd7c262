package dev.ddb2iceberg.merge;

import dev.ddb2iceberg.config.RemovalPolicy;
import dev.ddb2iceberg.lookup.LiveRow;
import dev.ddb2iceberg.lookup.LiveRowLookup;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.SequenceNumbers;
import dev.ddb2iceberg.removals.KeptRows;
import dev.ddb2iceberg.removals.RemovalsFile;
import dev.ddb2iceberg.table.TableLayout;
import dev.ddb2iceberg.util.Slices;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.Record;

/**
 * The second stage of applying changes: given each key's newest change and its live rows, what to
 * write and what to delete. A change the table already holds (or a newer one), or of an item
 * removed since, is stale and skipped. Every live row of a changed key is deleted; it counts as
 * replaced when the key gets a new row (an upsert, or a removal the policy keeps as a marked row),
 * else its item counts as removed (once, however many rows it had).
 */
final class RowPlan {
    /** The new rows: upserts' items and the rows removals keep. */
    final List<Record> rows = new ArrayList<>();
    /** The live rows to delete. */
    final List<LiveRow> toDelete = new ArrayList<>();
    /** The changes that changed the table. */
    final List<Change> applied = new ArrayList<>();
    /** Every change the removals file must know of (all but the stale ones), by key. */
    final Map<List<Object>, Change> removalsSeen = new HashMap<>();
    /** Keys left without a row. */
    final List<List<Object>> removedKeys = new ArrayList<>();
    /** Removals whose rows are kept (TTL_EXPIRIES=mark, DELETES=soft). */
    int keptRemovals;

    long stale;
    long rowsReplaced;
    long itemsRemoved;

    private RowPlan() {}

    static RowPlan of(
            Table table,
            TableLayout layout,
            RemovalPolicy policy,
            KeyChanges changes,
            LiveRowLookup.Found found,
            RemovalsFile removals,
            ExecutorService pool) {
        RowPlan plan = new RowPlan();
        KeptRows kept = new KeptRows(table, layout);
        List<Change> upserts = new ArrayList<>();
        for (Map.Entry<List<Object>, Change> e : changes.latest.entrySet()) {
            List<Object> key = e.getKey();
            Change c = e.getValue();
            List<LiveRow> live = found.rows().getOrDefault(key, List.of());
            String padded = SequenceNumbers.pad(c.sequenceNumber());
            if (live.stream().anyMatch(r -> r.paddedSequence().compareTo(padded) >= 0)
                    || (live.isEmpty() && removals.removedAfter(key, c.sequenceNumber()))) {
                plan.stale++; // the table already holds this change or a newer one, or removed the item since
                continue;
            }
            plan.removalsSeen.put(key, c);
            if (c.operation().isUpsert()) {
                upserts.add(c);
                plan.rowsReplaced += live.size();
            } else if (policy.keepsRow(c.ttlExpiry()) && keeps(kept, removals, key, c, changes, live)) {
                plan.rowsReplaced += live.size(); // the item's row is written again, marked
            } else if (live.isEmpty()) {
                continue; // removing an item the table does not have: only the removals file notes it
            } else {
                plan.itemsRemoved++;
                plan.removedKeys.add(key);
            }
            plan.toDelete.addAll(live);
            plan.applied.add(c);
        }
        // Items to rows (each value converted to its column's type) on every core.
        plan.rows.addAll(Slices.map(upserts, pool, layout::toRow, "turning changes into rows"));
        plan.rows.addAll(kept.rows(pool));
        plan.keptRemovals = kept.size();
        return plan;
    }

    /** Whether removal {@code c} keeps its item's row (noted in {@code kept}); see {@link KeptRows#keep}. */
    private static boolean keeps(
            KeptRows kept, RemovalsFile removals, List<Object> key, Change c, KeyChanges changes, List<LiveRow> live) {
        Change upsert = changes.latestUpsert.get(key);
        return kept.keep(
                c,
                upsert,
                changes.latestDeleting.get(key),
                live,
                upsert != null && removals.removedAfter(key, upsert.sequenceNumber()));
    }
}
