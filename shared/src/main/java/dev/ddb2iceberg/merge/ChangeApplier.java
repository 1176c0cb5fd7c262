package dev.ddb2iceberg.merge;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ddb2iceberg.commit.CommitProtocol;
import dev.ddb2iceberg.commit.FanOutMark;
import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.config.RemovalPolicy;
import dev.ddb2iceberg.lookup.LiveRowLookup;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbJson;
import dev.ddb2iceberg.model.SequenceNumbers;
import dev.ddb2iceberg.removals.RemovalsIndex;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.table.SchemaEvolution;
import dev.ddb2iceberg.table.TableLayout;
import dev.ddb2iceberg.table.TableSettings;
import dev.ddb2iceberg.write.MergeWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.RowDelta;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.DeleteWriteResult;
import org.apache.iceberg.util.StructLikeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The apply step of a merge, shared by staged changes and export loads: one commit of a list of
 * changes. Reduce them to each key's newest, find the keys' live rows through the lookup, skip
 * changes the table already holds (or removed since), write the new rows and the deletes of the
 * rows they replace or remove, and commit it all in one RowDelta whose summary carries the
 * caller's checkpoint properties.
 */
public final class ChangeApplier {
    private static final Logger LOG = LoggerFactory.getLogger(ChangeApplier.class);
    private static final ObjectMapper JSON = new ObjectMapper();

    private final TableSettings tableSettings;
    private final StagingStore store;
    private final MergeOptions options;

    public ChangeApplier(TableSettings tableSettings, StagingStore store, MergeOptions options) {
        this.tableSettings = tableSettings;
        this.options = options;
        this.store = store;
    }

    /** What one commit of changes did; the counts are those of {@link MergeResult}. */
    public record Applied(
            Long snapshotId,
            List<Change> applied,
            long stale,
            long itemsWritten,
            long rowsReplaced,
            long itemsRemoved,
            int quarantined,
            int filesRead,
            int filesInTable) {}

    /**
     * Commits {@code changes} with {@code properties} (the caller's record of what it applied,
     * carried with the other checkpoint properties) in the snapshot summary. Throws
     * ValidationException or CommitFailedException when a race is lost; the caller plans again (see
     * {@link CommitProtocol}).
     */
    public Applied apply(
            Table table,
            List<Change> changes,
            Map<String, String> properties,
            String runId,
            long removalsCutoff,
            ExecutorService pool) {
        table = SchemaEvolution.evolve(table, changes, tableSettings, pool);
        TableLayout layout = TableLayout.of(table);
        RemovalPolicy policy = tableSettings.removals();

        // 1. Each key's newest change.
        long tKeys = System.nanoTime();
        KeyChanges keyChanges = KeyChanges.of(changes, layout, policy, this::quarantineChange, pool);

        // 2. The keys' live rows, and the removals the table remembers.
        long tFind = System.nanoTime();
        Snapshot base = table.currentSnapshot();
        RemovalsIndex removals = RemovalsIndex.open(table, layout, removalsCutoff, options.indexCache());
        LiveRowLookup lookup = options.lookup(pool);
        LiveRowLookup.Found found =
                lookup.find(table, layout, base == null ? null : base.snapshotId(), keyChanges.keys);

        // 3. The rows to write, the rows to delete, and the removals to remember.
        long tPlan = System.nanoTime();
        RowPlan plan = RowPlan.of(table, layout, policy, keyChanges, found, removals, pool);
        long tRemovals = System.nanoTime();
        RemovalsIndex.Updated removalsIndex = removals.update(plan.removalsSeen, System.currentTimeMillis(), pool);

        // 4. Each touched file is dropped (all its live rows go), folded with the partition's other
        // small files into the merge's new file, or given deletes; see SmallFileRewrite.
        // Each new row's partition, computed once: for the files to fold here, and for the writer.
        long tFold = System.nanoTime();
        List<StructLike> rowPartitions = MergeWriter.partitionsOf(table, plan.rows, pool);
        StructLikeMap<Integer> newRows = StructLikeMap.create(table.spec().partitionType());
        rowPartitions.forEach(p -> newRows.merge(p, 1, Integer::sum));
        SmallFileRewrite.Plan files = new SmallFileRewrite(table, options)
                .plan(plan.toDelete, found.liveRowsByFile(), found.files(), newRows);
        SmallFileRewrite.Moved moved = SmallFileRewrite.moved(table, layout, files.folded(), pool);

        // 5. Write the rows (new and moved), the deletes, and what the lookup records of them.
        long tWrite = System.nanoTime();
        MergeWriter writer = new MergeWriter(table, runId);
        List<Record> toWrite = plan.rows;
        List<StructLike> partitions = rowPartitions;
        if (!moved.rows().isEmpty()) {
            toWrite = new ArrayList<>(plan.rows);
            toWrite.addAll(moved.rows());
            partitions = new ArrayList<>(rowPartitions);
            partitions.addAll(MergeWriter.partitionsOf(table, moved.rows(), pool));
        }
        MergeWriter.Written written = writer.writeRows(toWrite, partitions, moved.copied(), layout, pool);
        long tDeletes = System.nanoTime();
        DeleteWriteResult deletes = writer.writeDeletes(files.positional(), pool);
        long tIndex = System.nanoTime();
        LiveRowLookup.Recorded recorded = lookup.record(table, layout, written.rows(), plan.removedKeys);

        // 6. One commit of it all, with the checkpoint.
        long tCommit = System.nanoTime();
        if (removalsIndex.property() != null) {
            properties.put(PipelineProperties.REMOVALS, removalsIndex.property());
        }
        properties.putAll(recorded.properties());
        RowDelta delta = rowDelta(table, base, files, written.files(), deletes, properties);
        List<String> attemptFiles = new ArrayList<>(recorded.files());
        attemptFiles.addAll(removalsIndex.files());
        written.files().forEach(f -> attemptFiles.add(f.location()));
        deletes.deleteFiles().forEach(f -> attemptFiles.add(f.location()));
        // A fan-out that marked the table while this merge planned takes the same staged objects: its
        // commit must find the table as its plan saw it, so this one steps back (Merger: held).
        table.refresh();
        FanOutMark fanOut = FanOutMark.read(table);
        if (fanOut != null) {
            attemptFiles.forEach(table.io()::deleteFile);
            throw new HeldByFanOut(fanOut);
        }
        long snapshotId =
                CommitProtocol.commit(table, delta, runId, attemptFiles).snapshotId();
        long tDone = System.nanoTime();

        if (plan.keptRemovals > 0 || keyChanges.expiriesKept > 0) {
            LOG.info(
                    "Removals kept as rows ({}): {} marked, {} TTL expiries left their rows as they were",
                    policy,
                    plan.keptRemovals,
                    keyChanges.expiriesKept);
        }
        LOG.info(
                "Committed snapshot {}: {} changes, {} items written ({} replaced a row), {} items removed, {} stale"
                        + " changes skipped, {} data files dropped ({} small ones folded, {} of them untouched, {} bytes, {} rows"
                        + " moved), {} delete files written ({} replaced), read {} of {} data files; ms: keys {}, finding rows {}, plan {},"
                        + " removals {}, fold {}, writing rows {}, writing deletes {}, index delta {}, committing {}",
                snapshotId,
                changes.size(),
                plan.rows.size(),
                plan.rowsReplaced,
                plan.itemsRemoved,
                plan.stale,
                files.dropped().size(),
                files.folded().size(),
                files.untouchedFolded(),
                files.foldedBytes(),
                moved.count(),
                deletes.deleteFiles().size(),
                deletes.rewrittenDeleteFiles().size(),
                found.filesRead(),
                found.filesInTable(),
                (tFind - tKeys) / 1_000_000,
                (tPlan - tFind) / 1_000_000,
                (tRemovals - tPlan) / 1_000_000,
                (tFold - tRemovals) / 1_000_000,
                (tWrite - tFold) / 1_000_000,
                (tDeletes - tWrite) / 1_000_000,
                (tIndex - tDeletes) / 1_000_000,
                (tCommit - tIndex) / 1_000_000,
                (tDone - tCommit) / 1_000_000);
        return new Applied(
                snapshotId,
                plan.applied,
                plan.stale,
                plan.rows.size(),
                plan.rowsReplaced,
                plan.itemsRemoved,
                keyChanges.quarantined,
                found.filesRead(),
                found.filesInTable());
    }

    /**
     * The merge's one RowDelta: new data files, new delete files (replacing those they carry
     * forward), dropped and folded files, and the summary properties. It refuses (ValidationException)
     * when a concurrent commit since {@code base} touched what this one read.
     */
    static RowDelta rowDelta(
            Table table,
            Snapshot base,
            SmallFileRewrite.Plan files,
            List<DataFile> dataFiles,
            DeleteWriteResult deletes,
            Map<String, String> properties) {
        RowDelta delta = table.newRowDelta()
                .conflictDetectionFilter(Expressions.alwaysTrue())
                .validateNoConflictingDataFiles()
                .validateNoConflictingDeleteFiles()
                .validateDeletedFiles();
        if (base != null) {
            delta.validateFromSnapshot(base.snapshotId());
            // Files given deletes must still exist at commit, each named once (a merge deletes tens of
            // thousands of rows in a few hundred files); dropped files are checked by
            // validateDeletedFiles (Iceberg refuses a file in both lists).
            delta.validateDataFilesExist(files.positional().stream()
                    .map(r -> (CharSequence) r.task().file().location())
                    .distinct()
                    .toList());
        }
        properties.forEach(delta::set);
        dataFiles.forEach(delta::addRows);
        deletes.deleteFiles().forEach(delta::addDeletes);
        deletes.rewrittenDeleteFiles().forEach(delta::removeDeletes);
        files.dropped().forEach(delta::removeRows);
        files.droppedDeletes().forEach(delta::removeDeletes);
        return delta;
    }

    /** Thrown just before a commit when a fanned-out merge has marked the table since the plan. */
    static final class HeldByFanOut extends RuntimeException {
        HeldByFanOut(FanOutMark mark) {
            super("fanned-out merge " + mark.mergeId() + " is in progress since " + mark.started()
                    + "; merges resume once it commits or aborts (staged changes wait, nothing is lost)");
        }
    }

    void quarantineChange(Change c, String reason) {
        ObjectNode doc = JSON.createObjectNode();
        doc.put("reason", reason);
        doc.put("sequenceNumber", c.sequenceNumber());
        doc.put("operation", c.operation().name());
        doc.put("keys", DdbJson.writeItem(c.keys()));
        if (c.newImage() != null) {
            doc.put("newImage", DdbJson.writeItem(c.newImage()));
        }
        try {
            store.putQuarantined(
                    "merger/" + SequenceNumbers.pad(c.sequenceNumber()) + ".json",
                    JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(doc));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
        LOG.error("Change {} cannot be merged and is kept in the quarantine: {}", c.sequenceNumber(), reason);
    }
}
