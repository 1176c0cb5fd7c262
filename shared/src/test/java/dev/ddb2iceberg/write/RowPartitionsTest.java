package dev.ddb2iceberg.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.apache.iceberg.PartitionKey;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.InternalRecordWrapper;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.inmemory.InMemoryCatalog;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;

/**
 * Each new row's partition, as a merge computes it once for the files to fold and for the writer:
 * right for every row, and one object for all rows of a partition (a merge holds every row's
 * partition until its files are written). The table is Iceberg's in-memory catalog's: only its
 * spec and schema are read.
 */
class RowPartitionsTest {
    private static final int BUCKETS = 4;

    @Test
    void eachRowGetsItsPartitionAndRowsOfOnePartitionShareOneObject() {
        InMemoryCatalog catalog = new InMemoryCatalog();
        catalog.initialize("test", Map.of());
        catalog.createNamespace(Namespace.of("db"));
        Schema schema = new Schema(
                Types.NestedField.required(1, "pk", Types.StringType.get()),
                Types.NestedField.optional(2, "n", Types.LongType.get()));
        Table table = catalog.buildTable(TableIdentifier.of("db", "t"), schema)
                .withPartitionSpec(
                        PartitionSpec.builderFor(schema).bucket("pk", BUCKETS).build())
                .create();
        List<Record> rows = new ArrayList<>();
        for (int i = 0; i < 20_000; i++) { // enough rows to be split over the pool's threads
            GenericRecord row = GenericRecord.create(schema);
            row.set(0, "pk-" + i);
            row.set(1, (long) i);
            rows.add(row);
        }

        ExecutorService pool = Executors.newFixedThreadPool(4);
        List<StructLike> partitions;
        try {
            partitions = MergeWriter.partitionsOf(table, rows, pool);
        } finally {
            pool.shutdownNow();
        }

        assertEquals(rows.size(), partitions.size(), "one partition a row");
        PartitionKey expected = new PartitionKey(table.spec(), schema);
        InternalRecordWrapper wrapper = new InternalRecordWrapper(schema.asStruct());
        Set<StructLike> objects = Collections.newSetFromMap(new IdentityHashMap<>());
        for (int i = 0; i < rows.size(); i++) {
            expected.partition(wrapper.wrap(rows.get(i)));
            assertEquals(
                    expected.get(0, Integer.class), partitions.get(i).get(0, Integer.class), "row " + i + "'s bucket");
            objects.add(partitions.get(i));
        }
        // Each slice of the rows (one a thread) keeps one copy of each partition it met.
        int slices = Math.max(4, Runtime.getRuntime().availableProcessors());
        assertTrue(
                objects.size() <= BUCKETS * slices,
                objects.size() + " partition objects for " + rows.size() + " rows in " + BUCKETS
                        + " partitions: rows of one partition do not share it");
    }
}
