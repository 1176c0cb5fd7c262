package dev.ddb2iceberg.removals;

import dev.ddb2iceberg.commit.Checkpoint;
import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.index.DamagedIndexException;
import dev.ddb2iceberg.index.IndexCache;
import dev.ddb2iceberg.index.IndexEntries;
import dev.ddb2iceberg.index.IndexKeys;
import dev.ddb2iceberg.index.KeyIndex;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.SequenceNumbers;
import dev.ddb2iceberg.table.DerivedFiles;
import dev.ddb2iceberg.table.TableLayout;
import dev.ddb2iceberg.util.Slices;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Items the table removed recently, with the sequence number of the removing change, looked up by
 * key.
 *
 * <p>A removed item has no row left to carry its sequence number, yet Lambda can deliver an older
 * change of it again later: a batch staged, then retried or bisected after the stager failed, lands
 * in a second staged object that the merger may take after the first was applied. Without a record
 * of the removal, that older change would bring the item back. So an upsert of an item with no live
 * row is skipped when a removal at least as new is on record.
 *
 * <p>The record is a {@link KeyIndex} of its own, under {@code removals-index/}: one entry a
 * removed key, with the removal's sequence number, a marker in place of the data file, and the time
 * a merge recorded it in place of the position. A merge looks up only the keys it needs (those with
 * no live row), adds its removals as a delta, and folds a bounded share of the parts, as the key
 * index does: its cost follows the merge's keys, not the removals kept (a hot table keeps tens of
 * millions over the 48 hours, {@code Merger.REMOVALS_KEPT}). A fold forgets the removals of its part
 * recorded before the cutoff. An upsert of a key on record (a removed item put back) leaves a
 * tombstone that removes the entry; an upsert of any other key changes nothing here. The snapshot
 * summary property {@link PipelineProperties#REMOVALS} names the manifest, written before the
 * commit that names it, so the record and the table change together.
 *
 * <p>Unlike the key index, this is the truth, not derived state: nothing in the table can rebuild
 * it. A missing or damaged file fails the merge with a message naming it; it never starts over.
 *
 * <p>Tables from before the index name a list of removals files ({@link RemovalsFile}); the first
 * merge that commits reads them once and writes them into a new index.
 */
public final class RemovalsIndex {
    private static final Logger LOG = LoggerFactory.getLogger(RemovalsIndex.class);

    /** The data-file field of an entry: a removal, not a row (a tombstone's is null). */
    static final String REMOVED = "removed";
    /** Parts of a new removals index: a commit folds one, 1/64 of the removals kept. */
    static final int PARTS = 64;

    private static final String FOLDER = "removals-index/";

    private final Table table;
    private final TableLayout layout;
    /** The property as the checkpoint has it (null: nothing on record). */
    private final String property;
    /** The record, when the property names an index; an empty one when there is none yet. */
    private final KeyIndex index;
    /** The removals of a table from before the index, when the property names its files; else null. */
    private final RemovalsFile legacy;

    private RemovalsIndex(Table table, TableLayout layout, String property, KeyIndex index, RemovalsFile legacy) {
        this.table = table;
        this.layout = layout;
        this.property = property;
        this.index = index;
        this.legacy = legacy;
    }

    /**
     * The removals the table's checkpoint names; its folds forget those recorded before {@code
     * forgetBeforeMillis}. {@code cache}: the merger's index cache (deltas and blocks a warm merger
     * keeps between runs).
     */
    public static RemovalsIndex open(Table table, TableLayout layout, long forgetBeforeMillis, IndexCache cache) {
        String property = Checkpoint.readProperty(table, PipelineProperties.REMOVALS);
        boolean legacy = property != null && RemovalsFile.isLegacy(property);
        KeyIndex index;
        if (property == null || legacy) {
            index = KeyIndex.empty(table.io(), folder(table), PARTS, cache); // the first commit writes its parts
        } else {
            try {
                index = KeyIndex.open(table, property, folder(table), cache);
            } catch (DamagedIndexException e) {
                throw damaged(table, property, e);
            }
        }
        return new RemovalsIndex(
                table,
                layout,
                property,
                index.keepingFrom(forgetBeforeMillis),
                legacy ? RemovalsFile.read(table, layout, property) : null);
    }

    /** What the record says of the keys a merge looked up. */
    public static final class Known {
        private final Map<List<Object>, BigInteger> removedAt;

        private Known(Map<List<Object>, BigInteger> removedAt) {
            this.removedAt = removedAt;
        }

        /**
         * Whether an upsert of {@code key} at {@code sequence} is older than a removal on record. A
         * key that was not looked up is answered as not on record.
         */
        public boolean removedAfter(List<Object> key, String sequence) {
            BigInteger removal = removedAt.get(key);
            return removal != null && removal.compareTo(SequenceNumbers.toBigInteger(sequence)) >= 0;
        }

        /** Whether a removal of {@code key} is on record: only then does an upsert of it change the record. */
        public boolean remembers(List<Object> key) {
            return removedAt.containsKey(key);
        }

        /** How many of the keys looked up are on record. */
        public int size() {
            return removedAt.size();
        }
    }

    /** Looks these keys up (each key encoded on every core; the blocks read in parallel). */
    public Known lookup(Collection<List<Object>> keys, ExecutorService pool) {
        Map<List<Object>, BigInteger> removedAt = new HashMap<>();
        if (keys.isEmpty()) {
            return new Known(removedAt);
        }
        List<List<Object>> list = new ArrayList<>(keys);
        if (legacy != null) {
            for (List<Object> key : list) {
                Change removal = legacy.get(key);
                if (removal != null) {
                    removedAt.put(key, SequenceNumbers.toBigInteger(removal.sequenceNumber()));
                }
            }
            return new Known(removedAt);
        }
        List<byte[]> encoded = Slices.map(list, pool, IndexKeys::encode, "encoding keys to look up removals");
        IndexEntries.Entry[] found;
        try {
            found = index.lookupEach(encoded, pool);
        } catch (DamagedIndexException e) {
            throw damaged(table, property, e);
        }
        for (int i = 0; i < found.length; i++) {
            if (found[i] != null) {
                removedAt.put(list.get(i), found[i].sequence());
            }
        }
        return new Known(removedAt);
    }

    /** The property after a merge, and the files it wrote (a commit that does not land removes them). */
    public record Updated(String property, List<String> files) {}

    /**
     * Records a merge's changes the record must learn of ({@code seen}, by key: its removals, and
     * upserts of keys on record), as a new version; recorded at {@code nowMillis}, which is when it
     * expires from (a removal's own time is not: an old change merged late must still be kept 48 hours).
     * A merge that saw nothing leaves the property as it is, except that a table from before the index
     * gets one now.
     */
    public Updated update(Map<List<Object>, Change> seen, long nowMillis, ExecutorService pool) {
        IndexEntries.Builder entries = new IndexEntries.Builder();
        if (legacy != null) {
            for (Change removal : legacy.all()) {
                entries.add(
                        IndexKeys.encode(layout.keyOf(removal)),
                        REMOVED,
                        removal.approximateCreationMillis(),
                        SequenceNumbers.toBigInteger(removal.sequenceNumber()).toByteArray());
            }
            LOG.info("Moving {} removals from the removals files {} into a removals index", legacy.size(), property);
        } else if (seen.isEmpty()) {
            return new Updated(property, List.of());
        }
        // A later add of a key wins: this merge's changes come after the files' removals.
        for (Map.Entry<List<Object>, Change> e : seen.entrySet()) {
            Change c = e.getValue();
            byte[] sequence = SequenceNumbers.toBigInteger(c.sequenceNumber()).toByteArray();
            entries.add(
                    IndexKeys.encode(e.getKey()),
                    c.operation().isUpsert() ? null : REMOVED,
                    c.operation().isUpsert() ? 0 : nowMillis,
                    sequence);
        }
        try {
            KeyIndex.Written written = index.withChanges(table, entries.build(), pool);
            return new Updated(written.manifest(), written.files());
        } catch (DamagedIndexException e) {
            throw damaged(table, property, e);
        }
    }

    /**
     * Every file of the removals record any snapshot names (maintenance must keep them all): each
     * named index's manifest and files, and the files of lists from before the index. A manifest that
     * cannot be read fails the cleanup rather than let it delete what the record may still need.
     */
    public static Set<String> namedByAnySnapshot(Table table) {
        Set<String> properties = new LinkedHashSet<>();
        for (Snapshot s : table.snapshots()) {
            String property = s.summary().get(PipelineProperties.REMOVALS);
            if (property != null) {
                properties.add(property);
            }
        }
        Set<String> files = new LinkedHashSet<>(RemovalsFile.namedByAnySnapshot(table));
        for (String property : properties) {
            if (!RemovalsFile.isLegacy(property)) {
                try {
                    files.addAll(KeyIndex.filesOfManifest(table.io(), property));
                } catch (DamagedIndexException e) {
                    throw damaged(table, property, e);
                }
            }
        }
        return files;
    }

    /** Whether a property value names a removals index's manifest (else the files of an earlier version). */
    public static boolean namesAnIndex(String property) {
        return !RemovalsFile.isLegacy(property);
    }

    private static String folder(Table table) {
        return DerivedFiles.location(table) + FOLDER;
    }

    private static IllegalStateException damaged(Table table, String manifest, DamagedIndexException e) {
        return new IllegalStateException(
                "The removals index of table " + table.name() + " (" + manifest + ") cannot be read: "
                        + e.getMessage() + ". It is the only record of the items removed in the last 48 hours, and"
                        + " without it a late copy of an older change could bring one back, so nothing is merged"
                        + " until it is restored (S3 object versioning keeps the earlier version of an overwritten"
                        + " or deleted file). Staged changes wait; nothing is lost.",
                e);
    }
}
