package dev.ddb2iceberg.maintenance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.function.MaintenanceSettings;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.write.ParquetRowCopy;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Clock;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.SupportsNamespaces;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericFileWriterFactory;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.deletes.PositionDelete;
import org.apache.iceberg.deletes.PositionDeleteWriter;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.DataWriter;
import org.apache.iceberg.io.OutputFileFactory;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Compaction's column copy ({@link ParquetRowCopy}): files of every column shape the pipeline
 * writes (nulls, NaN, decimals, timestamps, binary, lists, structs, maps) come out of compaction with
 * exactly their live rows, whether a group is one file with deletes or several files merged; a file
 * of an older schema is copied when it only lacks a whole column, and goes through Iceberg's records
 * when a column's type was promoted. A real catalog over the S3 server.
 */
@ExtendWith(S3ServerExtension.class)
class ParquetRowCopyTest {
    /** A 2 MB target: files under 256 KB are small, the big file here is about 1 MB. */
    private static final long TARGET = 2L << 20;

    private static final Schema SCHEMA = new Schema(
            List.of(
                    Types.NestedField.required(1, "id", Types.LongType.get()),
                    Types.NestedField.required(2, "_ddb_seq", Types.StringType.get()),
                    Types.NestedField.optional(3, "name", Types.StringType.get()),
                    Types.NestedField.optional(4, "price", Types.DoubleType.get()),
                    Types.NestedField.optional(5, "amount", Types.DecimalType.of(38, 2)),
                    Types.NestedField.optional(6, "at", Types.TimestampType.withZone()),
                    Types.NestedField.optional(7, "raw", Types.BinaryType.get()),
                    Types.NestedField.optional(8, "flag", Types.BooleanType.get()),
                    Types.NestedField.optional(9, "tags", Types.ListType.ofOptional(10, Types.StringType.get())),
                    Types.NestedField.optional(
                            11,
                            "address",
                            Types.StructType.of(
                                    Types.NestedField.optional(12, "city", Types.StringType.get()),
                                    Types.NestedField.optional(
                                            13, "lines", Types.ListType.ofOptional(14, Types.StringType.get())))),
                    Types.NestedField.optional(
                            15,
                            "counts",
                            Types.MapType.ofOptional(16, 17, Types.StringType.get(), Types.LongType.get())),
                    Types.NestedField.optional(18, "small", Types.IntegerType.get())),
            Set.of(1));

    @TempDir
    Path dir;

    private Table table;
    private MaintenanceSettings settings;
    private final Random random = new Random(11);
    private long nextId;
    private int writerId;

    @BeforeEach
    void setUp(EmbeddedS3Server server) {
        Map<String, String> env =
                new LocalStack(server, S3ServerExtension.newBucket(server), dir).environment("copied");
        settings = MaintenanceSettings.from(new Environment(env));
        Catalog catalog = settings.catalog().load();
        ((SupportsNamespaces) catalog).createNamespace(Namespace.of("copy"));
        table = catalog.createTable(
                TableIdentifier.of("copy", "rows"),
                SCHEMA,
                PartitionSpec.unpartitioned(),
                Map.of(
                        TableProperties.FORMAT_VERSION,
                        "2",
                        PipelineProperties.KEYS,
                        "id:N",
                        // small row groups and pages: the copy crosses row groups and skips pages of rows
                        TableProperties.PARQUET_ROW_GROUP_SIZE_BYTES,
                        "65536",
                        TableProperties.PARQUET_PAGE_ROW_LIMIT,
                        "500"));
    }

    @Test
    void aFileWithDeletesIsCopiedWithExactlyItsLiveRowsInEveryColumnShape() {
        DataFile big = appendFile(12_000);
        deleteShare(big, 0.3);
        Map<Long, Record> expected = rowsById();

        MaintenanceResult r = compact();

        assertEquals(1, r.compaction().filesRewritten(), r.toString());
        assertEquals(0, r.compaction().deleteFilesAfter(), r.toString());
        assertRowsEqual(expected, rowsById());
        DataFile out = onlyDataFile();
        long nans = expected.values().stream()
                .filter(row -> row.getField("price") instanceof Double d && d.isNaN())
                .count();
        assertTrue(nans > 0, "the test data has NaN prices");
        assertEquals(nans, out.nanValueCounts().get(4), "the new file's NaN count for price");
        long nulls = expected.values().stream()
                .filter(row -> row.getField("name") == null)
                .count();
        assertEquals(nulls, out.nullValueCounts().get(3), "the new file's null count for name");
        assertNotNull(out.lowerBounds().get(1), "the key column keeps its bounds, for pruning");
    }

    @Test
    void smallFilesAreMergedInKeyOrderWithTheirDeletes() {
        List<DataFile> small = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            small.add(appendFile(300));
        }
        deleteShare(small.get(1), 0.5);
        deleteShare(small.get(4), 0.1);
        appendFile(300); // the newest small file, left to the merger
        Map<Long, Record> expected = rowsById();

        MaintenanceResult r = compact();

        assertEquals(6, r.compaction().filesRewritten(), r.toString());
        assertRowsEqual(expected, rowsById());
    }

    @Test
    void aFileWrittenBeforeAColumnWasAddedIsCopiedAndTheColumnComesOutNull() throws IOException {
        DataFile before = appendFile(12_000); // big enough not to be the merger's newest small file
        table.updateSchema().addColumn("added", Types.StringType.get()).commit();
        try (ParquetRowCopy.Source source =
                ParquetRowCopy.Source.open(table.io().newInputFile(before), ParquetRowCopy.target(table.schema()))) {
            assertNotNull(source, "a file lacking only a whole column is copied, not read as records");
        }
        deleteShare(before, 0.3);
        Map<Long, Record> expected = rowsById();

        MaintenanceResult r = compact();

        assertEquals(1, r.compaction().filesRewritten(), r.toString());
        Map<Long, Record> after = rowsById();
        assertRowsEqual(expected, after);
        assertTrue(after.values().stream().allMatch(row -> row.getField("added") == null), "the added column");
    }

    @Test
    void aFileWhoseColumnWasPromotedGoesThroughIcebergsRecords() throws IOException {
        DataFile before = appendFile(12_000); // big enough not to be the merger's newest small file
        table.updateSchema().updateColumn("small", Types.LongType.get()).commit();
        try (ParquetRowCopy.Source source =
                ParquetRowCopy.Source.open(table.io().newInputFile(before), ParquetRowCopy.target(table.schema()))) {
            assertNull(source, "an int column now a long cannot be copied value for value");
        }
        deleteShare(before, 0.3);
        Map<Long, Record> expected = rowsById();

        MaintenanceResult r = compact();

        assertEquals(1, r.compaction().filesRewritten(), r.toString());
        Map<Long, Record> after = rowsById();
        assertRowsEqual(expected, after);
        assertTrue(
                after.values().stream().anyMatch(row -> row.getField("small") instanceof Long),
                "the promoted column is written as longs");
    }

    private MaintenanceResult compact() {
        MaintenanceResult r = new Maintenance(
                        table,
                        MaintenanceOptions.DEFAULTS.withTargetFileSize(TARGET),
                        settings.stagingUri(),
                        Clock.systemUTC())
                .run(EnumSet.of(MaintenanceTask.COMPACT), false);
        table.refresh();
        return r;
    }

    private void assertRowsEqual(Map<Long, Record> expected, Map<Long, Record> actual) {
        assertEquals(expected.keySet(), actual.keySet(), "the live keys");
        for (Map.Entry<Long, Record> e : expected.entrySet()) {
            assertEquals(describe(e.getValue()), describe(actual.get(e.getKey())), "row " + e.getKey());
        }
    }

    /** A row's values by the table's columns (bytes by content), comparable across reads. */
    private String describe(Record row) {
        List<String> values = new ArrayList<>();
        for (Types.NestedField c : table.schema().columns()) {
            values.add(c.name() + "=" + describeValue(row.getField(c.name())));
        }
        return String.join(", ", values);
    }

    private static String describeValue(Object v) {
        if (v instanceof ByteBuffer b) {
            byte[] bytes = new byte[b.remaining()];
            b.duplicate().get(bytes);
            return java.util.Arrays.toString(bytes);
        }
        if (v instanceof Record r) {
            List<String> fields = new ArrayList<>();
            for (int i = 0; i < r.size(); i++) {
                fields.add(describeValue(r.get(i)));
            }
            return "{" + String.join(", ", fields) + "}";
        }
        if (v instanceof List<?> list) {
            return list.stream().map(ParquetRowCopyTest::describeValue).toList().toString();
        }
        return String.valueOf(v);
    }

    private Map<Long, Record> rowsById() {
        table.refresh();
        Map<Long, Record> rows = new TreeMap<>();
        try (CloseableIterable<Record> all = IcebergGenerics.read(table).build()) {
            for (Record r : all) {
                rows.put((Long) r.getField("id"), r.copy());
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return rows;
    }

    private DataFile onlyDataFile() {
        List<DataFile> files = new ArrayList<>();
        try (CloseableIterable<FileScanTask> tasks =
                table.newScan().includeColumnStats().planFiles()) {
            tasks.forEach(t -> files.add(t.file()));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        assertEquals(1, files.size(), "data files after compaction: " + files);
        return files.get(0);
    }

    /** One data file of {@code rows} rows, ids ascending, every column shape with nulls here and there. */
    private DataFile appendFile(int rows) {
        GenericFileWriterFactory writers = new GenericFileWriterFactory.Builder(table)
                .dataFileFormat(FileFormat.PARQUET)
                .build();
        OutputFileFactory files = OutputFileFactory.builderFor(table, 1, ++writerId)
                .format(FileFormat.PARQUET)
                .build();
        DataWriter<Record> writer = writers.newDataWriter(files.newOutputFile(), table.spec(), null);
        Types.StructType address = SCHEMA.findField("address").type().asStructType();
        try (writer) {
            for (int i = 0; i < rows; i++) {
                long id = nextId++;
                GenericRecord r = GenericRecord.create(SCHEMA);
                r.setField("id", id);
                r.setField("_ddb_seq", Long.toString(1_000_000_000L + id));
                r.setField("name", id % 7 == 0 ? null : "name-" + random.nextInt(1000));
                Double price = id % 11 == 0 ? Double.valueOf(Double.NaN) : Double.valueOf(random.nextDouble() * 100);
                r.setField("price", id % 13 == 0 ? null : price);
                r.setField("amount", id % 5 == 0 ? null : BigDecimal.valueOf(random.nextInt(1_000_000), 2));
                r.setField(
                        "at",
                        OffsetDateTime.of(2026, 1, 1, 0, 0, 0, 0, ZoneOffset.UTC)
                                .plusSeconds(id));
                r.setField("raw", id % 3 == 0 ? null : ByteBuffer.wrap(new byte[] {(byte) id, (byte) (id >> 8), 7}));
                r.setField("flag", id % 4 == 0 ? null : Boolean.valueOf(id % 2 == 0));
                r.setField("tags", tags(id));
                if (id % 6 != 0) {
                    GenericRecord a = GenericRecord.create(address);
                    a.setField("city", id % 12 == 1 ? null : "city-" + id % 40);
                    a.setField("lines", id % 9 == 0 ? null : tags(id + 1));
                    r.setField("address", a);
                }
                if (id % 8 != 0) {
                    Map<String, Long> counts = new TreeMap<>();
                    for (int k = 0; k < id % 4; k++) {
                        counts.put("k" + k, id * k);
                    }
                    r.setField("counts", counts);
                }
                r.setField("small", id % 10 == 0 ? null : Integer.valueOf((int) (id % 1000)));
                writer.write(r);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        DataFile file = writer.toDataFile();
        table.newAppend().appendFile(file).commit();
        return file;
    }

    /** A list with nulls and repeats, sometimes empty, sometimes null. */
    private static List<String> tags(long id) {
        if (id % 10 == 3) {
            return null;
        }
        List<String> tags = new ArrayList<>();
        for (int k = 0; k < id % 5; k++) {
            tags.add(k == 2 ? null : "t" + (id + k) % 17);
        }
        return tags;
    }

    /** Deletes a share of the file's rows by position, in one file-scoped delete file. */
    private void deleteShare(DataFile file, double share) {
        Set<Long> positions = new HashSet<>();
        for (long p = 0; p < file.recordCount(); p++) {
            if (random.nextDouble() < share) {
                positions.add(p);
            }
        }
        GenericFileWriterFactory writers = new GenericFileWriterFactory.Builder(table)
                .deleteFileFormat(FileFormat.PARQUET)
                .build();
        OutputFileFactory files = OutputFileFactory.builderFor(table, 1, ++writerId)
                .format(FileFormat.PARQUET)
                .suffix("deletes")
                .build();
        PositionDeleteWriter<Record> writer =
                writers.newPositionDeleteWriter(files.newOutputFile(), table.spec(), null);
        PositionDelete<Record> delete = PositionDelete.create();
        try (writer) {
            for (long p : positions.stream().sorted().toList()) {
                writer.write(delete.set(file.location(), p));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        table.newRowDelta().addDeletes(writer.toDeleteFile()).commit();
    }
}
