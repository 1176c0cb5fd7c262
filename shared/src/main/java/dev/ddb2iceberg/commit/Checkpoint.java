package dev.ddb2iceberg.commit;

import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.SequenceNumbers;
import dev.ddb2iceberg.staging.StagedObjectName;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.util.SnapshotUtil;

/**
 * The merger's checkpoint: which staged objects the table already holds, recorded in the summary
 * of the very snapshot that applied them (so data and checkpoint commit atomically).
 *
 * <p>Each merger snapshot names the objects it applied plus those applied earlier whose deletion
 * from the staging prefix is not yet confirmed (carried forward), so the newest snapshot with a
 * checkpoint is enough. Maintenance copies the property into its own snapshots, so expiring old
 * snapshots never loses it. Objects are named by their sequence range without padding, e.g.
 * {@code 111100000000000000001-111500000000000000005}, to keep table metadata small.
 */
public final class Checkpoint {
    /** Properties besides {@link PipelineProperties#APPLIED} that every merge and maintenance commit carries forward. */
    static final List<String> CARRIED =
            List.of(PipelineProperties.REMOVALS, PipelineProperties.STREAM_SINCE, PipelineProperties.EXPORT_LOADS);

    private Checkpoint() {}

    /** The token of a staged object in a checkpoint. */
    public static String token(StagedObjectName name) {
        return SequenceNumbers.stripLeadingZeros(name.firstSequence()) + "-"
                + SequenceNumbers.stripLeadingZeros(name.lastSequence());
    }

    /**
     * The checkpoint of the newest merger snapshot in the table's history; if expiry has removed
     * every merger snapshot, the newest copy a maintenance snapshot carried. Empty for a new table.
     *
     * <p>A merger snapshot wins over a newer maintenance copy: a maintenance commit that raced a
     * merger may have copied the checkpoint from before the merger's commit.
     */
    public static Set<String> read(Table table) {
        String applied = readProperty(table, PipelineProperties.APPLIED);
        return applied == null ? Set.of() : decode(applied);
    }

    /** The newest snapshot the merger wrote, or null; expiry keeps it so the checkpoint survives. */
    public static Snapshot newestMergerSnapshot(Table table) {
        Snapshot current = table.currentSnapshot();
        if (current == null) {
            return null;
        }
        for (Snapshot s : SnapshotUtil.ancestorsOf(current.snapshotId(), table::snapshot)) {
            if (s.summary().containsKey(PipelineProperties.RUN_ID)) {
                return s;
            }
        }
        return null;
    }

    /**
     * A property of the checkpoint ({@link PipelineProperties#APPLIED}, the removals index): the newest merger snapshot's
     * value (null if it has none), else the newest copy a maintenance snapshot carried.
     */
    public static String readProperty(Table table, String property) {
        Snapshot current = table.currentSnapshot();
        if (current == null) {
            return null;
        }
        String carried = null;
        for (Snapshot s : SnapshotUtil.ancestorsOf(current.snapshotId(), table::snapshot)) {
            if (s.summary().containsKey(PipelineProperties.RUN_ID)) {
                return s.summary().get(property);
            }
            if (carried == null) {
                carried = s.summary().get(property);
            }
        }
        return carried;
    }

    /** Summary properties a commit sets to carry the checkpoint forward (a mutable copy). */
    public static Map<String, String> carried(Table table) {
        Map<String, String> carried = new HashMap<>();
        Set<String> tokens = read(table);
        if (!tokens.isEmpty()) {
            carried.put(PipelineProperties.APPLIED, encode(tokens));
        }
        for (String property : CARRIED) {
            String value = readProperty(table, property);
            if (value != null) {
                carried.put(property, value);
            }
        }
        return carried;
    }

    /** The oldest stream change merged so far (epoch ms): {@code before}, the carried value or null, and {@code changes}. */
    public static long streamSince(String before, Collection<Change> changes) {
        long since = changes.stream()
                .mapToLong(Change::approximateCreationMillis)
                .min()
                .orElse(Long.MAX_VALUE);
        return before == null ? since : Math.min(since, Long.parseLong(before));
    }

    public static String encode(Collection<String> tokens) {
        return String.join(",", new TreeSet<>(tokens));
    }

    public static Set<String> decode(String value) {
        Set<String> out = new LinkedHashSet<>();
        for (String t : value.split(",")) {
            if (!t.isBlank()) {
                out.add(t.trim());
            }
        }
        return out;
    }
}
