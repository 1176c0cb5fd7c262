package dev.ddb2iceberg.commit;

import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.SequenceNumbers;
import dev.ddb2iceberg.staging.StagedObjectName;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.zip.GZIPInputStream;
import java.util.zip.GZIPOutputStream;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.util.SnapshotUtil;

/**
 * The merger's checkpoint: which staged objects the table already holds, recorded with the very
 * snapshot that applied them (so data and checkpoint commit atomically).
 *
 * <p>Each merger snapshot names the objects it applied plus those applied earlier whose deletion
 * from the staging prefix is not yet confirmed (carried forward), so the newest snapshot with a
 * checkpoint is enough. Maintenance copies it into its own snapshots, so expiring old snapshots
 * never loses it. Objects are named by their sequence range without padding, e.g.
 * {@code 111100000000000000001-111500000000000000005}.
 *
 * <p>The list is kept in a file of its own, written before the commit and named in the summary
 * ({@link PipelineProperties#APPLIED_FILE}): at 40,000 writes a second a merge applies thousands of
 * objects, and a summary that listed them (as tables merged before 2026-12-08 did, in {@link
 * PipelineProperties#APPLIED}, still read) made every snapshot about 100 KB, and the table's
 * metadata, which holds every snapshot, hundreds of MB, past the Glue Data Catalog's 20 MB limit.
 * The file's name is new for each commit attempt and never rewritten, so a file read once is cached
 * by name. Orphan removal keeps every file a snapshot names; once no snapshot names it, it goes.
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

    /** Files read lately, by name: a name is never rewritten, and each merge reads the newest twice. */
    private static final Map<String, Set<String>> READ = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Set<String>> eldest) {
            return size() > 8;
        }
    };

    /**
     * The checkpoint of the newest merger snapshot in the table's history; if expiry has removed
     * every merger snapshot, the newest copy a maintenance snapshot carried. Empty for a new table.
     *
     * <p>A merger snapshot wins over a newer maintenance copy: a maintenance commit that raced a
     * merger may have copied the checkpoint from before the merger's commit.
     */
    public static Set<String> read(Table table) {
        Map<String, String> summary = checkpointSummary(table);
        return summary == null ? Set.of() : tokensOf(table.io(), summary);
    }

    /** The staged objects a snapshot's summary records as applied (its file's list, or the older inline list). */
    public static Set<String> tokensOf(FileIO io, Map<String, String> summary) {
        String file = summary.get(PipelineProperties.APPLIED_FILE);
        if (file != null) {
            return readFile(io, file);
        }
        String inline = summary.get(PipelineProperties.APPLIED);
        return inline == null ? Set.of() : decode(inline);
    }

    /** The checkpoint file a snapshot names, or null. */
    public static String fileOf(Snapshot snapshot) {
        return snapshot.summary().get(PipelineProperties.APPLIED_FILE);
    }

    /**
     * Records {@code tokens} as the checkpoint of the commit about to be made: writes them to
     * {@code file} (a name no other commit attempt uses) and puts its name into {@code properties},
     * in place of any checkpoint carried there.
     */
    public static void record(Map<String, String> properties, FileIO io, String file, Collection<String> tokens) {
        byte[] text = String.join("\n", new TreeSet<>(tokens)).getBytes(StandardCharsets.UTF_8);
        try (OutputStream out = new GZIPOutputStream(io.newOutputFile(file).createOrOverwrite())) {
            out.write(text);
        } catch (IOException e) {
            throw new UncheckedIOException("writing the checkpoint file " + file, e);
        }
        synchronized (READ) {
            READ.put(file, Set.copyOf(tokens)); // the next run in this container reads it without a GET
        }
        properties.remove(PipelineProperties.APPLIED);
        properties.put(PipelineProperties.APPLIED_FILE, file);
        properties.put(PipelineProperties.APPLIED_COUNT, Integer.toString(tokens.size()));
    }

    private static Set<String> readFile(FileIO io, String file) {
        synchronized (READ) {
            Set<String> cached = READ.get(file);
            if (cached != null) {
                return cached;
            }
        }
        Set<String> tokens;
        try (InputStream in = new GZIPInputStream(io.newInputFile(file).newStream())) {
            tokens = Set.copyOf(decode(new String(in.readAllBytes(), StandardCharsets.UTF_8).replace('\n', ',')));
        } catch (NotFoundException e) {
            throw new IllegalStateException(
                    "The table's checkpoint file " + file + " is missing, so which staged"
                            + " objects the table holds cannot be told: nothing is merged until it is back (restore it"
                            + " from a backup or a bucket version; orphan removal never deletes a file a snapshot names)",
                    e);
        } catch (IOException e) {
            throw new UncheckedIOException("reading the checkpoint file " + file, e);
        }
        synchronized (READ) {
            READ.put(file, tokens);
        }
        return tokens;
    }

    /** The summary that holds the checkpoint: the newest merger snapshot's, else the newest copy; null if none. */
    private static Map<String, String> checkpointSummary(Table table) {
        Snapshot current = table.currentSnapshot();
        if (current == null) {
            return null;
        }
        Map<String, String> carried = null;
        for (Snapshot s : SnapshotUtil.ancestorsOf(current.snapshotId(), table::snapshot)) {
            if (s.summary().containsKey(PipelineProperties.RUN_ID)) {
                return s.summary();
            }
            if (carried == null
                    && (s.summary().containsKey(PipelineProperties.APPLIED_FILE)
                            || s.summary().containsKey(PipelineProperties.APPLIED))) {
                carried = s.summary();
            }
        }
        return carried;
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

    /** Summary properties a commit sets to carry the checkpoint forward (a mutable copy): its file's name, not its list. */
    public static Map<String, String> carried(Table table) {
        Map<String, String> carried = new HashMap<>();
        Map<String, String> checkpoint = checkpointSummary(table);
        if (checkpoint != null) {
            for (String key : List.of(
                    PipelineProperties.APPLIED_FILE, PipelineProperties.APPLIED_COUNT, PipelineProperties.APPLIED)) {
                String value = checkpoint.get(key);
                if (value != null && !value.isEmpty()) {
                    carried.put(key, value);
                }
            }
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
