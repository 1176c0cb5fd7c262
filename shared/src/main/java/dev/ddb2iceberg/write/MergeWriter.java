package dev.ddb2iceberg.write;

import dev.ddb2iceberg.index.IndexKeys;
import dev.ddb2iceberg.lookup.LiveRow;
import dev.ddb2iceberg.lookup.WrittenRow;
import dev.ddb2iceberg.model.SequenceNumbers;
import dev.ddb2iceberg.table.KeyOrder;
import dev.ddb2iceberg.table.RowLineage;
import dev.ddb2iceberg.table.TableLayout;
import dev.ddb2iceberg.table.TaskRows;
import dev.ddb2iceberg.util.Futures;
import dev.ddb2iceberg.util.Slices;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.function.Function;
import java.util.function.Predicate;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileContent;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.PartitionKey;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.TableUtil;
import org.apache.iceberg.data.BaseDeleteLoader;
import org.apache.iceberg.data.GenericFileWriterFactory;
import org.apache.iceberg.data.InternalRecordWrapper;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.deletes.BaseDVFileWriter;
import org.apache.iceberg.deletes.DeleteGranularity;
import org.apache.iceberg.deletes.PositionDelete;
import org.apache.iceberg.deletes.PositionDeleteIndex;
import org.apache.iceberg.encryption.EncryptedOutputFile;
import org.apache.iceberg.io.ClusteredDataWriter;
import org.apache.iceberg.io.DeleteWriteResult;
import org.apache.iceberg.io.FanoutPositionOnlyDeleteWriter;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.OutputFileFactory;
import org.apache.iceberg.io.RollingDataWriter;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.CharSequenceSet;
import org.apache.iceberg.util.ContentFileUtil;
import org.apache.iceberg.util.StructLikeMap;
import org.apache.parquet.schema.MessageType;
import org.roaringbitmap.RoaringBitmap;

/**
 * Writes what one merge commits: new data files for the upserted items, sorted by partition and
 * key so their key bounds prune well, and position deletes (format v2) or deletion vectors (v3)
 * for the rows they replace or remove. Never equality deletes: not every engine reads them.
 */
public final class MergeWriter {
    private static final long TARGET_FILE_SIZE = 256L << 20;
    /** File-scoped delete files written side by side (each costs its own S3 round trips). */
    private static final int DELETE_WRITERS = 8;

    private final Table table;
    private final String runId;
    private final DeletePositionsCache heldDeletes;
    private int taskId;

    public MergeWriter(Table table, String runId) {
        this.table = table;
        this.runId = runId;
        this.heldDeletes = DeletePositionsCache.shared();
    }

    /**
     * Writes the rows, one task per partition on {@code pool} (Parquet encoding and compression are
     * the merge's heaviest CPU work, and partitions are independent), each sorted by key.
     */
    public Written writeRows(List<Record> rows, TableLayout layout, ExecutorService pool) {
        List<StructLike> partitions = rows.isEmpty() ? List.of() : partitionsOf(table, rows, pool);
        return writeRows(rows, partitions, List.of(), layout.keyOrder(), layout, pool);
    }

    /**
     * Writes rows that no key index follows (the change history's), each partition's sorted by
     * {@code order}: only the files, not where each row went.
     */
    public List<DataFile> writeFiles(List<Record> rows, Comparator<Record> order, ExecutorService pool) {
        List<StructLike> partitions = rows.isEmpty() ? List.of() : partitionsOf(table, rows, pool);
        return writeRows(rows, partitions, List.of(), order, null, pool).files();
    }

    /**
     * As {@link #writeRows(List, TableLayout, ExecutorService)}, with each row's partition already
     * known ({@link #partitionsOf}) and rows moved from other files ({@link MovedRows}, each file's
     * rows in key order) copied into each partition's new file, merged in key order with its new rows.
     */
    public Written writeRows(
            List<Record> rows,
            List<StructLike> partitions,
            List<MovedRows> moved,
            TableLayout layout,
            ExecutorService pool) {
        return writeRows(rows, partitions, moved, layout.keyOrder(), layout, pool);
    }

    /** The rows' files; where each row went ({@link Written#rows}) only given the table's {@code layout}. */
    private Written writeRows(
            List<Record> rows,
            List<StructLike> partitions,
            List<MovedRows> moved,
            Comparator<Record> keyOrder,
            TableLayout layout,
            ExecutorService pool) {
        if (rows.isEmpty() && moved.isEmpty()) {
            return new Written(List.of(), List.of());
        }
        PartitionSpec spec = table.spec();
        Schema schema = schemaFor(rows, moved);
        // Each partition's rows, in the order partitions first appear. (Not StructLikeMap.entrySet():
        // it hashes every entry's value, here every field of every row, on this one thread.)
        StructLikeMap<Integer> slotOf = StructLikeMap.create(spec.partitionType());
        List<StructLike> partitionKeys = new ArrayList<>();
        List<List<Record>> partitionRows = new ArrayList<>();
        List<List<MovedRows>> partitionMoves = new ArrayList<>();
        for (int i = 0; i < rows.size() + moved.size(); i++) {
            StructLike partition = i < rows.size()
                    ? partitions.get(i)
                    : moved.get(i - rows.size()).task().file().partition();
            Integer slot = slotOf.get(partition);
            if (slot == null) {
                slot = partitionKeys.size();
                slotOf.put(partition, slot);
                partitionKeys.add(partition);
                partitionRows.add(new ArrayList<>());
                partitionMoves.add(new ArrayList<>());
            }
            if (i < rows.size()) {
                partitionRows.get(slot).add(rows.get(i));
            } else {
                partitionMoves.get(slot).add(moved.get(i - rows.size()));
            }
        }
        List<Future<Written>> writes = new ArrayList<>();
        for (int slot = 0; slot < partitionKeys.size(); slot++) {
            int task = taskId++;
            StructLike partition = partitionKeys.get(slot);
            List<Record> inPartition = partitionRows.get(slot);
            List<MovedRows> movedHere = partitionMoves.get(slot);
            writes.add(pool.submit(() -> movedHere.isEmpty()
                    ? writePartition(spec, partition, inPartition, keyOrder, schema, layout, task)
                    : writePartitionWithMoves(spec, partition, inPartition, movedHere, layout, schema, task)));
        }
        List<DataFile> files = new ArrayList<>();
        List<WrittenRow> locations = new ArrayList<>();
        for (Future<Written> write : writes) {
            Written w = Futures.join(write, "writing data files");
            files.addAll(w.files());
            locations.addAll(w.rows());
        }
        return new Written(files, locations);
    }

    /**
     * The partition (of the current spec) of each row, in the rows' order, computed on every core:
     * a bucket partition hashes each row's key, which on one thread is a tenth of a large merge.
     */
    public static List<StructLike> partitionsOf(Table table, List<Record> rows, ExecutorService pool) {
        PartitionSpec spec = table.spec();
        Schema schema = table.schema();
        return Slices.map(
                rows,
                pool,
                () -> new Partitioner(
                        new PartitionKey(spec, schema),
                        new InternalRecordWrapper(schema.asStruct()),
                        StructLikeMap.create(spec.partitionType())),
                (row, p) -> {
                    p.key().partition(p.wrapper().wrap(row));
                    return p.copyOfKey();
                },
                "finding the rows' partitions");
    }

    /**
     * One thread's partition key and row wrapper (neither may be shared), and one copy of each
     * partition it found: rows of the same partition share it, since a merge holds every row's
     * partition until its files are written (two objects a row, for a million rows, otherwise).
     */
    private record Partitioner(PartitionKey key, InternalRecordWrapper wrapper, Map<StructLike, StructLike> copies) {
        StructLike copyOfKey() {
            StructLike copy = copies.get(key);
            if (copy == null) {
                copy = key.copy();
                copies.put(copy, copy);
            }
            return copy;
        }
    }

    /** The data files written and where each row is (no rows when no key index follows them: {@link #writeFiles}). */
    public record Written(List<DataFile> files, List<WrittenRow> rows) {}

    /**
     * The columns of the merge's new files: the table's, and in v3, when the merge moves rows out of
     * the files it folds, the lineage columns, which keep each moved row's lineage ({@link
     * RowLineage}). Moved rows read whole have them already; the others are widened as written.
     */
    private Schema schemaFor(List<Record> rows, List<MovedRows> moved) {
        if (!RowLineage.kept(table)) {
            return table.schema();
        }
        int columns = table.schema().columns().size();
        boolean moves = !moved.isEmpty() || rows.stream().anyMatch(r -> r.size() > columns);
        return moves ? RowLineage.ofMovedRows(table) : table.schema();
    }

    private Written writePartition(
            PartitionSpec spec,
            StructLike partition,
            List<Record> rows,
            Comparator<Record> keyOrder,
            Schema schema,
            TableLayout layout,
            int task)
            throws IOException {
        KeyOrder.sort(rows, keyOrder); // sorted keys give each file tight key bounds, which prune later merges' reads
        GenericFileWriterFactory writers = new GenericFileWriterFactory.Builder(table)
                .dataFileFormat(FileFormat.PARQUET)
                .dataSchema(schema)
                .writerProperties(mergeFileSettings(table.properties()))
                .build();
        OutputFileFactory files = OutputFileFactory.builderFor(table, 0, task)
                .operationId(runId)
                .format(FileFormat.PARQUET)
                .build();
        ClusteredDataWriter<Record> writer = new ClusteredDataWriter<>(writers, files, table.io(), TARGET_FILE_SIZE);
        boolean widen = schema != table.schema();
        List<RowKey> keys = layout == null ? null : new ArrayList<>(rows.size());
        try (writer) {
            for (Record row : rows) {
                writer.write(widen ? RowLineage.widen(row, schema.asStruct()) : row, spec, partition);
                if (keys != null) {
                    keys.add(RowKey.of(layout.keyOf(row), row));
                }
            }
        }
        return located(writer.result().dataFiles(), rows.size(), keys);
    }

    /**
     * Where each of the {@code rows} rows went, given their {@code keys} in write order (null: not
     * wanted): a writer fills files one after another in write order, so each file holds the next
     * recordCount rows, at positions 0, 1, ...
     */
    private static Written located(List<DataFile> written, int rows, List<RowKey> keys) {
        long held = written.stream().mapToLong(DataFile::recordCount).sum();
        if (held != rows) {
            throw new IllegalStateException("wrote " + rows + " rows but the data files hold " + held);
        }
        if (keys == null) {
            return new Written(written, List.of());
        }
        List<WrittenRow> locations = new ArrayList<>(rows);
        int next = 0;
        for (DataFile file : written) {
            for (long pos = 0; pos < file.recordCount(); pos++) {
                RowKey key = keys.get(next++);
                locations.add(new WrittenRow(key.key(), key.sequence(), file.location(), pos));
            }
        }
        return new Written(written, locations);
    }

    /**
     * A written row's key, encoded as the key index keeps it, and its sequence number, taken as the
     * row is written ({@link WrittenRow} says why then).
     */
    private record RowKey(byte[] key, BigInteger sequence) {
        static RowKey of(List<Object> key, Record row) {
            return new RowKey(
                    IndexKeys.encode(key), SequenceNumbers.toBigInteger((String) row.getField(TableLayout.SEQ)));
        }
    }

    /**
     * The rows a merge moves out of one file it folds, to be copied column by column into the
     * merge's new file of the same partition ({@link ParquetRowCopy}) instead of being read into
     * records and written again: {@code file} is the data file's bytes (a small file, held in
     * memory), and {@code keys} holds, per live row in position order (and so in key order), its key
     * columns and sequence column ({@link #projection}), and {@code positions} its row position. That
     * is what orders the copied rows among the new ones, and what the key index records of them.
     */
    public record MovedRows(FileScanTask task, InputFile file, List<Record> keys, long[] positions) {
        public MovedRows {
            if (keys.size() != positions.length) {
                throw new IllegalArgumentException(keys.size() + " keys for " + positions.length + " positions");
            }
        }

        /** How many rows move. */
        public int size() {
            return positions.length;
        }

        /** The columns {@code keys} holds: the key columns, the sequence column, the row position last. */
        public static Schema projection(Schema schema, TableLayout layout) {
            List<String> names = new ArrayList<>(layout.keyColumns());
            names.add(TableLayout.SEQ);
            List<Types.NestedField> columns =
                    new ArrayList<>(schema.select(names).columns());
            columns.add(MetadataColumns.ROW_POSITION);
            return new Schema(columns);
        }
    }

    /**
     * One partition's new rows and the rows moved into it, merged in key order into its new files.
     * Each moved file's rows are copied from it as they come, so only their keys are in memory. A
     * file that cannot be copied (its columns are of an older schema) is read whole as records.
     */
    private Written writePartitionWithMoves(
            PartitionSpec spec,
            StructLike partition,
            List<Record> rows,
            List<MovedRows> moved,
            TableLayout layout,
            Schema schema,
            int task)
            throws IOException {
        layout.keyOrder().sort(rows);
        Comparator<List<Object>> keys = layout.keyListOrder();
        MessageType target = ParquetRowCopy.target(schema);
        boolean widen = schema != table.schema();
        // Heads of the sorted runs: the new rows (run -1) and each moved file's rows.
        PriorityQueue<Head> heads = new PriorityQueue<>((a, b) -> keys.compare(a.key, b.key));
        if (!rows.isEmpty()) {
            heads.add(new Head(-1, 0, layout.keyOf(rows.get(0))));
        }
        ParquetRowCopy.Source[] sources = new ParquetRowCopy.Source[moved.size()];
        List<List<Record>> whole = new ArrayList<>();
        List<RowKey> order = new ArrayList<>();
        RollingDataWriter<Object> writer;
        try {
            for (int m = 0; m < moved.size(); m++) {
                MovedRows move = moved.get(m);
                sources[m] = ParquetRowCopy.Source.open(move.file(), target);
                if (sources[m] != null) {
                    sources[m].inheritLineage(move.task().file());
                }
                whole.add(sources[m] == null ? rowsAt(move, schema) : null);
                if (move.size() > 0) {
                    heads.add(new Head(m, 0, layout.keyOf(move.keys().get(0))));
                }
            }
            writer = new RollingDataWriter<>(
                    ParquetRowCopy.recordsOrCopies(table, schema, mergeFileSettings(table.properties())),
                    OutputFileFactory.builderFor(table, 0, task)
                            .operationId(runId)
                            .format(FileFormat.PARQUET)
                            .build(),
                    table.io(),
                    TARGET_FILE_SIZE,
                    spec,
                    partition);
            try (writer) {
                while (!heads.isEmpty()) {
                    Head head = heads.poll();
                    List<Record> run = head.run < 0 ? rows : moved.get(head.run).keys();
                    Record row = run.get(head.next);
                    if (head.run < 0) {
                        writer.write(widen ? RowLineage.widen(row, schema.asStruct()) : row);
                    } else if (sources[head.run] != null) {
                        sources[head.run].moveTo(moved.get(head.run).positions()[head.next]);
                        writer.write(sources[head.run]);
                    } else {
                        writer.write(whole.get(head.run).get(head.next));
                    }
                    order.add(RowKey.of(head.key, row));
                    if (head.next + 1 < run.size()) {
                        heads.add(new Head(head.run, head.next + 1, layout.keyOf(run.get(head.next + 1))));
                    }
                }
            }
        } finally {
            for (ParquetRowCopy.Source source : sources) {
                if (source != null) {
                    source.close();
                }
            }
        }
        return located(writer.result().dataFiles(), order.size(), order);
    }

    /** The next row of a sorted run (-1: the new rows; else a moved file) and its key. */
    private record Head(int run, int next, List<Object> key) {}

    /** The whole rows of a moved file at its keys' positions, in the same order, as records of {@code schema}. */
    private List<Record> rowsAt(MovedRows move, Schema schema) {
        Set<Long> wanted = new HashSet<>();
        for (long position : move.positions()) {
            wanted.add(position);
        }
        List<Record> out = new ArrayList<>(move.keys().size());
        TaskRows.withPositions(table, move.task(), move.file(), schema, (pos, row) -> {
            if (wanted.contains(pos)) {
                out.add(row);
            }
        });
        if (out.size() != move.keys().size()) {
            throw new IllegalStateException(
                    "found " + out.size() + " of the " + move.keys().size() + " rows to move in "
                            + move.task().file().location());
        }
        return out;
    }

    /** A merge's dictionary budget per column chunk (Iceberg's default is 2 MB); delete files take it too. */
    static final String MERGE_DICT_SIZE_BYTES = "16384";

    /**
     * The writer settings of a merge's files, where the table does not set them itself. A merge's
     * files are short-lived (the next merge folds the small ones, compaction rewrites the rest with
     * the table's own settings), and writing them is on the merge's critical path:
     *
     * <ul>
     *   <li>zstd at level 1 instead of the codec's default 3: on our merge benchmark's items level 1
     *       compresses 3 to 8 times faster, for files 0.9 % larger;
     *   <li>a 16 KB dictionary budget: a column of many distinct values (a note, an id, a key) is
     *       hashed into a dictionary until the budget is full, and only then written plain; 16 KB
     *       still holds a thousand or so distinct short values (a status, a country). Against the
     *       default 2 MB, rows were written 12 % faster into files 0.6 % smaller. At 64 KB a merge's
     *       files (a few thousand rows each) still took most key and number columns into a
     *       dictionary whole, to write them plain at the page's end: 16 KB cut the dictionary's
     *       share of a steady merge's samples by 60 %, the bytes written the same.
     * </ul>
     *
     * (BENCHMARKS.md, "Where a merge's time goes".)
     */
    static Map<String, String> mergeFileSettings(Map<String, String> props) {
        String codec = props.getOrDefault(
                TableProperties.PARQUET_COMPRESSION, TableProperties.PARQUET_COMPRESSION_DEFAULT_SINCE_1_4_0);
        Map<String, String> fast = new HashMap<>();
        if ("zstd".equalsIgnoreCase(codec) && !props.containsKey(TableProperties.PARQUET_COMPRESSION_LEVEL)) {
            fast.put(TableProperties.PARQUET_COMPRESSION_LEVEL, "1");
        }
        String deleteCodec = props.getOrDefault(TableProperties.DELETE_PARQUET_COMPRESSION, codec);
        if ("zstd".equalsIgnoreCase(deleteCodec)
                && !props.containsKey(TableProperties.DELETE_PARQUET_COMPRESSION_LEVEL)
                && !props.containsKey(TableProperties.PARQUET_COMPRESSION_LEVEL)) {
            fast.put(TableProperties.DELETE_PARQUET_COMPRESSION_LEVEL, "1");
        }
        if (!props.containsKey(TableProperties.PARQUET_DICT_SIZE_BYTES)) {
            fast.put(TableProperties.PARQUET_DICT_SIZE_BYTES, MERGE_DICT_SIZE_BYTES);
        }
        return fast;
    }

    /**
     * What a merge's position delete files are written with: the table's properties, with the
     * merge's own defaults ({@link #mergeFileSettings}) laid over them.
     */
    static Map<String, String> deleteFileSettings(Map<String, String> props) {
        Map<String, String> settings = new HashMap<>(props);
        settings.putAll(mergeFileSettings(props));
        return settings;
    }

    /**
     * Deletes for these rows; the result also names the delete files they replace (a data file's
     * previous file-scoped deletes or deletion vector, whose positions the new file carries).
     */
    public DeleteWriteResult writeDeletes(List<LiveRow> rows, ExecutorService pool) {
        if (rows.isEmpty()) {
            return new DeleteWriteResult(List.of());
        }
        return TableUtil.formatVersion(table) >= 3 ? writeDeletionVectors(rows) : writePositionDeletes(rows, pool);
    }

    /**
     * File-scoped deletes are one small file per data file touched (a hundred or more for a merge of
     * random keys): written side by side, each writer taking a share of the data files, since each
     * file costs its own round trips to S3. Partition-scoped ones go through one writer.
     */
    /**
     * A delete file beside its data file's partition. An unpartitioned spec's partition path is
     * empty, and asking the factory for it would give ".../data//name": a key of its own on S3, but
     * one that readers which normalise paths (Hadoop's Path) and stores that collapse empty segments
     * spell ".../data/name", so the file goes missing for them (and orphan removal once deleted it).
     * Iceberg's own rolling writers make the same choice.
     */
    private static EncryptedOutputFile deleteFileFor(
            OutputFileFactory files, PartitionSpec spec, StructLike partition) {
        return spec.isUnpartitioned() ? files.newOutputFile() : files.newOutputFile(spec, partition);
    }

    private DeleteWriteResult writePositionDeletes(List<LiveRow> rows, ExecutorService pool) {
        DeleteGranularity granularity = deleteGranularity(table);
        Map<String, List<LiveRow>> byFile = byDataFile(rows);
        if (granularity == DeleteGranularity.FILE && PositionDeleteFileWriter.handles(table)) {
            return writeFileScopedDeletes(byFile, rows, pool);
        }
        int shares = granularity == DeleteGranularity.FILE ? Math.min(DELETE_WRITERS, byFile.size()) : 1;
        List<List<LiveRow>> split = new ArrayList<>();
        for (int i = 0; i < shares; i++) {
            split.add(new ArrayList<>());
        }
        int next = 0;
        for (List<LiveRow> fileRows : byFile.values()) {
            split.get(next++ % shares).addAll(fileRows);
        }
        List<Future<DeleteWriteResult>> writes = new ArrayList<>();
        for (List<LiveRow> share : split) {
            int id = taskId++;
            writes.add(pool.submit(() -> writePositionDeletes(share, id, granularity)));
        }
        List<DeleteFile> files = new ArrayList<>();
        CharSequenceSet referenced = CharSequenceSet.empty();
        List<DeleteFile> replaced = new ArrayList<>();
        for (Future<DeleteWriteResult> w : writes) {
            DeleteWriteResult r = Futures.join(w, "writing position deletes");
            files.addAll(r.deleteFiles());
            referenced.addAll(r.referencedDataFiles());
            replaced.addAll(r.rewrittenDeleteFiles());
        }
        return new DeleteWriteResult(files, referenced, replaced);
    }

    /**
     * One delete file per touched data file ({@link PositionDeleteFileWriter}), written side by side
     * on {@code pool}: each holds the data file's earlier positions and this merge's, and replaces the
     * data file's earlier delete file in the same commit.
     */
    private DeleteWriteResult writeFileScopedDeletes(
            Map<String, List<LiveRow>> byFile, List<LiveRow> rows, ExecutorService pool) {
        CarriedDeletes carried = new CarriedDeletes(rows, d -> d.content() == FileContent.POSITION_DELETES);
        Map<String, String> settings = deleteFileSettings(table.properties());
        OutputFileFactory files = OutputFileFactory.builderFor(table, 0, taskId++)
                .operationId(runId)
                .format(FileFormat.PARQUET)
                .suffix("deletes")
                .build();
        List<Future<FileDeletes>> writes = new ArrayList<>();
        for (List<LiveRow> fileRows : byFile.values()) {
            writes.add(pool.submit(() -> {
                DataFile dataFile = fileRows.get(0).task().file();
                PositionDeleteIndex before = carried.apply(dataFile.location());
                RoaringBitmap all = carry(before, fileRows);
                long[] positions = all != null ? positionsIn(all) : positionsOf(before, fileRows);
                DeleteFile written = PositionDeleteFileWriter.write(
                        table,
                        deleteFileFor(files, table.specs().get(dataFile.specId()), dataFile.partition())
                                .encryptingOutputFile(),
                        dataFile,
                        positions,
                        settings);
                return new FileDeletes(written, before == null ? List.of() : before.deleteFiles(), all);
            }));
        }
        List<DeleteFile> written = new ArrayList<>();
        CharSequenceSet referenced = CharSequenceSet.empty();
        List<DeleteFile> replaced = new ArrayList<>();
        for (Future<FileDeletes> w : writes) {
            FileDeletes d = Futures.join(w, "writing position deletes");
            written.add(d.file());
            referenced.add(ContentFileUtil.referencedDataFileLocation(d.file()));
            replaced.addAll(d.replaced());
            if (d.positions() != null) {
                heldDeletes.put(d.file(), d.positions());
            }
        }
        return new DeleteWriteResult(written, referenced, replaced);
    }

    /**
     * A delete file written for one data file, the delete files it replaces, and the positions it
     * holds (null past 2^31, where the cache holds none).
     */
    private record FileDeletes(DeleteFile file, Collection<DeleteFile> replaced, RoaringBitmap positions) {}

    /**
     * The positions {@code before} deletes and those of {@code rows}, as a new bitmap (which the
     * container's cache then holds for the new delete file), or null when one is past 2^31. Late in
     * the hour a data file's delete file carries millions of positions a merge: a copy of the held
     * bitmap with this merge's positions added saves listing the earlier ones one by one, merging
     * them with the new, and building the bitmap again from the result: 2.7 % of a late merge's CPU
     * before, 0.9 % after (BENCHMARKS.md, "An hour and a half of merges").
     */
    static RoaringBitmap carry(PositionDeleteIndex before, List<LiveRow> rows) {
        RoaringBitmap all = before == null ? new RoaringBitmap() : DeletePositionsCache.copyOf(before);
        if (all == null) {
            return null;
        }
        for (LiveRow row : rows) {
            long position = row.position();
            if (position < 0 || position > Integer.MAX_VALUE) {
                return null;
            }
            all.add((int) position);
        }
        return all;
    }

    /** A bitmap's positions (all below 2^31), ascending. */
    static long[] positionsIn(RoaringBitmap positions) {
        int[] values = positions.toArray();
        long[] out = new long[values.length];
        for (int i = 0; i < values.length; i++) {
            out[i] = values[i];
        }
        return out;
    }

    /**
     * The positions {@code before} deletes and those of {@code rows}, ascending and distinct. The
     * earlier ones come ascending and outnumber this merge's late in the hour (a data file's delete
     * file carries every position deleted since compaction), so only this merge's are sorted, and
     * the two merged: a full sort of both was 2 % of a late merge's CPU.
     */
    static long[] positionsOf(PositionDeleteIndex before, List<LiveRow> rows) {
        long[] now = new long[rows.size()];
        for (int i = 0; i < now.length; i++) {
            now[i] = rows.get(i).position();
        }
        Arrays.sort(now);
        return mergeDistinct(before == null ? new long[0] : ascending(before), now);
    }

    /** The index's positions, ascending (as Iceberg's bitmap indexes give them; sorted if not). */
    private static long[] ascending(PositionDeleteIndex index) {
        long[] all = new long[(int) index.cardinality()];
        int[] n = {0};
        boolean[] ordered = {true};
        index.forEach(p -> {
            if (n[0] > 0 && p < all[n[0] - 1]) {
                ordered[0] = false;
            }
            all[n[0]++] = p;
        });
        long[] out = n[0] == all.length ? all : Arrays.copyOf(all, n[0]);
        if (!ordered[0]) {
            Arrays.sort(out);
        }
        return out;
    }

    /** Two ascending arrays merged into one, ascending, each position once. */
    static long[] mergeDistinct(long[] a, long[] b) {
        long[] out = new long[a.length + b.length];
        int i = 0;
        int j = 0;
        int n = 0;
        while (i < a.length || j < b.length) {
            long next = j == b.length || (i < a.length && a[i] <= b[j]) ? a[i++] : b[j++];
            if (n == 0 || out[n - 1] != next) {
                out[n++] = next;
            }
        }
        return n == out.length ? out : Arrays.copyOf(out, n);
    }

    private DeleteWriteResult writePositionDeletes(List<LiveRow> rows, int writerId, DeleteGranularity granularity) {
        GenericFileWriterFactory writers = new GenericFileWriterFactory.Builder(table)
                .deleteFileFormat(FileFormat.PARQUET)
                .writerProperties(mergeFileSettings(table.properties()))
                .build();
        OutputFileFactory files = OutputFileFactory.builderFor(table, 0, writerId)
                .operationId(runId)
                .format(FileFormat.PARQUET)
                .suffix("deletes")
                .build();
        CarriedDeletes carried = granularity == DeleteGranularity.FILE
                ? new CarriedDeletes(rows, d -> d.content() == FileContent.POSITION_DELETES)
                : null;
        FanoutPositionOnlyDeleteWriter<Record> writer = carried != null
                ? new FanoutPositionOnlyDeleteWriter<>(
                        writers, files, table.io(), TARGET_FILE_SIZE, granularity, carried)
                : new FanoutPositionOnlyDeleteWriter<>(writers, files, table.io(), TARGET_FILE_SIZE, granularity);
        PositionDelete<Record> delete = PositionDelete.create();
        try (writer) {
            for (LiveRow row : rows) {
                DataFile file = row.task().file();
                writer.write(
                        delete.set(file.location(), row.position()),
                        table.specs().get(file.specId()),
                        file.partition());
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        if (carried != null) {
            carried.remember(writer.result(), rows);
        }
        return writer.result();
    }

    /**
     * The positions each touched data file's own deletes of {@code kind} already delete (its
     * file-scoped position deletes in v2, its deletion vector in v3), so its new delete file carries
     * them and replaces those files in the same commit (they come back in the result's
     * {@link DeleteWriteResult#rewrittenDeleteFiles}): a data file then has one delete file however
     * many merges touched it, as Iceberg's own writers do since 1.8. Partition-scoped delete files
     * (an older {@code write.delete.granularity=partition}) also cover other files and stay.
     *
     * <p>The positions come from the container's {@link DeletePositionsCache} when it holds every
     * one of the data file's delete files (a warm merger wrote them), else from storage; once the
     * new delete files are written, {@link #remember} holds what each of them deletes.
     */
    private final class CarriedDeletes implements Function<CharSequence, PositionDeleteIndex> {
        private final Map<String, List<DeleteFile>> previous = new HashMap<>();
        /** What was carried for each data file (the writers ask from their own threads). */
        private final Map<String, PositionDeleteIndex> carried = new ConcurrentHashMap<>();

        private final BaseDeleteLoader loader =
                new BaseDeleteLoader(f -> table.io().newInputFile(f));

        CarriedDeletes(List<LiveRow> rows, Predicate<DeleteFile> kind) {
            for (LiveRow row : rows) {
                previous.computeIfAbsent(
                        row.task().file().location(),
                        path -> TaskRows.ownDeletes(row.task()).stream()
                                .filter(kind)
                                .toList());
            }
        }

        @Override
        public PositionDeleteIndex apply(CharSequence path) {
            List<DeleteFile> files = previous.getOrDefault(path.toString(), List.of());
            if (files.isEmpty()) {
                return null;
            }
            PositionDeleteIndex positions = heldDeletes.positions(files);
            if (positions == null) {
                positions = loader.loadPositionDeletes(files, path);
            }
            carried.put(path.toString(), positions);
            return positions;
        }

        /**
         * Holds what each new delete file of {@code result} deletes: the positions carried into it
         * and those of {@code rows} in its data file. (The cache refuses a count that differs from
         * the file's own, so a wrong idea of the file is never held.)
         */
        void remember(DeleteWriteResult result, List<LiveRow> rows) {
            Map<String, List<LiveRow>> byFile = byDataFile(rows);
            for (DeleteFile file : result.deleteFiles()) {
                String dataFile = ContentFileUtil.referencedDataFileLocation(file);
                List<LiveRow> deletedNow = dataFile == null ? null : byFile.get(dataFile);
                if (deletedNow != null) {
                    // Null past 2^31, where the cache holds none.
                    RoaringBitmap all = carry(carried.get(dataFile), deletedNow);
                    if (all != null) {
                        heldDeletes.put(file, all);
                    }
                }
            }
        }
    }

    /**
     * Format v2's position deletes go in one file per data file touched (file-scoped), unless the
     * table's {@code write.delete.granularity} says {@code partition}. Measured on our merges
     * (BENCHMARKS.md, "Delete files"): partition-scoped files make merges 2.4x faster and leave 7x
     * fewer files, but such a file also applies to the data files its own merge wrote into the
     * partition, so compaction cannot drop it until those are rewritten too, and every reader of the
     * partition keeps reading it. A file-scoped one goes with its data file (when compaction rewrites
     * it, or a merge drops it) and maps one for one to a v3 deletion vector.
     */
    static DeleteGranularity deleteGranularity(Table table) {
        String set = table.properties().get(TableProperties.DELETE_GRANULARITY);
        return set == null ? DeleteGranularity.FILE : DeleteGranularity.fromString(set);
    }

    /**
     * Format v3 allows one deletion vector per data file, so the file's existing vector is loaded,
     * merged with the new positions, and replaced in the same commit.
     */
    private DeleteWriteResult writeDeletionVectors(List<LiveRow> rows) {
        OutputFileFactory files = OutputFileFactory.builderFor(table, 0, taskId++)
                .operationId(runId)
                .format(FileFormat.PUFFIN)
                .build();
        CarriedDeletes carried = new CarriedDeletes(rows, ContentFileUtil::isDV);
        if (DeletionVectorWriter.handles(table)) {
            List<DeletionVectorWriter.Vector> vectors = vectors(rows, carried);
            if (vectors != null) {
                DeleteWriteResult result =
                        DeletionVectorWriter.write(table, files.newOutputFile().encryptingOutputFile(), vectors);
                for (int i = 0; i < vectors.size(); i++) {
                    heldDeletes.put(result.deleteFiles().get(i), vectors.get(i).positions());
                }
                return result;
            }
        }
        // Iceberg's writer: an encrypted table, or a position past 2^31.
        BaseDVFileWriter writer = new BaseDVFileWriter(files, carried::apply);
        try (writer) {
            for (LiveRow row : rows) {
                DataFile file = row.task().file();
                writer.delete(file.location(), row.position(), table.specs().get(file.specId()), file.partition());
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        carried.remember(writer.result(), rows);
        return writer.result();
    }

    /** The rows by the data file that holds them, in the order the files first come. */
    private static Map<String, List<LiveRow>> byDataFile(List<LiveRow> rows) {
        Map<String, List<LiveRow>> byFile = new LinkedHashMap<>();
        rows.forEach(r -> byFile.computeIfAbsent(r.task().file().location(), f -> new ArrayList<>())
                .add(r));
        return byFile;
    }

    /**
     * Each touched data file's new deletion vector: its earlier positions and this merge's, as a
     * bitmap. Null when a position is past 2^31 (a file of more rows than any writer here makes).
     */
    private static List<DeletionVectorWriter.Vector> vectors(List<LiveRow> rows, CarriedDeletes carried) {
        Map<String, List<LiveRow>> byFile = byDataFile(rows);
        List<DeletionVectorWriter.Vector> vectors = new ArrayList<>(byFile.size());
        for (List<LiveRow> fileRows : byFile.values()) {
            DataFile dataFile = fileRows.get(0).task().file();
            PositionDeleteIndex before = carried.apply(dataFile.location());
            RoaringBitmap all = carry(before, fileRows);
            if (all == null) {
                return null;
            }
            vectors.add(new DeletionVectorWriter.Vector(
                    dataFile, all, before == null ? List.of() : List.copyOf(before.deleteFiles())));
        }
        return vectors;
    }
}
