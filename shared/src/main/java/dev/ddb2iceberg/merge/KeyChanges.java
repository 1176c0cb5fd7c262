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
    /** The changed keys, each once. */
    final List<List<Object>> keys;
    /** Each key's newest change, at its key's position in {@link #keys}. */
    final List<Change> latest;

    final Map<List<Object>, Change> latestUpsert;
    final Map<List<Object>, Change> latestDeleting;
    final int quarantined;
    final long expiriesKept;

    /**
     * The keys and their newest changes are kept as two lists by position, not as the map that
     * found them: a merge holds them until it commits, and a map would hold an entry object for
     * each of up to a million keys for as long (the collector copies and marks each one).
     */
    private KeyChanges(
            Map<List<Object>, Change> latest,
            Map<List<Object>, Change> latestUpsert,
            Map<List<Object>, Change> latestDeleting,
            int quarantined,
            long expiriesKept) {
        this.keys = new ArrayList<>(latest.size());
        this.latest = new ArrayList<>(latest.size());
        latest.forEach((key, change) -> {
            this.keys.add(key);
            this.latest.add(change);
        });
        this.latestUpsert = latestUpsert;
        this.latestDeleting = latestDeleting;
        this.quarantined = quarantined;
        this.expiriesKept = expiriesKept;
    }

    static KeyChanges of(
            List<Change> changes,
            TableLayout layout,
            RemovalPolicy policy,
            BiConsumer<Change, String> quarantine,
            ExecutorService pool) {
        int quarantined = 0;
        long expiriesKept = 0;
        Map<List<Object>, Change> latest = new HashMap<>(changes.size() * 4 / 3 + 16);
        Map<List<Object>, Change> latestUpsert = new HashMap<>();
        Map<List<Object>, Change> latestDeleting = new HashMap<>();
        if (policy.ttlExpiries() == RemovalPolicy.TtlExpiries.KEEP) {
            List<Change> kept = new ArrayList<>(changes.size());
            for (Change c : changes) {
                if (!c.ttlExpiry()) {
                    kept.add(c);
                }
            }
            expiriesKept = changes.size() - kept.size();
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
                quarantined++;
                continue;
            }
            latest.merge(key, c, KeyChanges::newer);
            if (removalsKeepRows && c.operation().isUpsert()) {
                latestUpsert.merge(key, c, KeyChanges::newer);
            } else if (removalsKeepRows && !policy.keepsRow(c.ttlExpiry())) {
                latestDeleting.merge(key, c, KeyChanges::newer);
            }
        }
        return new KeyChanges(latest, latestUpsert, latestDeleting, quarantined, expiriesKept);
    }

    private static Change newer(Change a, Change b) {
        return SequenceNumbers.compare(a.sequenceNumber(), b.sequenceNumber()) >= 0 ? a : b;
    }
}
