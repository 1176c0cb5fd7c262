package dev.ddb2iceberg.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.testkit.KeyedWorkload;
import dev.ddb2iceberg.testkit.MergerFixture;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.LongFunction;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.UpdateProperties;
import org.apache.iceberg.data.BaseDeleteLoader;
import org.apache.iceberg.data.GenericFileWriterFactory;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.deletes.PositionDelete;
import org.apache.iceberg.deletes.PositionDeleteIndex;
import org.apache.iceberg.deletes.PositionDeleteWriter;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.OutputFileFactory;
import org.apache.iceberg.util.ContentFileUtil;
import org.apache.parquet.ParquetReadOptions;
import org.apache.parquet.column.Encoding;
import org.apache.parquet.column.ParquetProperties.WriterVersion;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Our position delete file for one data file is the file Iceberg's own position delete writer
 * writes for it: the same positions read back by Iceberg's reader, the same metrics (bounds that
 * name the data file, no value counts), partition and record count, and the same columns in
 * Parquet (encodings, dictionary page, statistics, codec), one page or several, in Parquet's v1
 * pages (the default) or v2 pages (the table's {@code write.delete.parquet.page-version}). Written to
 * the embedded S3 server over HTTP, for a data file of a table the merger made (SQLite catalog).
 */
@ExtendWith(S3ServerExtension.class)
class PositionDeleteFileWriterTest {
    @TempDir
    Path dir;

    @Test
    void itWritesTheFileIcebergsOwnPositionDeleteWriterWrites(EmbeddedS3Server server) throws IOException {
        assertWritesIcebergsFile(server, Map.of(), recordCount -> new long[] {0, 3, 4, 17, recordCount - 1});
    }

    /** A table that asks for v2 pages in its delete files gets the file Iceberg's writer writes for it. */
    @Test
    void withV2PagesItWritesTheFileIcebergsWriterWrites(EmbeddedS3Server server) throws IOException {
        ColumnChunkMetaData pos = assertWritesIcebergsFile(
                server, Map.of(TableProperties.DELETE_PARQUET_PAGE_VERSION, "v2"), recordCount ->
                        new long[] {0, 3, 4, 17, recordCount - 1});
        assertTrue(
                pos.getEncodings().contains(Encoding.DELTA_BINARY_PACKED),
                "v2 pages delta-encode the positions: " + pos.getEncodings());
    }

    /** The data files' page version (write.parquet.page-version) is the deletes' too, unless they have their own. */
    @Test
    void theDataFilesPageVersionIsTheDeletesUnlessTheyHaveTheirOwn() {
        assertEquals(WriterVersion.PARQUET_1_0, PositionDeleteFileWriter.pageVersion(Map.of()));
        assertEquals(
                WriterVersion.PARQUET_2_0,
                PositionDeleteFileWriter.pageVersion(Map.of(TableProperties.PARQUET_PAGE_VERSION, "v2")));
        assertEquals(
                WriterVersion.PARQUET_1_0,
                PositionDeleteFileWriter.pageVersion(Map.of(
                        TableProperties.PARQUET_PAGE_VERSION,
                        "v2",
                        TableProperties.DELETE_PARQUET_PAGE_VERSION,
                        "v1")));
    }

    @Test
    void anUnknownPageVersionIsRefusedNamingTheProperty() {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> PositionDeleteFileWriter.pageVersion(Map.of(TableProperties.DELETE_PARQUET_PAGE_VERSION, "v3")));
        assertTrue(
                e.getMessage().contains("'v3'") && e.getMessage().contains(TableProperties.DELETE_PARQUET_PAGE_VERSION),
                "names the value and the property: " + e.getMessage());
    }

    /**
     * A data file's carried positions, a third of its rows, in v2 pages take a fraction of the bytes
     * they take in v1 pages: the pages hold the gaps between positions, not the positions.
     */
    @Test
    void v2PagesHoldCarriedPositionsInFewerBytes(EmbeddedS3Server server) throws IOException {
        Table table = mergedTable(server, dir, Map.of());
        DataFile dataFile = firstDataFile(table);
        long[] positions = new long[3 * PositionDeleteFileWriter.PAGE_ROWS];
        for (int i = 0; i < positions.length; i++) {
            positions[i] = 3L * i + (i % 3); // gaps of 1 to 5, as a file's carried deletes leave them
        }
        Map<String, String> settings = MergeWriter.deleteFileSettings(table.properties());
        Map<String, String> v2 = new HashMap<>(settings);
        v2.put(TableProperties.DELETE_PARQUET_PAGE_VERSION, "v2");
        DeleteFile inV1 = writeOurs(table, dataFile, positions, settings);
        DeleteFile inV2 = writeOurs(table, dataFile, positions, v2);
        assertTrue(
                inV2.fileSizeInBytes() * 2 < inV1.fileSizeInBytes(),
                "v2 pages: " + inV2.fileSizeInBytes() + " bytes, v1 pages: " + inV1.fileSizeInBytes());
        BaseDeleteLoader reader = new BaseDeleteLoader(f -> table.io().newInputFile(f));
        assertEquals(
                Arrays.stream(positions).boxed().toList(),
                positionsOf(reader.loadPositionDeletes(List.of(inV2), dataFile.location())),
                "Iceberg's reader reads every position back from the v2 pages");
    }

    /** Over two full pages and a part (a data file's carried deletes grow to many pages before compaction). */
    @Test
    void aFileOfSeveralPagesIsTheFileIcebergsWriterWrites(EmbeddedS3Server server) throws IOException {
        int n = 2 * PositionDeleteFileWriter.PAGE_ROWS + 1;
        assertWritesIcebergsFile(server, Map.of(), severalPages(n));
    }

    @Test
    void aFileOfSeveralV2PagesIsTheFileIcebergsWriterWrites(EmbeddedS3Server server) throws IOException {
        int n = 2 * PositionDeleteFileWriter.PAGE_ROWS + 1;
        assertWritesIcebergsFile(server, Map.of(TableProperties.DELETE_PARQUET_PAGE_VERSION, "v2"), severalPages(n));
    }

    /**
     * A table that asks for uncompressed delete files (a merger bound by CPU: BENCHMARKS.md, "Delete
     * files", 2026-12-07) gets the file Iceberg's writer writes for it, positions plain.
     */
    @Test
    void withoutCompressionItWritesTheFileIcebergsWriterWrites(EmbeddedS3Server server) throws IOException {
        int n = 2 * PositionDeleteFileWriter.PAGE_ROWS + 1;
        ColumnChunkMetaData pos = assertWritesIcebergsFile(
                server, Map.of(TableProperties.DELETE_PARQUET_COMPRESSION, "uncompressed"), severalPages(n));
        assertEquals(CompressionCodecName.UNCOMPRESSED, pos.getCodec(), "the table's codec for deletes");
        assertTrue(
                pos.getTotalSize() >= (long) n * Long.BYTES,
                "8 bytes a position, uncompressed: " + pos.getTotalSize() + " bytes for " + n);
    }

    private static LongFunction<long[]> severalPages(int n) {
        return recordCount -> {
            long[] positions = new long[n];
            for (int i = 0; i < n; i++) {
                positions[i] = 3L * i + 1; // as many as there are: the reader does not check against the data file
            }
            return positions;
        };
    }

    /**
     * Writes our delete file and Iceberg's for the same positions of a table with {@code properties}
     * and asserts they are the same file; returns our positions' column chunk.
     */
    private ColumnChunkMetaData assertWritesIcebergsFile(
            EmbeddedS3Server server, Map<String, String> properties, LongFunction<long[]> positionsFor)
            throws IOException {
        Table table = mergedTable(server, dir, Map.of());
        if (!properties.isEmpty()) {
            UpdateProperties update = table.updateProperties();
            properties.forEach(update::set);
            update.commit();
        }
        assertTrue(PositionDeleteFileWriter.handles(table), "a Parquet table without encryption");
        DataFile dataFile = firstDataFile(table);
        assertTrue(dataFile.recordCount() > 20, "the data file has rows to delete: " + dataFile.recordCount());
        long[] positions = positionsFor.apply(dataFile.recordCount());

        OutputFileFactory files = outputFiles(table);
        PartitionSpec spec = table.specs().get(dataFile.specId());
        DeleteFile ours = writeOurs(table, dataFile, positions, MergeWriter.deleteFileSettings(table.properties()));

        PositionDeleteWriter<Record> icebergs = new GenericFileWriterFactory.Builder(table)
                .deleteFileFormat(FileFormat.PARQUET)
                .build()
                .newPositionDeleteWriter(files.newOutputFile(spec, dataFile.partition()), spec, dataFile.partition());
        try (icebergs) {
            PositionDelete<Record> delete = PositionDelete.create();
            for (long p : positions) {
                icebergs.write(delete.set(dataFile.location(), p));
            }
        }
        DeleteFile theirs = icebergs.toDeleteFile();

        assertEquals(theirs.content(), ours.content());
        assertEquals(FileFormat.PARQUET, ours.format());
        assertEquals(theirs.recordCount(), ours.recordCount());
        assertEquals(theirs.specId(), ours.specId());
        assertEquals(theirs.partition(), ours.partition());
        assertEquals(
                theirs.lowerBounds(), ours.lowerBounds(), "lower bounds (the data file's path, the first position)");
        assertEquals(theirs.upperBounds(), ours.upperBounds(), "upper bounds");
        assertEquals(theirs.valueCounts(), ours.valueCounts(), "value counts (none, as Iceberg's)");
        assertEquals(theirs.nullValueCounts(), ours.nullValueCounts(), "null counts (none, as Iceberg's)");
        assertEquals(dataFile.location(), ContentFileUtil.referencedDataFileLocation(ours));
        assertTrue(ContentFileUtil.isFileScoped(ours), "file-scoped");
        assertEquals(
                table.io().newInputFile(ours.location()).getLength(),
                ours.fileSizeInBytes(),
                "the size recorded is the object's");
        assertFalse(ours.splitOffsets().isEmpty(), "the row group's offset is recorded");

        BaseDeleteLoader reader = new BaseDeleteLoader(f -> table.io().newInputFile(f));
        assertEquals(
                positionsOf(reader.loadPositionDeletes(List.of(theirs), dataFile.location())),
                positionsOf(reader.loadPositionDeletes(List.of(ours), dataFile.location())),
                "Iceberg's reader reads the same positions from both");
        assertEquals(
                Arrays.stream(positions).boxed().toList(),
                positionsOf(reader.loadPositionDeletes(List.of(ours), dataFile.location())));

        Map<String, ColumnChunkMetaData> ourChunks = chunks(table.io().newInputFile(ours.location()));
        Map<String, ColumnChunkMetaData> theirChunks = chunks(table.io().newInputFile(theirs.location()));
        assertEquals(theirChunks.keySet(), ourChunks.keySet(), "the columns");
        for (String column : theirChunks.keySet()) {
            ColumnChunkMetaData o = ourChunks.get(column);
            ColumnChunkMetaData t = theirChunks.get(column);
            assertEquals(t.getValueCount(), o.getValueCount(), column + ": values");
            assertEquals(t.getEncodings(), o.getEncodings(), column + ": encodings");
            assertEquals(t.hasDictionaryPage(), o.hasDictionaryPage(), column + ": a dictionary page");
            assertEquals(t.getStatistics(), o.getStatistics(), column + ": statistics");
            assertEquals(t.getCodec(), o.getCodec(), column + ": codec");
        }
        return ourChunks.get("pos");
    }

    private static DataFile firstDataFile(Table table) throws IOException {
        try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
            return tasks.iterator().next().file();
        }
    }

    private static OutputFileFactory outputFiles(Table table) {
        return OutputFileFactory.builderFor(table, 0, 7)
                .format(FileFormat.PARQUET)
                .suffix("deletes")
                .build();
    }

    private static DeleteFile writeOurs(
            Table table, DataFile dataFile, long[] positions, Map<String, String> settings) {
        PartitionSpec spec = table.specs().get(dataFile.specId());
        return PositionDeleteFileWriter.write(
                table,
                outputFiles(table).newOutputFile(spec, dataFile.partition()).encryptingOutputFile(),
                dataFile,
                positions,
                settings);
    }

    /**
     * A table (four buckets, and {@code settings}) after one merge of 400 new items, for a data
     * file to write deletes for.
     */
    static Table mergedTable(EmbeddedS3Server server, Path dir, Map<String, String> settings) {
        Map<String, String> env = new HashMap<>(settings);
        env.put("PARTITION_SPEC", "bucket(4, pk)");
        MergerFixture fixture = new MergerFixture(server, dir, env);
        KeyedWorkload w = new KeyedWorkload(31, 1000);
        List<Change> inserts = new ArrayList<>();
        for (int i = 0; i < 400; i++) {
            inserts.add(w.upsert(i, Operation.INSERT));
        }
        fixture.stage(inserts);
        fixture.merger().run();
        return fixture.table();
    }

    /** The one row group's column chunks of a Parquet file, by column. */
    static Map<String, ColumnChunkMetaData> chunks(InputFile file) throws IOException {
        try (ParquetFileReader reader = ParquetFileReader.open(
                ParquetRowCopy.parquetFile(file), ParquetReadOptions.builder().build())) {
            List<BlockMetaData> blocks = reader.getFooter().getBlocks();
            assertEquals(1, blocks.size(), "row groups in " + file.location());
            Map<String, ColumnChunkMetaData> chunks = new TreeMap<>();
            for (ColumnChunkMetaData column : blocks.get(0).getColumns()) {
                chunks.put(column.getPath().toDotString(), column);
            }
            return chunks;
        }
    }

    private static List<Long> positionsOf(PositionDeleteIndex index) {
        List<Long> positions = new ArrayList<>();
        index.forEach(positions::add);
        return positions;
    }
}
