package dev.ddb2iceberg.removals;

import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.staging.StagedFormat;
import dev.ddb2iceberg.staging.StagedObjectName;
import dev.ddb2iceberg.table.TableLayout;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.InputFile;

/**
 * The removals record of tables from before the {@link RemovalsIndex}: files of removals (as staged
 * objects) named by a small list file ({@code .removals}, one file name a line, base first, a later
 * file's removal of a key winning), whose location was the property; a property naming a {@code
 * .ddbstage} file is a base alone (older still). Read once, by the first merge that commits with the
 * index, which moves every removal into it; and by orphan cleanup, which must keep the files while
 * a snapshot still names them.
 *
 * <p>The format read every removal each merge and held them all in memory: 0.3 s and 800 MB at
 * 1.5M removals, where a hot table keeps tens of millions (BENCHMARKS.md, "Removals remembered for
 * 48 hours").
 */
public final class RemovalsFile {
    private static final String LIST_SUFFIX = ".removals";

    private final Map<List<Object>, Change> byKey;

    private RemovalsFile(Map<List<Object>, Change> byKey) {
        this.byKey = byKey;
    }

    /** Whether a property value names this format's files (else it names a removals index's manifest). */
    static boolean isLegacy(String property) {
        return property.endsWith(LIST_SUFFIX) || property.endsWith(StagedObjectName.SUFFIX);
    }

    /**
     * The removals files a property value names, base first, with the list file itself (maintenance
     * must keep them all); none for null.
     */
    static List<String> files(FileIO io, String property) {
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
    static String twin(String property) {
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

    /** The removals a property value of this format names ({@link #isLegacy}), read whole. */
    static RemovalsFile read(Table table, TableLayout layout, String list) {
        Map<List<Object>, Change> byKey = new HashMap<>();
        for (String location : listed(table.io(), list)) {
            readInto(table, layout, location, byKey);
        }
        return new RemovalsFile(byKey);
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

    /** The newest removal of {@code key} on file, or null. */
    Change get(List<Object> key) {
        return byKey.get(key);
    }

    /** Every removal on file, each key's newest. */
    Collection<Change> all() {
        return byKey.values();
    }

    int size() {
        return byKey.size();
    }

    /**
     * The files in this format every snapshot of the table names, lists, bases and deltas (maintenance
     * must keep these), with one read; snapshots that name a removals index are left to it. A list names its chain's base and deltas since the last fold, and
     * the merge that wrote a list wrote its one new file beside it under the same name (see this
     * format); so every named file is either the twin of a named list or, when that list's
     * snapshot has expired, named by the oldest list still named, which is the only one read.
     */
    static Set<String> namedByAnySnapshot(Table table) {
        Set<String> lists = new LinkedHashSet<>();
        Snapshot oldest = null;
        for (Snapshot s : table.snapshots()) {
            String list = s.summary().get(PipelineProperties.REMOVALS);
            if (list != null && isLegacy(list)) {
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
