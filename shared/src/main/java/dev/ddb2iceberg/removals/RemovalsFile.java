package dev.ddb2iceberg.removals;

import dev.ddb2iceberg.commit.Checkpoint;
import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.SequenceNumbers;
import dev.ddb2iceberg.staging.StagedFormat;
import dev.ddb2iceberg.staging.StagedObjectName;
import dev.ddb2iceberg.table.TableLayout;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.OutputFile;

/**
 * Items the table removed recently, with the sequence number of the removing change.
 *
 * <p>A removed item has no row left to carry its sequence number, yet Lambda can deliver an older
 * change of it again later: a batch staged, then retried or bisected after the stager failed, lands
 * in a second staged object that the merger may take after the first was applied. Without a
 * record of the removal, that older change would bring the item back. So each merge commit names,
 * in its snapshot summary, the files of recent removals (kept {@code Merger.REMOVALS_KEPT}, longer
 * than the stream keeps records, counted from the oldest staged object still waiting), and an
 * upsert of an item with no live row is skipped when a removal at least as new is on file. The
 * files are written before the commit that names them, so they and the table change together.
 *
 * <p>The files are a base and up to {@link #MAX_DELTAS} deltas, oldest first, named by a small list
 * file ({@code .removals}, one file name a line) whose location is the property: a merge writes only
 * its own removals and a new list (a continuous merger commits every few seconds, and rewriting
 * every removal of two days each time would cost as much as the merge; naming the deltas in the
 * summary itself made each snapshot 3 KB of table metadata), and every {@code MAX_DELTAS}-th writing
 * merge folds them into a new base, dropping expired removals. A later file's removal of a key
 * wins. A property naming a {@code .ddbstage} file is a base alone (tables from before the lists).
 * A removal whose key was upserted since stays on file until a fold
 * by a merger that saw the upsert, or until it expires: harmless, since a removal is only consulted
 * for a key with no live row. A warm merger keeps the removals it last read or wrote, keyed by the
 * property, and reads only the files added since.
 */
public final class RemovalsFile {
    /** Deltas after the base before a writing merge folds them all into a new base. */
    static final int MAX_DELTAS = 32;

    private static final String LIST_SUFFIX = ".removals";
    /** Removals a warm merger keeps between runs at most (about 200 bytes each in memory). */
    private static final int CACHE_MAX_ENTRIES = 2_000_000;

    /** The removals of the files a list names, as last read or written by this container. */
    private record Cached(String list, List<String> files, Map<List<Object>, Change> byKey) {}

    private static volatile Cached cache;

    private final Map<List<Object>, Change> byKey;
    /** Set by an update that handed {@link #byKey} to the cache: this instance is used no more. */
    private boolean spent;
    /** The list file the checkpoint names (null: none yet), and the files it names, base first. */
    private final String list;

    private final List<String> files;

    private RemovalsFile(Map<List<Object>, Change> byKey, String list, List<String> files) {
        this.byKey = byKey;
        this.list = list;
        this.files = files;
    }

    /** Testing hook: forget what this container knows, as a new container would. */
    static void forgetCached() {
        cache = null;
    }

    /**
     * The removals files a property value names, base first, with the list file itself (maintenance
     * must keep them all); none for null.
     */
    public static List<String> files(FileIO io, String property) {
        if (property == null) {
            return List.of();
        }
        List<String> out = new ArrayList<>(listed(io, property));
        if (!out.contains(property)) {
            out.add(property);
        }
        return out;
    }

    /** The removals file written with a list (the same name); a pre-list property is its own file. */
    public static String twin(String property) {
        return property.endsWith(StagedObjectName.SUFFIX)
                ? property
                : property.substring(0, property.length() - LIST_SUFFIX.length()) + StagedObjectName.SUFFIX;
    }

    /** The files a list names (or the one base file a property from before the lists names). */
    private static List<String> listed(FileIO io, String property) {
        if (property.endsWith(StagedObjectName.SUFFIX)) {
            return List.of(property);
        }
        String text;
        try (InputStream s = io.newInputFile(property).newStream()) {
            text = new String(s.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot read the removals list " + property, e);
        }
        String dir = property.substring(0, property.lastIndexOf('/') + 1);
        List<String> out = new ArrayList<>();
        for (String line : text.split("\n")) {
            if (!line.isBlank()) {
                out.add(line.contains("://") ? line.trim() : dir + line.trim());
            }
        }
        return out;
    }

    /** The removals named by the table's checkpoint snapshot; none for a new table. */
    public static RemovalsFile read(Table table, TableLayout layout) {
        String list = Checkpoint.readProperty(table, PipelineProperties.REMOVALS);
        Cached c = cache;
        if (c != null && c.list().equals(list)) {
            return new RemovalsFile(new HashMap<>(c.byKey()), list, c.files());
        }
        List<String> files = list == null ? List.of() : listed(table.io(), list);
        Map<List<Object>, Change> byKey = new HashMap<>();
        List<String> toRead = files;
        if (c != null
                && files.size() > c.files().size()
                && files.subList(0, c.files().size()).equals(c.files())) {
            byKey.putAll(c.byKey()); // the same base and deltas, and newer deltas
            toRead = files.subList(c.files().size(), files.size());
        }
        for (String location : toRead) {
            readInto(table, layout, location, byKey);
        }
        return new RemovalsFile(byKey, list, files);
    }

    private static void readInto(Table table, TableLayout layout, String location, Map<List<Object>, Change> byKey) {
        InputFile in = table.io().newInputFile(location);
        byte[] bytes;
        try (InputStream s = in.newStream()) {
            bytes = s.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot read the removals file " + location, e);
        }
        for (Change c : StagedFormat.read(bytes, location)) {
            List<Object> key = layout.keyOf(c);
            if (key != null) {
                byKey.put(key, c);
            }
        }
    }

    /** Whether an upsert of {@code key} at {@code sequence} is older than a removal on file. */
    public boolean removedAfter(List<Object> key, String sequence) {
        Change removal = byKey.get(key);
        return removal != null && SequenceNumbers.compare(removal.sequenceNumber(), sequence) >= 0;
    }

    /** Whether a removal of {@code key} is on file: only then does an upsert of it change the file. */
    public boolean remembers(List<Object> key) {
        return byKey.containsKey(key);
    }

    int size() {
        return byKey.size();
    }

    /**
     * The property after this run: unchanged when it removed nothing; else a new list naming the
     * files plus a delta of its removals, or, every {@link #MAX_DELTAS} deltas, one new base holding
     * every removal still kept (those recorded before {@code forgetBeforeMillis} go, and so do those
     * of keys upserted since); null when none is left.
     */
    public String update(
            Table table, Map<List<Object>, Change> applied, long nowMillis, long forgetBeforeMillis, String runId) {
        if (spent) {
            throw new IllegalStateException("a removals file is updated once; read it again for another update");
        }
        List<Change> added = new ArrayList<>();
        for (Map.Entry<List<Object>, Change> e : applied.entrySet()) {
            List<Object> key = e.getKey();
            Change c = e.getValue();
            if (c.operation().isUpsert()) {
                if (!byKey.isEmpty()) {
                    byKey.remove(key);
                }
            } else {
                // A removal's time field says when a merge recorded it (for expiry), not when it happened.
                Change removal =
                        new Change(c.keys(), c.operation(), null, c.sequenceNumber(), nowMillis, c.ttlExpiry());
                byKey.put(key, removal);
                added.add(removal);
            }
        }
        if (added.isEmpty()) {
            return list; // upserts alone leave the files as they are (see the class comment)
        }
        boolean fold = files.size() > MAX_DELTAS;
        if (fold) {
            byKey.values().removeIf(c -> c.approximateCreationMillis() < forgetBeforeMillis);
        }
        List<Change> toWrite = new ArrayList<>(fold ? byKey.values() : added);
        if (toWrite.isEmpty()) {
            cache = null;
            return null;
        }
        toWrite.sort((a, b) -> SequenceNumbers.compare(a.sequenceNumber(), b.sequenceNumber()));
        String dir = dev.ddb2iceberg.table.DerivedFiles.location(table) + "ddb2iceberg/";
        String path = dir + "removals-" + runId + StagedObjectName.SUFFIX;
        write(table, path, StagedFormat.write(toWrite));
        List<String> nextFiles = new ArrayList<>(fold ? List.of() : files);
        nextFiles.add(path);
        StringBuilder text = new StringBuilder();
        for (String f : nextFiles) {
            text.append(f.startsWith(dir) ? f.substring(dir.length()) : f).append('\n');
        }
        String nextList = dir + "removals-" + runId + LIST_SUFFIX;
        write(table, nextList, text.toString().getBytes(StandardCharsets.UTF_8));
        // What this container now knows, for its next run (if this commit loses, the property differs).
        // The map itself, not a copy: update is an instance's last use, and read copies what it takes.
        cache = byKey.size() > CACHE_MAX_ENTRIES ? null : new Cached(nextList, List.copyOf(nextFiles), byKey);
        spent = true;
        return nextList;
    }

    private static void write(Table table, String path, byte[] bytes) {
        OutputFile out = table.io().newOutputFile(path);
        try (OutputStream s = out.createOrOverwrite()) {
            s.write(bytes);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot write the removals file " + path, e);
        }
    }

    /**
     * The removals files every snapshot of the table names, lists, bases and deltas (maintenance must
     * keep these), with one read. A list names its chain's base and deltas since the last fold, and
     * the merge that wrote a list wrote its one new file beside it under the same name (see this
     * class); so every named file is either the twin of a named list or, when that list's
     * snapshot has expired, named by the oldest list still named, which is the only one read.
     */
    public static Set<String> namedByAnySnapshot(Table table) {
        Set<String> lists = new LinkedHashSet<>();
        Snapshot oldest = null;
        for (Snapshot s : table.snapshots()) {
            String list = s.summary().get(PipelineProperties.REMOVALS);
            if (list != null) {
                lists.add(list);
                if (oldest == null || s.sequenceNumber() < oldest.sequenceNumber()) {
                    oldest = s;
                }
            }
        }
        Set<String> files = new LinkedHashSet<>();
        for (String list : lists) {
            files.add(list);
            files.add(twin(list));
        }
        if (oldest != null) {
            files.addAll(files(table.io(), oldest.summary().get(PipelineProperties.REMOVALS)));
        }
        return files;
    }
}
