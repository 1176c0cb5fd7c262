package dev.ddb2iceberg.benchmarks;

import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.function.MaintenanceSettings;
import dev.ddb2iceberg.maintenance.Maintenance;
import dev.ddb2iceberg.maintenance.MaintenanceOptions;
import dev.ddb2iceberg.maintenance.MaintenanceResult;
import dev.ddb2iceberg.maintenance.MaintenanceTask;
import dev.ddb2iceberg.table.TaskRows;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.write.ParquetRowCopy;
import java.io.IOException;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
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
import org.apache.iceberg.data.Record;
import org.apache.iceberg.deletes.PositionDelete;
import org.apache.iceberg.deletes.PositionDeleteWriter;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.DataWriter;
import org.apache.iceberg.io.OutputFileFactory;
import org.apache.iceberg.types.Types;

/**
 * Compaction of full-size files: {@code files} data files of {@code rows} order-like rows each
 * (sorted by key, as the table keeps them), a share of each file's rows deleted by a file-scoped
 * position delete file, then one maintenance run that rewrites them all (the planner picks them by
 * their deleted share). In the same run, the limit: the same files' values decoded and encoded
 * again by Parquet column by column, every row, no deletes, no key order, no commit (a plain
 * Parquet copy); and for reference the copy through Iceberg's generic records that compaction
 * used to be. All as MB of input per second per core, files rewritten side by side on the cores.
 *
 * <p>The table has no key index (a hand-built table), so compaction writes no moves delta here.
 */
final class FullSizeCompaction {
    private static final Schema SCHEMA = new Schema(
            List.of(
                    Types.NestedField.required(1, "order_id", Types.StringType.get()),
                    Types.NestedField.required(2, "_ddb_seq", Types.StringType.get()),
                    Types.NestedField.optional(3, "status", Types.StringType.get()),
                    Types.NestedField.optional(4, "amount", Types.DecimalType.of(38, 2)),
                    Types.NestedField.optional(5, "quantity", Types.LongType.get()),
                    Types.NestedField.optional(6, "created_at", Types.TimestampType.withZone()),
                    Types.NestedField.optional(7, "note", Types.StringType.get()),
                    Types.NestedField.optional(8, "customer_id", Types.StringType.get()),
                    Types.NestedField.optional(9, "sku", Types.StringType.get()),
                    Types.NestedField.optional(10, "unit_price", Types.DoubleType.get()),
                    Types.NestedField.optional(11, "tracking", Types.StringType.get())),
            java.util.Set.of(1));
    private static final String[] STATUS = {"NEW", "PAID", "PACKED", "SHIPPED", "DELIVERED"};
    private static final String[] WORDS = {
        "blue", "parcel", "gift", "express", "fragile", "office", "leave", "door", "ring", "twice", "north", "gate"
    };

    private FullSizeCompaction() {}

    static void run(int files, int rows, double deletedShare) throws Exception {
        Path dir = Files.createTempDirectory("full-size-compaction");
        try (EmbeddedS3Server server = EmbeddedS3Server.onDisk(dir.resolve("s3"))) {
            server.createBucket("bench");
            Map<String, String> env = new LocalStack(server, "bench", dir).environment("orders");
            MaintenanceSettings settings = MaintenanceSettings.from(new Environment(env));
            Catalog catalog = settings.catalog().load();
            ((SupportsNamespaces) catalog).createNamespace(Namespace.of("bench"));
            Table table = catalog.createTable(
                    TableIdentifier.of("bench", "orders"),
                    SCHEMA,
                    PartitionSpec.unpartitioned(),
                    Map.of(TableProperties.FORMAT_VERSION, "2", PipelineProperties.KEYS, "order_id:S"));
            int cores = Runtime.getRuntime().availableProcessors();
            ExecutorService pool = Executors.newFixedThreadPool(Math.min(files, cores));
            long t0 = System.nanoTime();
            List<Future<DataFile>> writes = new ArrayList<>();
            for (int f = 0; f < files; f++) {
                int file = f;
                writes.add(pool.submit(() -> writeFile(table, file, rows)));
            }
            List<DataFile> data = new ArrayList<>();
            for (Future<DataFile> w : writes) {
                data.add(w.get());
            }
            var append = table.newAppend();
            data.forEach(append::appendFile);
            append.commit();
            long bytes = data.stream().mapToLong(DataFile::fileSizeInBytes).sum();
            System.out.printf(
                    "%d files of %,d rows, %,d bytes in all (%.0f bytes a row), %.0f %% deleted; built in %.0f s%n",
                    files,
                    rows,
                    bytes,
                    (double) bytes / files / rows,
                    deletedShare * 100,
                    (System.nanoTime() - t0) / 1e9);

            // The limit: each file read and written again by Iceberg's Parquet reader and writer.
            // (Read before the deletes are committed: every row, as a plain copy reads them.)
            List<FileScanTask> tasks = new ArrayList<>();
            try (CloseableIterable<FileScanTask> planned = table.newScan().planFiles()) {
                planned.forEach(tasks::add);
            }
            long c0 = System.nanoTime();
            List<Future<Long>> copies = new ArrayList<>();
            for (FileScanTask t : tasks) {
                copies.add(pool.submit(() -> plainCopy(table, t)));
            }
            for (Future<Long> c : copies) {
                c.get();
            }
            double copySeconds = (System.nanoTime() - c0) / 1e9;
            // The limit: each file's values decoded and encoded again by Parquet, column by column
            // (parquet-java's column readers into Iceberg's Parquet writer), nothing else.
            long p0 = System.nanoTime();
            List<Future<DataFile>> plain = new ArrayList<>();
            for (FileScanTask t : tasks) {
                plain.add(pool.submit(() -> ParquetRowCopy.copyAll(table, t.file(), "plain-copy")));
            }
            for (Future<DataFile> c : plain) {
                c.get();
            }
            double plainSeconds = (System.nanoTime() - p0) / 1e9;
            pool.shutdown();
            var delta = table.newRowDelta();
            for (DataFile f : data) {
                delta.addDeletes(deleteShare(
                        table, f, deletedShare, new Random(f.location().hashCode())));
            }
            delta.commit();

            long m0 = System.nanoTime();
            MaintenanceResult r = new Maintenance(
                            table,
                            withDeleteRatio(MaintenanceOptions.DEFAULTS, deletedShare * 0.9),
                            settings.stagingUri(),
                            Clock.systemUTC())
                    .run(EnumSet.of(MaintenanceTask.COMPACT), false);
            double seconds = (System.nanoTime() - m0) / 1e9;
            MaintenanceResult.Compaction c = r.compaction();
            if (c.filesRewritten() != files || c.deleteFilesAfter() != 0) {
                throw new IllegalStateException("compaction did not rewrite every file with its deletes: " + r);
            }
            String what = String.format(
                    "%d files of %.0f MB (%,d rows each), %.0f %% of rows deleted, %d cores",
                    files, bytes / 1e6 / files, rows, deletedShare * 100, cores);
            System.out.printf(
                    "compaction %.1f s, plain Parquet read and write %.1f s, copy through Iceberg's records %.1f s"
                            + " (%,d bytes)%n",
                    seconds, plainSeconds, copySeconds, bytes);
            Results.report(
                    "compaction of " + what + String.format(" [%.1f s]", seconds),
                    ">= 40 MB/s per core",
                    String.format("%.1f MB/s per core", bytes / 1e6 / seconds / cores));
            Results.report(
                    "plain Parquet read and write of the same files (every value decoded and encoded again, column"
                            + " by column)" + String.format(" [%.1f s]", plainSeconds),
                    "the limit: compaction >= half",
                    String.format("%.1f MB/s per core", bytes / 1e6 / plainSeconds / cores));
            Results.report(
                    "copy of the same files through Iceberg's generic records (the old compaction's limit)"
                            + String.format(" [%.1f s]", copySeconds),
                    "reference",
                    String.format("%.1f MB/s per core", bytes / 1e6 / copySeconds / cores));
        }
    }

    /** The defaults, but rewriting files with this share of rows deleted (the benchmark's share, so every file). */
    private static MaintenanceOptions withDeleteRatio(MaintenanceOptions o, double ratio) {
        return new MaintenanceOptions(
                o.targetFileSizeBytes(),
                o.maxBytesPerRun() * 16,
                o.maxGroupsPerRun(),
                o.minInputFiles(),
                ratio,
                o.maxRunSeconds(),
                o.snapshotMaxAgeHours(),
                o.minSnapshotsToKeep(),
                o.orphanMinAgeHours(),
                o.manifestThreshold(),
                o.historyRetentionDays(),
                o.historySnapshotMaxAgeHours(),
                o.glueTableVersionsKept(),
                o.glueTableVersionsPerRun());
    }

    /** One data file of {@code rows} rows, keys ascending. */
    private static DataFile writeFile(Table table, int file, int rows) throws IOException {
        Random random = new Random(file);
        DataWriter<Record> writer =
                writers(table).newDataWriter(files(table, file, null).newOutputFile(), table.spec(), null);
        OffsetDateTime start = OffsetDateTime.of(2026, 1, 1, 0, 0, 0, 0, ZoneOffset.UTC);
        try (writer) {
            GenericRecord r = GenericRecord.create(SCHEMA);
            for (int i = 0; i < rows; i++) {
                r.setField("order_id", String.format("order#%03d#%09d", file, i));
                r.setField("_ddb_seq", Long.toString(100_000_000_000_000_000L + random.nextInt(1 << 30)));
                r.setField("status", STATUS[random.nextInt(STATUS.length)]);
                r.setField("amount", BigDecimal.valueOf(random.nextInt(10_000_000), 2));
                r.setField("quantity", (long) 1 + random.nextInt(20));
                r.setField("created_at", start.plusSeconds(i * 3L + random.nextInt(3)));
                r.setField(
                        "note",
                        WORDS[random.nextInt(WORDS.length)] + " " + WORDS[random.nextInt(WORDS.length)] + " "
                                + random.nextInt(1000));
                r.setField("customer_id", "C-" + (10_000_000 + random.nextInt(90_000_000)));
                r.setField("sku", "SKU-" + random.nextInt(100_000));
                r.setField("unit_price", random.nextInt(100_000) / 100.0);
                r.setField("tracking", Long.toHexString(random.nextLong()) + Long.toHexString(random.nextLong()));
                writer.write(r);
            }
        }
        return writer.toDataFile();
    }

    /** A file-scoped position delete file removing {@code share} of the file's rows, at random. */
    private static DeleteFile deleteShare(Table table, DataFile file, double share, Random random) throws IOException {
        PositionDeleteWriter<Record> writer = writers(table)
                .newPositionDeleteWriter(files(table, 1000, "deletes").newOutputFile(), table.spec(), null);
        PositionDelete<Record> delete = PositionDelete.create();
        try (writer) {
            for (long p = 0; p < file.recordCount(); p++) {
                if (random.nextDouble() < share) {
                    writer.write(delete.set(file.location(), p));
                }
            }
        }
        return writer.toDeleteFile();
    }

    /** Reads every row of the file and writes it to a new file: Parquet decoding and encoding, nothing else. */
    private static long plainCopy(Table table, FileScanTask task) throws IOException {
        long rows = 0;
        DataWriter<Record> out = writers(table)
                .newDataWriter(
                        files(table, 2000 + Math.abs(task.file().location().hashCode() % 1000), "copy")
                                .newOutputFile(),
                        table.spec(),
                        null);
        try (CloseableIterable<Record> in = TaskRows.read(table, task, SCHEMA);
                out) {
            for (Record r : in) {
                out.write(r);
                rows++;
            }
        }
        return rows;
    }

    private static GenericFileWriterFactory writers(Table table) {
        return new GenericFileWriterFactory.Builder(table)
                .dataFileFormat(FileFormat.PARQUET)
                .deleteFileFormat(FileFormat.PARQUET)
                .build();
    }

    private static OutputFileFactory files(Table table, int id, String suffix) {
        OutputFileFactory.Builder b = OutputFileFactory.builderFor(table, id, 0).format(FileFormat.PARQUET);
        return (suffix == null ? b : b.suffix(suffix)).build();
    }
}
