package dev.ddb2iceberg.merge;

import dev.ddb2iceberg.config.RemovalPolicy;
import dev.ddb2iceberg.lookup.LiveRow;
import dev.ddb2iceberg.lookup.LiveRowLookup;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.SequenceNumbers;
import dev.ddb2iceberg.removals.KeptRows;
import dev.ddb2iceberg.removals.RemovalsIndex;
import dev.ddb2iceberg.table.TableLayout;
import dev.ddb2iceberg.util.Slices;
import java.math.BigInteger;
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
    /**
     * The changes the removals index must learn of, by key: removals, and upserts of keys it
     * remembers (any other upsert would change nothing there, and the map would follow every change).
     */
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
            RemovalsIndex removalsIndex,
            ExecutorService pool) {
        RowPlan plan = new RowPlan();
        KeptRows kept = new KeptRows(table, layout);
        List<Change> upserts = new ArrayList<>();
        // Each changed key, its newest change and its live rows are at the same position in three
        // lists (changes.keys, changes.latest, found.rows): no object or map entry per key is made
        // to pair them, since a merge of a million keys would hold each until it commits.
        int n = changes.keys.size();
        // The removals on record of the keys whose answer depends on them: those with no live row,
        // and removals that keep a row while an upsert of theirs is in this merge (see keeps).
        List<List<Object>> toLookUp = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            List<Object> key = changes.keys.get(i);
            if (found.rows().get(i).isEmpty()
                    || (!changes.latest.get(i).operation().isUpsert() && changes.latestUpsert.containsKey(key))) {
                toLookUp.add(key);
            }
        }
        RemovalsIndex.Known removals = removalsIndex.lookup(toLookUp, pool);
        // Whether each change is stale, and whether the removals index remembers its key, on every
        // core (the maps are only read there); then the plan, in order, here.
        List<Looked> looked = Slices.map(
                Slices.positions(n),
                pool,
                i -> isStale(
                                changes.keys.get(i),
                                changes.latest.get(i),
                                found.rows().get(i),
                                removals)
                        ? Looked.STALE
                        : removals.remembers(changes.keys.get(i)) ? Looked.REMEMBERED : Looked.NEW,
                "finding stale changes");
        for (int i = 0; i < n; i++) {
            List<Object> key = changes.keys.get(i);
            Change c = changes.latest.get(i);
            Looked l = looked.get(i);
            if (l == Looked.STALE) {
                plan.stale++; // the table already holds this change or a newer one, or removed the item since
                continue;
            }
            List<LiveRow> live = found.rows().get(i);
            if (!c.operation().isUpsert() || l == Looked.REMEMBERED) {
                plan.removalsSeen.put(key, c);
            }
            if (c.operation().isUpsert()) {
                upserts.add(c);
                plan.rowsReplaced += live.size();
            } else if (policy.keepsRow(c.ttlExpiry()) && keeps(kept, removals, key, c, changes, live)) {
                plan.rowsReplaced += live.size(); // the item's row is written again, marked
            } else if (live.isEmpty()) {
                continue; // removing an item the table does not have: only the removals index notes it
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

    /** What the stale check found of a key: three constants, so no object is made per key. */
    private enum Looked {
        /** The table holds this change or a newer one, or removed the item since. */
        STALE,
        /** Not stale, and the removals index remembers the key. */
        REMEMBERED,
        /** Not stale, and the removals index does not know the key. */
        NEW
    }

    /** Whether the table already holds change {@code c} of {@code key} or a newer one, or removed the item since. */
    private static boolean isStale(List<Object> key, Change c, List<LiveRow> live, RemovalsIndex.Known removals) {
        if (live.isEmpty()) {
            return removals.removedAfter(key, c.sequenceNumber());
        }
        BigInteger sequence = SequenceNumbers.toBigInteger(c.sequenceNumber());
        for (LiveRow r : live) {
            if (r.sequence().compareTo(sequence) >= 0) {
                return true;
            }
        }
        return false;
    }

    /** Whether removal {@code c} keeps its item's row (noted in {@code kept}); see {@link KeptRows#keep}. */
    private static boolean keeps(
            KeptRows kept,
            RemovalsIndex.Known removals,
            List<Object> key,
            Change c,
            KeyChanges changes,
            List<LiveRow> live) {
        Change upsert = changes.latestUpsert.get(key);
        return kept.keep(
                c,
                upsert,
                changes.latestDeleting.get(key),
                live,
                upsert != null && removals.removedAfter(key, upsert.sequenceNumber()));
    }
}
