package dev.ddb2iceberg.maintenance;

import dev.ddb2iceberg.commit.Checkpoint;
import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.history.ChangeHistory;
import dev.ddb2iceberg.index.IndexCache;
import dev.ddb2iceberg.index.IndexEntries;
import dev.ddb2iceberg.index.IndexKeys;
import dev.ddb2iceberg.index.KeyIndex;
import dev.ddb2iceberg.table.TableLayout;
import dev.ddb2iceberg.table.TaskRows;
import dev.ddb2iceberg.util.Futures;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.PartitionKey;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableUtil;
import org.apache.iceberg.actions.BinPackRewriteFilePlanner;
import org.apache.iceberg.actions.FileRewritePlan;
import org.apache.iceberg.actions.RemoveDanglingDeleteFilesAction;
import org.apache.iceberg.actions.RewriteDataFiles;
import org.apache.iceberg.actions.RewriteDataFilesCommitManager;
import org.apache.iceberg.actions.RewriteFileGroup;
import org.apache.iceberg.data.GenericFileWriterFactory;
import org.apache.iceberg.data.InternalRecordWrapper;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.FanoutDataWriter;
import org.apache.iceberg.io.OutputFileFactory;
import org.apache.iceberg.util.StructLikeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Compaction: Iceberg core's bin-pack planner picks the file groups worth rewriting (small files,
 * files with many deleted rows), partition by partition; each group is rewritten with its deletes
 * applied into target-sized files sorted by the key columns, and the groups commit together with
 * the starting sequence number (so deletes the merger commits meanwhile are not lost: the commit
 * fails instead, and the next run plans again). Bounded by bytes and groups per run; files already
 * at the target size without deletes are never picked again, so big tables compact over several runs.
 */
final class Compactor {
    private static final Logger LOG = LoggerFactory.getLogger(Compactor.class);
    private static final int IO_THREADS = 8;

    private final Table table;
    private final MaintenanceOptions options;

    Compactor(Table table, MaintenanceOptions options) {
        this.table = table;
        this.options = options;
    }

    MaintenanceResult.Compaction run(boolean dryRun) {
        Snapshot start = table.currentSnapshot();
        if (start == null) {
            return MaintenanceResult.Compaction.NONE;
        }
        int[] before = fileCounts(start);
        BinPackRewriteFilePlanner planner =
                new BinPackRewriteFilePlanner(table, Expressions.alwaysTrue(), start.snapshotId(), true);
        Map<String, String> plannerOptions = new HashMap<>();
        plannerOptions.put(
                BinPackRewriteFilePlanner.TARGET_FILE_SIZE_BYTES, Long.toString(options.targetFileSizeBytes()));
        plannerOptions.put(BinPackRewriteFilePlanner.MIN_INPUT_FILES, Integer.toString(options.minInputFiles()));
        plannerOptions.put(BinPackRewriteFilePlanner.DELETE_RATIO_THRESHOLD, Double.toString(options.deleteRatio()));
        plannerOptions.put(BinPackRewriteFilePlanner.DELETE_FILE_THRESHOLD, "5");
        // A group is what one rewrite holds open; keep it well inside a Lambda's memory and time.
        plannerOptions.put(
                BinPackRewriteFilePlanner.MAX_FILE_GROUP_SIZE_BYTES,
                Long.toString(Math.min(options.maxBytesPerRun(), 4 * options.targetFileSizeBytes())));
        planner.init(plannerOptions);

        List<RewriteFileGroup> selected = new ArrayList<>();
        int groupsLeft = 0;
        long bytes = 0;
        FileRewritePlan<RewriteDataFiles.FileGroupInfo, FileScanTask, DataFile, RewriteFileGroup> plan = planner.plan();
        try (CloseableIterable<RewriteFileGroup> groups = plan.groups()) {
            for (RewriteFileGroup group : groups) {
                if (selected.size() < options.maxGroupsPerRun()
                        && (selected.isEmpty() || bytes + group.inputFilesSizeInBytes() <= options.maxBytesPerRun())) {
                    selected.add(group);
                    bytes += group.inputFilesSizeInBytes();
                } else {
                    groupsLeft++;
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        int inputFiles =
                selected.stream().mapToInt(RewriteFileGroup::inputFileNum).sum();
        if (dryRun || selected.isEmpty()) {
            return new MaintenanceResult.Compaction(
                    selected.size(), inputFiles, bytes, 0, 0, before[0], before[1], before[0], before[1], groupsLeft);
        }

        String operationId = "compaction-" + UUID.randomUUID();
        int written = 0;
        // When the merger keeps a key index, the commit says where the moved rows went.
        boolean keepIndex = KeyIndex.resolve(table, start).manifest() != null;
        IndexEntries.Builder moves = new IndexEntries.Builder();
        // Groups are independent (one partition each): rewrite them side by side, since reading many
        // small files and their deletes is mostly waiting on S3.
        ExecutorService pool = Executors.newFixedThreadPool(Math.min(selected.size(), IO_THREADS));
        try {
            List<Future<Rewritten>> rewrites = new ArrayList<>();
            for (RewriteFileGroup group : selected) {
                rewrites.add(pool.submit(() -> rewrite(group, operationId, keepIndex)));
            }
            for (int i = 0; i < selected.size(); i++) {
                Rewritten out = Futures.join(rewrites.get(i), "compacting");
                selected.get(i).setOutputFiles(out.files());
                written += out.files().size();
                out.moves().forEach(moves::add);
            }
        } finally {
            pool.shutdownNow();
        }
        Map<String, String> summary = Checkpoint.carried(table);
        if (keepIndex) {
            // The rewritten files' rows are all in the moves delta, and no concurrent commit can have
            // deleted any of them (the commit would fail), so the parent's index plus these moves
            // describes the compacted snapshot, whichever snapshot the commit lands on.
            summary.put(
                    PipelineProperties.KEY_INDEX_MOVES, KeyIndex.writeMoves(table, moves.build(), new IndexCache(0)));
        }
        new RewriteDataFilesCommitManager(table, start.snapshotId(), true, summary)
                .commitOrClean(new HashSet<>(selected));
        int dangling = removeDanglingDeletes();
        table.refresh();
        int[] after = fileCounts(table.currentSnapshot());
        LOG.info(
                "Compacted {} groups: {} files ({} bytes) into {}; removed {} dangling delete files; data files {} -> {},"
                        + " delete files {} -> {}; {} groups left for later runs",
                selected.size(),
                inputFiles,
                bytes,
                written,
                dangling,
                before[0],
                after[0],
                before[1],
                after[1],
                groupsLeft);
        return new MaintenanceResult.Compaction(
                selected.size(),
                inputFiles,
                bytes,
                written,
                dangling,
                before[0],
                before[1],
                after[0],
                after[1],
                groupsLeft);
    }

    /**
     * Rewrites one group: the live rows of its files, merged in key order (each input file is
     * sorted already, so a k-way merge keeps memory flat), written as target-sized files.
     */
    /** A group's new files, and each moved row's new place when the key index is kept. */
    private record Rewritten(Set<DataFile> files, List<IndexEntries.Entry> moves) {}

    private Rewritten rewrite(RewriteFileGroup group, String operationId, boolean keepIndex) {
        TableLayout layout = TableLayout.of(table);
        // A change history is sorted by sequence number (time order), the table itself by key.
        Comparator<Record> byKey = ChangeHistory.isHistory(table)
                ? Comparator.comparing(r -> (String) r.getField(TableLayout.SEQ))
                : layout.keyOrder();
        PriorityQueue<Head> heads = new PriorityQueue<>((a, b) -> byKey.compare(a.row, b.row));
        List<CloseableIterable<Record>> open = new ArrayList<>();
        PartitionSpec spec = table.specs().get(group.outputSpecId());
        PartitionKey partition = new PartitionKey(spec, table.schema());
        InternalRecordWrapper wrapper = new InternalRecordWrapper(table.schema().asStruct());
        GenericFileWriterFactory writers = new GenericFileWriterFactory.Builder(table)
                .dataFileFormat(FileFormat.PARQUET)
                .build();
        OutputFileFactory files = OutputFileFactory.builderFor(
                        table, group.info().globalIndex(), 0)
                .operationId(operationId)
                .format(FileFormat.PARQUET)
                .build();
        FanoutDataWriter<Record> writer = new FanoutDataWriter<>(writers, files, table.io(), group.maxOutputFileSize());
        // Rows in write order per output partition: each partition's files take them in that order.
        StructLikeMap<List<IndexEntries.Entry>> written = StructLikeMap.create(spec.partitionType());
        try (writer) {
            for (FileScanTask task : group.fileScanTasks()) {
                CloseableIterable<Record> rows = TaskRows.read(table, task, table.schema());
                open.add(rows);
                Iterator<Record> it = rows.iterator();
                if (it.hasNext()) {
                    heads.add(new Head(it.next(), it));
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
                    rows.add(new IndexEntries.Entry(
                            IndexKeys.encode(layout.keyOf(head.row)), null, 0, new BigInteger((String)
                                    head.row.getField(TableLayout.SEQ))));
                }
                if (head.rest.hasNext()) {
                    heads.add(new Head(head.rest.next(), head.rest));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            for (CloseableIterable<Record> rows : open) {
                try {
                    rows.close();
                } catch (IOException ignored) {
                    // reading is done; nothing to lose
                }
            }
        }
        List<DataFile> out = writer.result().dataFiles();
        List<IndexEntries.Entry> moves = new ArrayList<>();
        if (keepIndex) {
            StructLikeMap<int[]> next = StructLikeMap.create(spec.partitionType());
            for (DataFile file : out) { // a partition's files, in the order its writer filled them
                List<IndexEntries.Entry> rows = written.get(file.partition());
                int[] at = next.computeIfAbsent(file.partition(), p -> new int[1]);
                for (long pos = 0; pos < file.recordCount(); pos++) {
                    IndexEntries.Entry row = rows.get(at[0]++);
                    moves.add(new IndexEntries.Entry(row.key(), file.location(), pos, row.sequence()));
                }
            }
            if (moves.size() != written.values().stream().mapToInt(List::size).sum()) {
                throw new IllegalStateException("compaction wrote " + moves.size() + " rows into files, but "
                        + written.values().stream().mapToInt(List::size).sum() + " rows to its writer");
            }
        }
        return new Rewritten(new HashSet<>(out), moves);
    }

    private record Head(Record row, Iterator<Record> rest) {}

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
