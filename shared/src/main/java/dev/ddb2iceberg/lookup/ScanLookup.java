package dev.ddb2iceberg.lookup;

import dev.ddb2iceberg.model.SequenceNumbers;
import dev.ddb2iceberg.table.TableLayout;
import dev.ddb2iceberg.table.TaskRows;
import dev.ddb2iceberg.util.Futures;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.PartitionField;
import org.apache.iceberg.PartitionKey;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Comparators;
import org.apache.iceberg.types.Conversions;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.StructLikeMap;

/**
 * Finds live rows by reading the key columns of the data files that may hold the keys (Hudi's
 * "simple index"): a data file is read only if its partition can hold one of the keys and its
 * key-column bounds (lower/upper, from the manifests) contain one; then only the key columns, the
 * sequence column and row positions of those files are read, with the file's existing deletes
 * applied. Its cost grows with the table wherever bounds do not prune; it is also the reference
 * every other lookup is tested against.
 */
public final class ScanLookup implements LiveRowLookup {
    private final ExecutorService pool;

    public ScanLookup(ExecutorService pool) {
        this.pool = pool;
    }

    @Override
    public Recorded record(
            Table table, TableLayout layout, List<WrittenRow> written, Collection<List<Object>> removed) {
        return Recorded.NOTHING; // the next scan reads the table itself
    }

    @Override
    public Found find(Table table, TableLayout layout, Long snapshotId, List<List<Object>> keys) {
        if (snapshotId == null) {
            return Found.nothing(keys.size());
        }
        Schema schema = table.schema();
        List<Types.NestedField> keyFields =
                layout.keyColumns().stream().map(schema::findField).toList();
        Map<Integer, Pruner> pruners = new HashMap<>();
        for (PartitionSpec spec : table.specs().values()) {
            pruners.put(spec.specId(), new Pruner(spec, schema, keyFields, keys));
        }

        List<FileScanTask> candidates = new ArrayList<>();
        List<FileScanTask> files = new ArrayList<>();
        try (CloseableIterable<FileScanTask> tasks = table.newScan()
                .useSnapshot(snapshotId)
                .includeColumnStats(layout.keyColumns())
                .planFiles()) {
            for (FileScanTask task : tasks) {
                files.add(task);
                if (pruners.get(task.spec().specId()).mayHold(task.file())) {
                    candidates.add(task);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }

        Set<List<Object>> wanted = new HashSet<>(keys);
        List<Future<FileRows>> reads = new ArrayList<>();
        for (FileScanTask task : candidates) {
            reads.add(pool.submit(() -> read(table, layout, task, wanted)));
        }
        Map<List<Object>, List<LiveRow>> found = new HashMap<>();
        Map<String, Long> liveRowsByFile = new HashMap<>();
        for (Future<FileRows> read : reads) {
            FileRows fileRows = Futures.join(read, "reading the table");
            liveRowsByFile.merge(fileRows.location(), fileRows.liveRows(), Long::sum);
            for (Map.Entry<List<Object>, LiveRow> e : fileRows.matches()) {
                found.computeIfAbsent(e.getKey(), k -> new ArrayList<>(1)).add(e.getValue());
            }
        }
        List<List<LiveRow>> rows = new ArrayList<>(keys.size());
        for (List<Object> key : keys) {
            rows.add(found.getOrDefault(key, List.of()));
        }
        return new Found(rows, liveRowsByFile, files, candidates.size());
    }

    /** What finding live rows reads of a data file: the key columns, the sequence column and the row position. */
    static Schema keyColumns(Table table, TableLayout layout) {
        Schema schema = table.schema();
        List<Types.NestedField> projected = new ArrayList<>();
        layout.keyColumns().forEach(k -> projected.add(schema.findField(k)));
        projected.add(schema.findField(TableLayout.SEQ));
        projected.add(MetadataColumns.ROW_POSITION);
        return new Schema(projected);
    }

    /** One file's rows of the wanted keys, and how many live rows it has in all. */
    private record FileRows(String location, long liveRows, List<Map.Entry<List<Object>, LiveRow>> matches) {}

    private static FileRows read(Table table, TableLayout layout, FileScanTask task, Set<List<Object>> wanted)
            throws IOException {
        List<Map.Entry<List<Object>, LiveRow>> out = new ArrayList<>();
        long live = 0;
        try (CloseableIterable<Record> rows = TaskRows.read(table, task, keyColumns(table, layout))) {
            for (Record row : rows) {
                live++;
                List<Object> key = layout.keyOf(row);
                if (wanted.contains(key)) {
                    long pos = (Long) row.getField(MetadataColumns.ROW_POSITION.name());
                    out.add(Map.entry(key, new LiveRow(task, pos, SequenceNumbers.toBigInteger((String)
                            row.getField(TableLayout.SEQ)))));
                }
            }
        }
        // A task may cover part of a file (a split); the counts of its tasks add up in find().
        return new FileRows(task.file().location(), live, out);
    }

    /**
     * Decides, from a data file's partition and key-column bounds, whether it can hold one of the
     * keys. Keys are grouped by the partition they would be in (when the spec only uses key
     * columns) and sorted by the first key column, so each file costs a binary search.
     */
    private static final class Pruner {
        private final List<Types.NestedField> keyFields;
        private final List<Comparator<Object>> comparators = new ArrayList<>();
        private final StructLikeMap<List<List<Object>>> byPartition;
        private final List<List<Object>> allKeys;

        @SuppressWarnings("unchecked")
        Pruner(PartitionSpec spec, Schema schema, List<Types.NestedField> keyFields, Collection<List<Object>> keys) {
            this.keyFields = keyFields;
            for (Types.NestedField f : keyFields) {
                comparators.add((Comparator<Object>)
                        (Comparator<?>) Comparators.forType(f.type().asPrimitiveType()));
            }
            Comparator<List<Object>> byFirst = (a, b) -> comparators.get(0).compare(a.get(0), b.get(0));
            boolean keyOnlySpec = !spec.isUnpartitioned()
                    && spec.fields().stream()
                            .map(PartitionField::sourceId)
                            .allMatch(id -> keyFields.stream().anyMatch(k -> k.fieldId() == id));
            if (keyOnlySpec) {
                byPartition = StructLikeMap.create(spec.partitionType());
                PartitionKey partitionKey = new PartitionKey(spec, schema);
                GenericRecord row = GenericRecord.create(schema);
                for (List<Object> key : keys) {
                    for (int i = 0; i < keyFields.size(); i++) {
                        row.setField(keyFields.get(i).name(), key.get(i));
                    }
                    partitionKey.partition(row);
                    StructLike partition = partitionKey.copy();
                    List<List<Object>> group = byPartition.get(partition);
                    if (group == null) {
                        group = new ArrayList<>();
                        byPartition.put(partition, group);
                    }
                    group.add(key);
                }
                byPartition.values().forEach(g -> g.sort(byFirst));
                allKeys = null;
            } else {
                byPartition = null;
                allKeys = new ArrayList<>(keys);
                allKeys.sort(byFirst);
            }
        }

        boolean mayHold(DataFile file) {
            List<List<Object>> keys = byPartition == null ? allKeys : byPartition.get(file.partition());
            if (keys == null || keys.isEmpty()) {
                return false;
            }
            Object[] lower = new Object[keyFields.size()];
            Object[] upper = new Object[keyFields.size()];
            for (int i = 0; i < keyFields.size(); i++) {
                lower[i] = bound(file.lowerBounds(), keyFields.get(i));
                upper[i] = bound(file.upperBounds(), keyFields.get(i));
            }
            // First key at or above the lower bound of the first key column, by binary search.
            int lo = 0;
            int hi = keys.size();
            if (lower[0] != null) {
                while (lo < hi) {
                    int mid = (lo + hi) >>> 1;
                    if (comparators.get(0).compare(keys.get(mid).get(0), lower[0]) < 0) {
                        lo = mid + 1;
                    } else {
                        hi = mid;
                    }
                }
            }
            for (int k = lo; k < keys.size(); k++) {
                List<Object> key = keys.get(k);
                if (upper[0] != null && comparators.get(0).compare(key.get(0), upper[0]) > 0) {
                    return false;
                }
                if (withinOtherBounds(key, lower, upper)) {
                    return true;
                }
            }
            return false;
        }

        private boolean withinOtherBounds(List<Object> key, Object[] lower, Object[] upper) {
            for (int i = 1; i < key.size(); i++) {
                Comparator<Object> c = comparators.get(i);
                if ((lower[i] != null && c.compare(key.get(i), lower[i]) < 0)
                        || (upper[i] != null && c.compare(key.get(i), upper[i]) > 0)) {
                    return false;
                }
            }
            return true;
        }

        private static Object bound(Map<Integer, ByteBuffer> bounds, Types.NestedField field) {
            ByteBuffer b = bounds == null ? null : bounds.get(field.fieldId());
            if (b == null) {
                return null; // no statistics: the file may hold anything
            }
            Type type = field.type();
            return Conversions.fromByteBuffer(type, b);
        }
    }
}
