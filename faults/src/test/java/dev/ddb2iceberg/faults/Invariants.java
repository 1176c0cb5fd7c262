package dev.ddb2iceberg.faults;

import dev.ddb2iceberg.commit.Checkpoint;
import dev.ddb2iceberg.config.RemovalPolicy;
import dev.ddb2iceberg.history.ChangeHistory;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.storage.ObjectPaths;
import dev.ddb2iceberg.testkit.ExpectedTable;
import dev.ddb2iceberg.testkit.TableItems;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;

/**
 * What must hold, against the model. After every merger, maintenance and loader run: the table
 * equals the model of exactly the staged objects its checkpoints say were applied (and the export
 * items its load cursor says are in), with no key's row twice and the removal marks the policy
 * keeps; no data file carries two delete files; the change history holds each change of the
 * objects its checkpoints name exactly once. At the end, after a fault-free drain: the table equals
 * the whole source table (nothing lost, nothing duplicated, no deleted item back) and the history
 * holds every change of the stream. The oracle is what the stager wrote ({@link #staged}) and
 * what the snapshots said they applied ({@link #recordApplied}), gathered as the run goes.
 */
final class Invariants {
    private final Catalog catalog;
    private final TableIdentifier id;
    private final TableIdentifier historyId;
    private final boolean withHistory;
    private final RemovalPolicy policy;
    private final SourceExport export;
    private final FaultStats stats;
    private final Trail trail;
    /** The changes in each staged object the stager wrote, by checkpoint token. */
    private final Map<String, List<Change>> stagedObjects = new HashMap<>();
    /** Tokens of every object some committed snapshot applied (snapshots may expire later). */
    private final Set<String> applied = new HashSet<>();
    /** Tokens of every object some history snapshot covered. */
    private final Set<String> inHistory = new HashSet<>();

    Invariants(
            Catalog catalog,
            TableIdentifier id,
            TableIdentifier historyId,
            boolean withHistory,
            RemovalPolicy policy,
            SourceExport export,
            FaultStats stats,
            Trail trail) {
        this.catalog = catalog;
        this.id = id;
        this.historyId = historyId;
        this.withHistory = withHistory;
        this.policy = policy;
        this.export = export;
        this.stats = stats;
        this.trail = trail;
    }

    /** The stager wrote the staged object {@code token} with these changes. */
    void staged(String token, List<Change> changes) {
        stagedObjects.put(token, List.copyOf(changes));
    }

    /** Adds the objects every merger snapshot still in the table says it applied. */
    void recordApplied() {
        if (withHistory && catalog.tableExists(historyId)) {
            Table history = catalog.loadTable(historyId);
            for (Snapshot s : history.snapshots()) {
                inHistory.addAll(Checkpoint.tokensOf(history.io(), s.summary()));
            }
        }
        if (!catalog.tableExists(id)) {
            return;
        }
        Table table = catalog.loadTable(id);
        for (Snapshot s : table.snapshots()) {
            applied.addAll(Checkpoint.tokensOf(table.io(), s.summary()));
        }
    }

    /** The table holds exactly the changes of the staged objects applied so far: no more, no less. */
    void checkTableMatchesItsCheckpoints(String when) {
        recordApplied();
        if (!catalog.tableExists(id)) {
            return;
        }
        ExpectedTable expected = new ExpectedTable();
        List<Change> changes = new ArrayList<>();
        for (String token : applied) {
            List<Change> object = stagedObjects.get(token);
            if (object == null) {
                throw trail.failure(
                        when + ": the table says it applied staged object " + token + ", which the stager never wrote");
            }
            changes.addAll(object);
        }
        changes.addAll(export.loadedBy(catalog.loadTable(id)));
        expected.apply(changes, policy); // each key's changes in sequence order, as the merger keeps them
        checkEveryReferencedFileExists(when);
        compare(expected, when);
        checkOneDeleteFilePerDataFile(when);
        checkHistory(when);
    }

    /**
     * After the drain: the table equals the source table (and the export's items from before the
     * stream), and the history holds every change of the stream.
     */
    void checkAtTheEnd(SourceTable source) {
        ExpectedTable all = new ExpectedTable();
        all.apply(export.history(), policy);
        all.apply(source.changes(), policy);
        if (withHistory && !source.changes().isEmpty()) {
            Map<String, Change> everyChange = new HashMap<>();
            source.changes().forEach(c -> everyChange.put(c.sequenceNumber(), c));
            checkHistoryHolds(everyChange, "at the end: every change of the stream");
        }
        if (catalog.tableExists(id)) {
            checkEveryReferencedFileExists("at the end");
            compare(all, "at the end");
        } else if (!all.items().isEmpty()) {
            throw trail.failure(
                    "no table at the end, but the source has " + all.items().size() + " items");
        }
        stats.add("changes made at the source", source.changes().size());
        stats.add("items in the final table", all.items().size());
        stats.add("items near 400 KB", source.bigItems);
    }

    /**
     * Every file the current snapshot references exists (a HEAD each) under a path with no empty
     * segment: so a step that deletes a live file, or writes one some readers spell differently,
     * fails here, naming the file, rather than at some later read.
     */
    private void checkEveryReferencedFileExists(String when) {
        Table table = catalog.loadTable(id);
        Snapshot current = table.currentSnapshot();
        if (current == null) {
            return;
        }
        Set<String> files = new TreeSet<>();
        files.add(current.manifestListLocation());
        current.allManifests(table.io()).forEach(m -> files.add(m.path()));
        try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
            for (FileScanTask task : tasks) {
                files.add(task.file().location());
                task.deletes().forEach(d -> files.add(d.location()));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        for (String file : files) {
            if (ObjectPaths.hasEmptySegment(file)) {
                throw trail.failure(when + ": the current snapshot references " + file
                        + ", whose path has an empty segment ('//')");
            }
            if (!table.io().newInputFile(file).exists()) {
                throw trail.failure(when + ": the current snapshot references " + file + ", which does not exist");
            }
        }
        stats.add("referenced files checked", files.size());
    }

    /**
     * The table's shape: no data file carries two delete files (format v2: its file-scoped position
     * deletes are carried into one new file by every merge that touches it) or two deletion vectors (v3).
     */
    private void checkOneDeleteFilePerDataFile(String when) {
        Table table = catalog.loadTable(id);
        if (table.currentSnapshot() == null) {
            return;
        }
        try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
            for (FileScanTask task : tasks) {
                if (task.deletes().size() > 1) {
                    throw trail.failure(when + ": data file " + task.file().location() + " carries "
                            + task.deletes().size() + " delete files, expected at most one: "
                            + task.deletes().stream().map(d -> d.location()).toList());
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * The change history holds each change of the staged objects its checkpoints name exactly once:
     * none twice (a redelivered batch, a crash between its commit and the table's, a retry), none
     * missing, each as the stream carried it.
     */
    private void checkHistory(String when) {
        if (!withHistory || !catalog.tableExists(historyId)) {
            return;
        }
        Map<String, Change> expected = new HashMap<>();
        for (String token : inHistory) {
            List<Change> object = stagedObjects.get(token);
            if (object == null) {
                throw trail.failure(when + ": the history says it covered staged object " + token
                        + ", which the stager never wrote");
            }
            object.forEach(c -> expected.put(c.sequenceNumber(), c));
        }
        checkHistoryHolds(expected, when);
    }

    private void checkHistoryHolds(Map<String, Change> expected, String when) {
        Map<String, Change> actual = new HashMap<>();
        for (Change c : ChangeHistory.changes(catalog.loadTable(historyId))) {
            if (actual.put(c.sequenceNumber(), c) != null) {
                throw trail.failure(when + ": the change history holds change " + c.sequenceNumber() + " twice");
            }
        }
        if (!expected.equals(actual)) {
            List<String> diff = new ArrayList<>();
            expected.keySet().stream()
                    .filter(k -> !actual.containsKey(k))
                    .limit(5)
                    .forEach(k -> diff.add("missing " + k));
            actual.keySet().stream()
                    .filter(k -> !expected.containsKey(k))
                    .limit(5)
                    .forEach(k -> diff.add("unexpected " + k));
            expected.keySet().stream()
                    .filter(k -> actual.containsKey(k) && !actual.get(k).equals(expected.get(k)))
                    .limit(5)
                    .forEach(k ->
                            diff.add("differs " + k + ": expected " + expected.get(k) + " but was " + actual.get(k)));
            throw trail.failure(when + ": the change history (" + actual.size()
                    + " changes) differs from the model's change log (" + expected.size() + " changes): " + diff);
        }
        stats.count("change history checks");
    }

    private void compare(ExpectedTable model, String when) {
        Map<Map<String, DdbValue>, Map<String, DdbValue>> expected = model.items();
        Table table = catalog.loadTable(id);
        Map<Map<String, DdbValue>, Map<String, DdbValue>> actual = TableItems.read(table);
        long rows = 0;
        try (CloseableIterable<Record> all = IcebergGenerics.read(table).build()) {
            for (Record ignored : all) {
                rows++;
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        if (rows != actual.size()) {
            throw trail.failure(when + ": " + rows + " rows for " + actual.size() + " keys: duplicated rows");
        }
        if (!expected.equals(actual)) {
            throw trail.failure(when + ": the table differs from the model: " + ExpectedTable.diff(expected, actual));
        }
        if (!policy.equals(RemovalPolicy.DEFAULT)) {
            var marks = TableItems.marks(table);
            if (!model.marks().equals(marks)) {
                throw trail.failure(when + ": the removal marks differ from the model's: expected " + model.marks()
                        + " but were " + marks);
            }
        }
    }
}
