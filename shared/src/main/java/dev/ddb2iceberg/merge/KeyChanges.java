package dev.ddb2iceberg.merge;

import dev.ddb2iceberg.config.RemovalPolicy;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.SequenceNumbers;
import dev.ddb2iceberg.table.TableLayout;
import dev.ddb2iceberg.util.Slices;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.function.BiConsumer;

/**
 * The first stage of applying changes: each key's change with the highest sequence number
 * (compared as numbers), and, when removals may keep rows, each key's newest upsert (the item as it
 * was before a removal) and newest removal that deletes the row (an item it deleted is not there
 * for a later removal to keep). A change whose key does not fit the table is handed to the
 * quarantine; under TTL_EXPIRIES=keep an expiry is not applied at all (nor remembered: the row
 * itself makes any older copy stale).
 */
final class KeyChanges {
    final Map<List<Object>, Change> latest;
    final Map<List<Object>, Change> latestUpsert = new HashMap<>();
    final Map<List<Object>, Change> latestDeleting = new HashMap<>();
    int quarantined;
    long expiriesKept;

    /** {@code changes}: how many changes there are, so the map of keys is sized once, not grown as it fills. */
    private KeyChanges(int changes) {
        latest = new HashMap<>(changes * 4 / 3 + 16);
    }

    static KeyChanges of(
            List<Change> changes,
            TableLayout layout,
            RemovalPolicy policy,
            BiConsumer<Change, String> quarantine,
            ExecutorService pool) {
        KeyChanges k = new KeyChanges(changes.size());
        if (policy.ttlExpiries() == RemovalPolicy.TtlExpiries.KEEP) {
            List<Change> kept = new ArrayList<>(changes.size());
            for (Change c : changes) {
                if (!c.ttlExpiry()) {
                    kept.add(c);
                }
            }
            k.expiriesKept = changes.size() - kept.size();
            changes = kept;
        }
        boolean removalsKeepRows = policy.keepsRow(true) || policy.keepsRow(false);
        // A change's key as column values is the costly part (each value converted to its column's
        // type): computed on every core, then reduced in stream order on this thread.
        List<List<Object>> keys = Slices.map(changes, pool, layout::keyOf, "computing the changes' keys");
        for (int i = 0; i < changes.size(); i++) {
            Change c = changes.get(i);
            List<Object> key = keys.get(i);
            if (key == null) {
                quarantine.accept(c, layout.whyKeyDoesNotFit(c));
                k.quarantined++;
                continue;
            }
            k.latest.merge(key, c, KeyChanges::newer);
            if (removalsKeepRows && c.operation().isUpsert()) {
                k.latestUpsert.merge(key, c, KeyChanges::newer);
            } else if (removalsKeepRows && !policy.keepsRow(c.ttlExpiry())) {
                k.latestDeleting.merge(key, c, KeyChanges::newer);
            }
        }
        return k;
    }

    private static Change newer(Change a, Change b) {
        return SequenceNumbers.compare(a.sequenceNumber(), b.sequenceNumber()) >= 0 ? a : b;
    }
}
