package dev.ddb2iceberg.maintenance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.function.MaintenanceSettings;
import dev.ddb2iceberg.testkit.LocalStack;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileFormat;
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
 * What {@link CompactionPlanner} picks, on files laid out by hand (sizes and deleted shares chosen)
 * in a real catalog over the S3 server, and that a run over them rewrites exactly those and keeps
 * every live row.
 */
@ExtendWith(S3ServerExtension.class)
class CompactionPlannerTest {
    /** A 2 MB target: small files are those under 256 KB. */
    private static final long TARGET = 2L << 20;

    private static final Schema SCHEMA = new Schema(
            Types.NestedField.required(1, "id", Types.LongType.get()),
            Types.NestedField.optional(2, "payload", Types.StringType.get()));

    @TempDir
    Path dir;

    private Table table;
    private MaintenanceSettings settings;
    private final Random random = new Random(3);
    private long nextId;
    private int writerId;

    @BeforeEach
    void setUp(EmbeddedS3Server server) {
        Map<String, String> env =
                new LocalStack(server, S3ServerExtension.newBucket(server), dir).environment("planned");
        settings = MaintenanceSettings.from(new Environment(env));
        Catalog catalog = settings.catalog().load();
        ((SupportsNamespaces) catalog).createNamespace(Namespace.of("planner"));
        table = catalog.createTable(
                TableIdentifier.of("planner", "files"),
                SCHEMA,
                PartitionSpec.unpartitioned(),
                Map.of(TableProperties.FORMAT_VERSION, "2", PipelineProperties.KEYS, "id:N"));
    }

    private MaintenanceOptions options() {
        return MaintenanceOptions.DEFAULTS.withTargetFileSize(TARGET);
    }

    @Test
    void aBigFileIsPickedByItsDeletedShareAloneNeverByHowOftenItWasTouched() {
        DataFile mostlyLive = appendFile(40_000); // ~1 MB: big (above a 256 KB small file)
        DataFile halfDeleted = appendFile(40_000);
        for (int merge = 0; merge < 8; merge++) { // eight merges, 1 % each: 8 % deleted, under 20 %
            deletePositions(mostlyLive, 400);
        }
        deletePositions(halfDeleted, 10_000); // 25 %
        appendFile(40_000); // the newest: big, no deletes

        List<CompactionPlanner.Group> groups = new CompactionPlanner(options()).plan(table, table.currentSnapshot());

        assertEquals(
                List.of(Set.of(halfDeleted.location())),
                locations(groups),
                "only the file with a quarter of its rows deleted is rewritten, alone");
    }

    @Test
    void smallFilesArePackedAndTheNewestIsLeftToTheMerger() {
        List<DataFile> small = new ArrayList<>();
        for (int i = 0; i < 7; i++) {
            small.add(appendFile(2_000)); // ~50 KB each: small
        }
        List<CompactionPlanner.Group> groups = new CompactionPlanner(options()).plan(table, table.currentSnapshot());

        Set<String> expected =
                small.subList(0, 6).stream().map(DataFile::location).collect(Collectors.toSet());
        assertEquals(
                List.of(expected),
                locations(groups),
                "the six older small files in one group; the newest is the merger's to fold into");
    }

    @Test
    void aFewSmallFilesWithoutDeletesAreNotWorthARewrite() {
        appendFile(2_000);
        appendFile(2_000);
        appendFile(2_000); // two older small files, under min-input-files and under a small file's worth
        assertEquals(List.of(), new CompactionPlanner(options()).plan(table, table.currentSnapshot()));
    }

    @Test
    void groupsComeMostBenefitPerByteFirstAndARunStaysInsideItsBytes() {
        DataFile quarter = appendFile(40_000);
        DataFile most = appendFile(40_000);
        appendFile(40_000);
        deletePositions(quarter, 10_000); // 25 %
        deletePositions(most, 30_000); // 75 %: more deleted bytes per byte read

        List<CompactionPlanner.Group> groups = new CompactionPlanner(options()).plan(table, table.currentSnapshot());
        assertEquals(
                List.of(Set.of(most.location()), Set.of(quarter.location())),
                locations(groups),
                "the file with three quarters deleted first");

        // A run bounded to one group's bytes rewrites the first, leaves the other for the next run.
        List<Long> before = liveIds();
        MaintenanceOptions bounded = new MaintenanceOptions(
                TARGET, 1, // bytes: only the first group (a run always takes one)
                16, 5, 0.2, 600, 120, 1, 72, 100, 0, 120, 100, 2000);
        MaintenanceResult first = new Maintenance(table, bounded, settings.stagingUri(), Clock.systemUTC())
                .run(EnumSet.of(MaintenanceTask.COMPACT), false);
        assertEquals(1, first.compaction().groups(), first.toString());
        assertEquals(1, first.compaction().groupsLeft(), first.toString());
        table.refresh();
        Set<String> files = dataFiles();
        assertTrue(!files.contains(most.location()) && files.contains(quarter.location()), "files now: " + files);
        assertEquals(before, liveIds(), "every live row kept, no deleted row back");

        MaintenanceResult second = new Maintenance(table, bounded, settings.stagingUri(), Clock.systemUTC())
                .run(EnumSet.of(MaintenanceTask.COMPACT), false);
        assertEquals(1, second.compaction().groups(), second.toString());
        assertEquals(0, second.compaction().groupsLeft(), second.toString());
        table.refresh();
        assertEquals(0, Integer.parseInt(table.currentSnapshot().summary().get("total-delete-files")));
        assertEquals(before, liveIds());
        assertEquals(
                List.of(),
                new CompactionPlanner(options()).plan(table, table.currentSnapshot()),
                "nothing left worth rewriting");
    }

    private static List<Set<String>> locations(List<CompactionPlanner.Group> groups) {
        List<Set<String>> out = new ArrayList<>();
        for (CompactionPlanner.Group g : groups) {
            out.add(g.tasks().stream().map(t -> t.file().location()).collect(Collectors.toSet()));
        }
        return out;
    }

    private Set<String> dataFiles() {
        Set<String> out = new HashSet<>();
        try (CloseableIterable<org.apache.iceberg.FileScanTask> tasks =
                table.newScan().planFiles()) {
            tasks.forEach(t -> out.add(t.file().location()));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out;
    }

    private List<Long> liveIds() {
        table.refresh();
        List<Long> ids = new ArrayList<>();
        try (CloseableIterable<Record> rows = IcebergGenerics.read(table).build()) {
            rows.forEach(r -> ids.add((Long) r.getField("id")));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        ids.sort(null);
        return ids;
    }

    /** Appends one data file of {@code rows} rows (ids ascending, ~25 bytes of random text each). */
    private DataFile appendFile(int rows) {
        GenericFileWriterFactory writers = new GenericFileWriterFactory.Builder(table)
                .dataFileFormat(FileFormat.PARQUET)
                .deleteFileFormat(FileFormat.PARQUET)
                .build();
        OutputFileFactory files = OutputFileFactory.builderFor(table, 1, ++writerId)
                .format(FileFormat.PARQUET)
                .build();
        DataWriter<Record> writer = writers.newDataWriter(files.newOutputFile(), table.spec(), null);
        try (writer) {
            for (int i = 0; i < rows; i++) {
                GenericRecord r = GenericRecord.create(SCHEMA);
                r.setField("id", nextId++);
                r.setField("payload", Long.toHexString(random.nextLong()) + Long.toHexString(random.nextLong()));
                writer.write(r);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        DataFile file = writer.toDataFile();
        table.newAppend().appendFile(file).commit();
        return file;
    }

    /**
     * Deletes {@code count} more live rows of {@code file} by position, replacing its file-scoped
     * delete file (one per data file, as the merger keeps it).
     */
    private void deletePositions(DataFile file, int count) {
        table.refresh();
        Set<Long> deleted = new HashSet<>();
        List<org.apache.iceberg.DeleteFile> old = new ArrayList<>();
        try (CloseableIterable<org.apache.iceberg.FileScanTask> tasks =
                table.newScan().planFiles()) {
            for (org.apache.iceberg.FileScanTask t : tasks) {
                if (t.file().location().equals(file.location())) {
                    old.addAll(t.deletes());
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        for (org.apache.iceberg.DeleteFile d : old) {
            try (CloseableIterable<Record> rows = org.apache.iceberg.parquet.Parquet.read(
                            table.io().newInputFile(d.location()))
                    .project(new Schema(org.apache.iceberg.MetadataColumns.DELETE_FILE_POS))
                    .createReaderFunc(s -> org.apache.iceberg.data.parquet.GenericParquetReaders.buildReader(
                            new Schema(org.apache.iceberg.MetadataColumns.DELETE_FILE_POS), s))
                    .build()) {
                rows.forEach(r -> deleted.add((Long) r.get(0)));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        Set<Long> all = new HashSet<>(deleted);
        while (all.size() < deleted.size() + count) {
            all.add((long) random.nextInt((int) file.recordCount()));
        }
        List<Long> positions = new ArrayList<>(all);
        positions.sort(null);
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
            for (long p : positions) {
                writer.write(delete.set(file.location(), p));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        org.apache.iceberg.RowDelta delta = table.newRowDelta().addDeletes(writer.toDeleteFile());
        old.forEach(delta::removeDeletes);
        delta.commit();
    }
}
