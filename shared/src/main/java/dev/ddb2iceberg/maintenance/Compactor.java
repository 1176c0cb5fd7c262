package dev.ddb2iceberg.maintenance;

import dev.ddb2iceberg.commit.Checkpoint;
import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.history.ChangeHistory;
import dev.ddb2iceberg.index.IndexCache;
import dev.ddb2iceberg.index.IndexEntries;
import dev.ddb2iceberg.index.IndexKeys;
import dev.ddb2iceberg.index.KeyIndex;
import dev.ddb2iceberg.model.SequenceNumbers;
import dev.ddb2iceberg.table.RowLineage;
import dev.ddb2iceberg.table.TableLayout;
import dev.ddb2iceberg.table.TaskRows;
import dev.ddb2iceberg.util.Futures;
import dev.ddb2iceberg.write.ParquetRowCopy;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.PriorityQueue;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.iceberg.BaseFileScanTask;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileContent;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.PartitionKey;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.PartitionSpecParser;
import org.apache.iceberg.RewriteFiles;
import org.apache.iceberg.Schema;
import org.apache.iceberg.SchemaParser;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableUtil;
import org.apache.iceberg.actions.RemoveDanglingDeleteFilesAction;
import org.apache.iceberg.data.GenericDeleteFilter;
import org.apache.iceberg.data.GenericFileWriterFactory;
import org.apache.iceberg.data.InternalRecordWrapper;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.deletes.PositionDeleteIndex;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.ValidationException;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.expressions.ResidualEvaluator;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.FanoutDataWriter;
import org.apache.iceberg.io.OutputFileFactory;
import org.apache.iceberg.io.RollingDataWriter;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.StructLikeMap;
import org.apache.parquet.schema.MessageType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Compaction: {@link CompactionPlanner} picks the file groups worth rewriting (files with enough of
 * their rows deleted, a partition's small files), the most benefit per byte first; each group is
 * rewritten with its deletes applied into target-sized files sorted by the key columns, and commits
 * on its own (as Iceberg's partial-progress rewrite does), validated from the snapshot it read, so a
 * delete the merger commits meanwhile is never lost: that group's commit fails, and the group is
 * read and written again from the new snapshot, a few times at most. A run stops taking groups at
 * its bounds (bytes, groups, time); the next run goes on with what is left.
 */
public final class Compactor {
    private static final Logger LOG = LoggerFactory.getLogger(Compactor.class);
    private static final int IO_THREADS = 8;
    /** Distinct writer ids for the new files' names, within one JVM (the operation id tells runs apart). */
    private static final AtomicInteger WRITER_IDS = new AtomicInteger();
    /** A group that loses this many races to merges is left to the next run. */
    static final int GROUP_ATTEMPTS = 3;

    private final Table table;
    private final MaintenanceOptions options;

    Compactor(Table table, MaintenanceOptions options) {
        this.table = table;
        this.options = options;
    }

    MaintenanceResult.Compaction run(boolean dryRun, List<String> conflicts) {
        long startNanos = System.nanoTime();
        Snapshot start = table.currentSnapshot();
        if (start == null) {
            return MaintenanceResult.Compaction.NONE;
        }
        int[] before = fileCounts(start);
        List<CompactionPlanner.Group> planned = new CompactionPlanner(options).plan(table, start);
        List<CompactionPlanner.Group> selected = new ArrayList<>();
        long bytes = 0;
        for (CompactionPlanner.Group group : planned) {
            if (selected.size() < options.maxGroupsPerRun()
                    && (selected.isEmpty() || bytes + group.bytes() <= options.maxBytesPerRun())) {
                selected.add(group);
                bytes += group.bytes();
            }
        }
        if (dryRun || selected.isEmpty()) {
            int inputFiles =
                    selected.stream().mapToInt(CompactionPlanner.Group::files).sum();
            return new MaintenanceResult.Compaction(
                    selected.size(),
                    inputFiles,
                    bytes,
                    0,
                    0,
                    before[0],
                    before[1],
                    before[0],
                    before[1],
                    planned.size() - selected.size());
        }

        String operationId = "compaction-" + UUID.randomUUID();
        // When the merger keeps a key index, each commit says where the moved rows went.
        boolean keepIndex = KeyIndex.resolve(table, start).manifest() != null;
        int done = 0;
        int inputFiles = 0;
        long bytesRewritten = 0;
        int written = 0;
        long deadline = startNanos + options.maxRunSeconds() * 1_000_000_000L;
        // Groups are independent (one partition each): rewrite them side by side, since reading files
        // is partly waiting on S3; each commits as soon as it is written, in plan order.
        ExecutorService pool = Executors.newFixedThreadPool(Math.min(selected.size(), IO_THREADS));
        try {
            List<Future<Rewritten>> rewrites = new ArrayList<>();
            for (CompactionPlanner.Group group : selected) {
                rewrites.add(pool.submit(() -> System.nanoTime() > deadline
                        ? null // past the run's time: left for the next run
                        : rewrite(group.tasks(), operationId, keepIndex)));
            }
            for (int i = 0; i < selected.size(); i++) {
                CompactionPlanner.Group group = selected.get(i);
                Rewritten out = Futures.join(rewrites.get(i), "compacting");
                if (out == null) {
                    continue;
                }
                Rewritten committed =
                        commitWithRetries(locations(group), out, start, operationId, keepIndex, conflicts);
                if (committed != null) {
                    done++;
                    inputFiles += committed.inputs().size();
                    // What committed: a retried group may have lost files a merge dropped meanwhile.
                    bytesRewritten += committed.inputs().stream()
                            .mapToLong(t -> t.file().fileSizeInBytes())
                            .sum();
                    written += committed.files().size();
                }
            }
        } finally {
            pool.shutdownNow();
        }
        int dangling = removeDanglingDeletes();
        table.refresh();
        int[] after = fileCounts(table.currentSnapshot());
        int left = planned.size() - done;
        LOG.info(
                "Compacted {} groups: {} files ({} bytes) into {} in {} ms; removed {} dangling delete files; data files"
                        + " {} -> {}, delete files {} -> {}; {} groups left for later runs",
                done,
                inputFiles,
                bytesRewritten,
                written,
                (System.nanoTime() - startNanos) / 1_000_000,
                dangling,
                before[0],
                after[0],
                before[1],
                after[1],
                left);
        return new MaintenanceResult.Compaction(
                done, inputFiles, bytesRewritten, written, dangling, before[0], before[1], after[0], after[1], left);
    }

    private static Set<String> locations(CompactionPlanner.Group group) {
        Set<String> out = new HashSet<>();
        group.tasks().forEach(t -> out.add(t.file().location()));
        return out;
    }

    /** The groups worth rewriting now, most benefit per byte first (a fan-out hands them to workers). */
    List<CompactionPlanner.Group> plan() {
        table.refresh();
        Snapshot start = table.currentSnapshot();
        return start == null ? List.of() : new CompactionPlanner(options).plan(table, start);
    }

    /**
     * One group of a fan-out, named by its files: those the table still has are rewritten and
     * committed as {@link #run} does a group (a worker retried after its commit finds its files gone
     * and does nothing). Returns what committed: groups 0 or 1, files and bytes in, files out.
     */
    MaintenanceResult.Compaction compactGroup(Set<String> files, List<String> conflicts) {
        table.refresh();
        Snapshot start = table.currentSnapshot();
        int[] before = fileCounts(start);
        List<FileScanTask> tasks = start == null ? null : tasksNow(files, start);
        Rewritten committed = null;
        if (tasks != null) {
            String operationId = "compaction-" + UUID.randomUUID();
            boolean keepIndex = KeyIndex.resolve(table, start).manifest() != null;
            Rewritten out = rewrite(tasks, operationId, keepIndex);
            committed = commitWithRetries(files, out, start, operationId, keepIndex, conflicts);
        } else {
            LOG.info(
                    "None of the {} files of this compaction group is in the table any more: nothing to do",
                    files.size());
        }
        table.refresh();
        int[] after = fileCounts(table.currentSnapshot());
        if (committed == null) {
            return new MaintenanceResult.Compaction(
                    0, 0, 0, 0, 0, before[0], before[1], after[0], after[1], tasks == null ? 0 : 1);
        }
        long bytes = committed.inputs().stream()
                .mapToLong(t -> t.file().fileSizeInBytes())
                .sum();
        return new MaintenanceResult.Compaction(
                1,
                committed.inputs().size(),
                bytes,
                committed.files().size(),
                0,
                before[0],
                before[1],
                after[0],
                after[1],
                0);
    }

    /** After a fan-out's groups: the position deletes left dangling (v2), removed. */
    int finish() {
        return removeDanglingDeletes();
    }

    /**
     * Commits one group's new files in place of its inputs (and their own deletes). A merge that
     * deleted rows from an input meanwhile makes the commit fail validation: the group's files are
     * then read again, with their new deletes, from the table as it is now, and written again
     * (without any file a merge dropped or folded meanwhile). Returns what committed, or null.
     */
    private Rewritten commitWithRetries(
            Set<String> group,
            Rewritten out,
            Snapshot start,
            String operationId,
            boolean keepIndex,
            List<String> conflicts) {
        Snapshot from = start;
        for (int attempt = 1; ; attempt++) {
            try {
                commitGroup(out, from);
                return out;
            } catch (CommitFailedException busy) {
                // The catalog refused the swap past Iceberg's own retries (others kept committing): the
                // files written are still right, so the same commit is tried again, validated from the
                // same snapshot, without reading and writing the group again.
                if (attempt >= GROUP_ATTEMPTS) {
                    deleteQuietly(out);
                    conflicts.add("compact: a group of " + group.size() + " files could not commit in " + attempt
                            + " attempts and is left to the next run: " + busy.getMessage());
                    return null;
                }
                LOG.info(
                        "A compaction group of {} files could not commit ({}); committing the same files again",
                        group.size(),
                        busy.getMessage());
                table.refresh();
            } catch (ValidationException lost) {
                deleteQuietly(out);
                if (attempt >= GROUP_ATTEMPTS) {
                    conflicts.add("compact: a group of " + group.size() + " files lost " + attempt
                            + " races to other commits and is left to the next run: " + lost.getMessage());
                    return null;
                }
                LOG.info(
                        "A compaction group of {} files lost a race ({}); reading it again from the new snapshot",
                        group.size(),
                        lost.getMessage());
                table.refresh();
                from = table.currentSnapshot();
                List<FileScanTask> again = tasksNow(group, from);
                if (again == null) {
                    LOG.info("Every file of a compaction group was dropped by another commit meanwhile: nothing to do");
                    return null;
                }
                out = rewrite(again, operationId, keepIndex);
            }
        }
    }

    /**
     * The group's files {@code snapshot} still has, with their deletes now (a merge may have dropped
     * or folded some); null if none is left.
     */
    private List<FileScanTask> tasksNow(Set<String> wanted, Snapshot snapshot) {
        List<FileScanTask> found = new ArrayList<>();
        try (CloseableIterable<FileScanTask> tasks = table.newScan()
                .useSnapshot(snapshot.snapshotId())
                .ignoreResiduals()
                .planFiles()) {
            for (FileScanTask t : tasks) {
                if (wanted.contains(t.file().location())) {
                    found.add(t);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return found.isEmpty() ? null : found;
    }

    /**
     * One group's commit: its inputs and their own deletes out, its new files in (with the sequence
     * number of the snapshot it read, as Iceberg's rewrite does), validated against every commit since.
     */
    private void commitGroup(Rewritten out, Snapshot from) {
        RewriteFiles rewrite = table.newRewrite().validateFromSnapshot(from.snapshotId());
        rewrite.dataSequenceNumber(from.sequenceNumber());
        for (FileScanTask task : out.inputs()) {
            rewrite.deleteFile(task.file());
            TaskRows.ownDeletes(task).forEach(rewrite::deleteFile);
        }
        out.files().forEach(rewrite::addFile);
        Checkpoint.carried(table).forEach(rewrite::set);
        if (out.moves() != null) {
            // The rewritten files' rows are all in the moves delta, and no concurrent commit can have
            // deleted any of them (the commit would fail), so the parent's index plus these moves
            // describes the compacted snapshot, whichever snapshot the commit lands on.
            rewrite.set(
                    PipelineProperties.KEY_INDEX_MOVES,
                    KeyIndex.writeMoves(table, out.moves().build(), new IndexCache(0)));
        }
        rewrite.commit();
    }

    /** Best effort: a lost commit's new files are referenced by nothing; orphan cleanup catches any left. */
    private void deleteQuietly(Rewritten out) {
        for (DataFile f : out.files()) {
            try {
                table.io().deleteFile(f.location());
            } catch (RuntimeException ignored) {
                // orphan cleanup removes it later
            }
        }
    }

    /**
     * A group rewritten: the files read (with the deletes applied), the new files, and each moved
     * row's new place when the key index is kept (else null).
     */
    private record Rewritten(List<FileScanTask> inputs, Set<DataFile> files, IndexEntries.Builder moves) {}

    /** Several sorted files merged into one sorted run: the new files, and each row's key index entry in them. */
    public record Merged(List<DataFile> files, IndexEntries entries) {}

    /**
     * Merges data files that are not committed (the parallel load's batches: files of one partition,
     * each sorted by key, without deletes) into files of about {@code targetFileSizeBytes} sorted by
     * key, as compaction merges a partition's small files: columns copied where they match the
     * table's, records otherwise. The caller commits the result (or not).
     *
     * @param withEntries also return each row's key, new place and sequence number (for the key index)
     */
    public static Merged mergeSorted(
            Table table, List<DataFile> files, long targetFileSizeBytes, String operationId, boolean withEntries) {
        String schema = SchemaParser.toJson(table.schema());
        List<FileScanTask> tasks = new ArrayList<>();
        for (DataFile file : files) {
            tasks.add(new BaseFileScanTask(
                    file,
                    new DeleteFile[0],
                    schema,
                    PartitionSpecParser.toJson(table.specs().get(file.specId())),
                    ResidualEvaluator.unpartitioned(Expressions.alwaysTrue())));
        }
        Rewritten out = new Compactor(table, MaintenanceOptions.DEFAULTS.withTargetFileSize(targetFileSizeBytes))
                .rewrite(tasks, operationId, withEntries);
        return new Merged(
                new ArrayList<>(out.files()),
                out.moves() == null ? null : out.moves().build());
    }

    /**
     * Rewrites one group: the live rows of its files, merged in key order (each input file is
     * sorted already, so a k-way merge keeps memory flat), written as target-sized files of the
     * table's current spec. Files whose columns are still the table's are copied column value by
     * column value ({@link ParquetRowCopy}); any other group goes through Iceberg's records.
     */
    private Rewritten rewrite(List<FileScanTask> tasks, String operationId, boolean keepIndex) {
        try {
            Rewritten copied = copy(tasks, operationId, keepIndex);
            return copied != null ? copied : rewriteRecords(tasks, operationId, keepIndex);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A change history is sorted by sequence number (time order), the table itself by key. */
    private Comparator<Record> order(Schema rows) {
        return ChangeHistory.isHistory(table)
                ? Comparator.comparing(r -> (String) r.getField(TableLayout.SEQ))
                : TableLayout.of(table).keyOrder(rows);
    }

    /**
     * The fast path: every column copied below the records, row by row. One file's live positions
     * come from its deletes, and its key and sequence values for the key index from the copy;
     * several files' order comes from their key and sequence columns read as records (with the
     * deletes applied). Null when a file's columns differ from the table's or a file is of an
     * older partition spec: the record path takes it.
     */
    private Rewritten copy(List<FileScanTask> tasks, String operationId, boolean keepIndex) throws IOException {
        PartitionSpec spec = table.spec();
        for (FileScanTask task : tasks) {
            if (task.file().specId() != spec.specId() || task.file().format() != FileFormat.PARQUET) {
                return null;
            }
        }
        TableLayout layout = TableLayout.of(table);
        List<String> orderColumns = new ArrayList<>(layout.keyColumns());
        orderColumns.add(TableLayout.SEQ);
        List<Types.NestedField> projected =
                new ArrayList<>(table.schema().select(orderColumns).columns());
        projected.add(MetadataColumns.ROW_POSITION);
        Schema positions = new Schema(projected);
        Comparator<Record> byKey = order(positions);
        // In v3 the lineage columns too: each moved row keeps its row id and sequence number.
        Schema copied = RowLineage.ofMovedRows(table);
        MessageType target = ParquetRowCopy.target(copied);
        List<ParquetRowCopy.Source> sources = new ArrayList<>();
        List<CloseableIterable<Record>> open = new ArrayList<>();
        try {
            for (FileScanTask task : tasks) {
                ParquetRowCopy.Source source =
                        ParquetRowCopy.Source.open(table.io().newInputFile(task.file()), target);
                if (source == null) {
                    LOG.info(
                            "{} has columns of an older schema: its group is rewritten through records",
                            task.file().location());
                    return null;
                }
                sources.add(source.inheritLineage(task.file()));
            }
            OutputFileFactory files = OutputFileFactory.builderFor(table, WRITER_IDS.incrementAndGet(), 0)
                    .operationId(operationId)
                    .format(FileFormat.PARQUET)
                    .build();
            StructLike partition = tasks.get(0).file().partition();
            RollingDataWriter<ParquetRowCopy.Source> writer = new RollingDataWriter<>(
                    ParquetRowCopy.writers(table, copied),
                    files,
                    table.io(),
                    options.targetFileSizeBytes(),
                    spec,
                    partition);
            List<IndexEntries.Entry> written = new ArrayList<>();
            int rowPosition = positions.columns().size() - 1;
            FileScanTask only = tasks.get(0);
            try (writer) {
                if (tasks.size() == 1
                        && only.deletes().stream().noneMatch(d -> d.content() == FileContent.EQUALITY_DELETES)) {
                    // One file: its rows are in order already, and its deletes say which are live.
                    // Key and sequence number are kept from the copy itself, for the key index.
                    PositionDeleteIndex deleted = new GenericDeleteFilter(
                                    table.io(), only, table.schema(), table.schema())
                            .deletedRowPositions();
                    ParquetRowCopy.Source source = sources.get(0);
                    if (keepIndex) {
                        source.keepValuesOf(orderColumns.stream()
                                .mapToInt(c -> ParquetRowCopy.columnIndex(target, c))
                                .toArray());
                    }
                    for (long pos = 0; pos < only.file().recordCount(); pos++) {
                        if (deleted != null && deleted.isDeleted(pos)) {
                            continue;
                        }
                        source.moveTo(pos);
                        writer.write(source);
                        if (keepIndex) {
                            written.add(keptRow(layout, source));
                        }
                    }
                } else {
                    // Several files (or equality deletes): the live rows and their order come from
                    // the key and sequence columns read as records, merged across the files.
                    PriorityQueue<Head> heads = new PriorityQueue<>((a, b) -> byKey.compare(a.row, b.row));
                    for (int i = 0; i < tasks.size(); i++) {
                        CloseableIterable<Record> rows = TaskRows.read(table, tasks.get(i), positions);
                        open.add(rows);
                        Iterator<Record> it = rows.iterator();
                        if (it.hasNext()) {
                            heads.add(new Head(it.next(), it, i));
                        }
                    }
                    while (!heads.isEmpty()) {
                        Head head = heads.poll();
                        ParquetRowCopy.Source source = sources.get(head.source);
                        source.moveTo(head.row.get(rowPosition, Long.class));
                        writer.write(source);
                        if (keepIndex) {
                            written.add(movedRow(layout, head.row));
                        }
                        if (head.rest.hasNext()) {
                            heads.add(new Head(head.rest.next(), head.rest, head.source));
                        }
                    }
                }
            }
            List<DataFile> out = writer.result().dataFiles();
            StructLikeMap<List<IndexEntries.Entry>> byPartition = StructLikeMap.create(spec.partitionType());
            byPartition.put(partition, written);
            return new Rewritten(tasks, new HashSet<>(out), keepIndex ? moves(out, byPartition) : null);
        } finally {
            closeAll(open);
            for (ParquetRowCopy.Source source : sources) {
                source.close();
            }
        }
    }

    /** The key index's entry of the row {@code source} copied last, from its kept key and sequence values. */
    private IndexEntries.Entry keptRow(TableLayout layout, ParquetRowCopy.Source source) {
        List<String> keys = layout.keyColumns();
        Object[] key = new Object[keys.size()];
        for (int i = 0; i < key.length; i++) {
            key[i] = ParquetRowCopy.icebergValue(
                    source.kept(i), table.schema().findField(keys.get(i)).type());
        }
        String seq = (String) ParquetRowCopy.icebergValue(source.kept(key.length), Types.StringType.get());
        return new IndexEntries.Entry(IndexKeys.encode(List.of(key)), null, 0, SequenceNumbers.toBigInteger(seq));
    }

    /** A row's key and sequence number, for the key index; its new place is filled in once written. */
    private static IndexEntries.Entry movedRow(TableLayout layout, Record row) {
        return new IndexEntries.Entry(
                IndexKeys.encode(layout.keyOf(row)), null, 0, SequenceNumbers.toBigInteger((String)
                        row.getField(TableLayout.SEQ)));
    }

    private static void closeAll(List<CloseableIterable<Record>> open) {
        for (CloseableIterable<Record> rows : open) {
            try {
                rows.close();
            } catch (IOException ignored) {
                // reading is done; nothing to lose
            }
        }
    }

    /** The record path: every row read into an Iceberg record and written from it. */
    private Rewritten rewriteRecords(List<FileScanTask> tasks, String operationId, boolean keepIndex) {
        TableLayout layout = TableLayout.of(table);
        Comparator<Record> byKey = order(table.schema());
        PriorityQueue<Head> heads = new PriorityQueue<>((a, b) -> byKey.compare(a.row, b.row));
        List<CloseableIterable<Record>> open = new ArrayList<>();
        PartitionSpec spec = table.spec();
        PartitionKey partition = new PartitionKey(spec, table.schema());
        InternalRecordWrapper wrapper = new InternalRecordWrapper(table.schema().asStruct());
        // In v3 the rows are read and written with their lineage, which they keep.
        Schema read = RowLineage.ofMovedRows(table);
        GenericFileWriterFactory writers = new GenericFileWriterFactory.Builder(table)
                .dataFileFormat(FileFormat.PARQUET)
                .dataSchema(read)
                .build();
        OutputFileFactory files = OutputFileFactory.builderFor(table, WRITER_IDS.incrementAndGet(), 0)
                .operationId(operationId)
                .format(FileFormat.PARQUET)
                .build();
        FanoutDataWriter<Record> writer =
                new FanoutDataWriter<>(writers, files, table.io(), options.targetFileSizeBytes());
        // Rows in write order per output partition: each partition's files take them in that order.
        StructLikeMap<List<IndexEntries.Entry>> written = StructLikeMap.create(spec.partitionType());
        try (writer) {
            for (FileScanTask task : tasks) {
                CloseableIterable<Record> rows = TaskRows.read(table, task, read);
                open.add(rows);
                Iterator<Record> it = rows.iterator();
                if (it.hasNext()) {
                    heads.add(new Head(it.next(), it, 0));
                }
            }
            while (!heads.isEmpty()) {
                Head head = heads.poll();
                partition.partition(wrapper.wrap(head.row));
                writer.write(head.row, spec, partition);
                if (keepIndex) {
                    List<IndexEntries.Entry> rows = written.get(partition);
                    if (rows == null) {
                        rows = new ArrayList<>();
                        written.put(partition.copy(), rows);
                    }
                    rows.add(movedRow(layout, head.row));
                }
                if (head.rest.hasNext()) {
                    heads.add(new Head(head.rest.next(), head.rest, 0));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            closeAll(open);
        }
        List<DataFile> out = writer.result().dataFiles();
        return new Rewritten(tasks, new HashSet<>(out), keepIndex ? moves(out, written) : null);
    }

    /**
     * Each written row's new place: a partition's rows went to its files in the order its writer
     * filled them, so the files' row counts, in order, say where each row is.
     */
    private IndexEntries.Builder moves(List<DataFile> out, StructLikeMap<List<IndexEntries.Entry>> written) {
        IndexEntries.Builder moves = new IndexEntries.Builder();
        int moved = 0;
        StructLikeMap<int[]> next = StructLikeMap.create(table.spec().partitionType());
        for (DataFile file : out) {
            List<IndexEntries.Entry> rows = written.get(file.partition());
            int[] at = next.computeIfAbsent(file.partition(), p -> new int[1]);
            for (long pos = 0; pos < file.recordCount(); pos++) {
                IndexEntries.Entry row = rows.get(at[0]++);
                moves.add(new IndexEntries.Entry(row.key(), file.location(), pos, row.sequence()));
                moved++;
            }
        }
        int sent = written.values().stream().mapToInt(List::size).sum();
        if (moved != sent) {
            throw new IllegalStateException(
                    "compaction wrote " + moved + " rows into files, but " + sent + " rows to its writer");
        }
        return moves;
    }

    /** One input's next row in the k-way merge, the rest of its rows, and which input it is. */
    private record Head(Record row, Iterator<Record> rest, int source) {}

    /** Position deletes whose data files are all rewritten (v2); v3's dangling vectors go in the rewrite itself. */
    private int removeDanglingDeletes() {
        table.refresh();
        if (TableUtil.formatVersion(table) >= 3) {
            return 0;
        }
        RemoveDanglingDeleteFilesAction remove = new RemoveDanglingDeleteFilesAction(table);
        Checkpoint.carried(table).forEach(remove::set);
        remove.set(PipelineProperties.KEY_INDEX_MOVES, KeyIndex.NO_MOVES); // no row moves: the key index still holds
        int removed = 0;
        for (Object ignored : remove.execute().removedDeleteFiles()) {
            removed++;
        }
        return removed;
    }

    /** Data files and delete files in a snapshot, from its summary. */
    static int[] fileCounts(Snapshot s) {
        if (s == null) {
            return new int[] {0, 0};
        }
        return new int[] {
            Integer.parseInt(s.summary().getOrDefault("total-data-files", "0")),
            Integer.parseInt(s.summary().getOrDefault("total-delete-files", "0"))
        };
    }
}
