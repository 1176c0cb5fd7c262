package dev.ddb2iceberg.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Our position delete file for one data file is the file Iceberg's own position delete writer
 * writes for it: the same positions read back by Iceberg's reader, the same metrics (bounds that
 * name the data file, no value counts), partition and record count, and the same columns in
 * Parquet (encodings, dictionary page, statistics, codec), one page or several. Written to the embedded S3
 * server over HTTP, for a data file of a table the merger made (SQLite catalog).
 */
@ExtendWith(S3ServerExtension.class)
class PositionDeleteFileWriterTest {
    @TempDir
    Path dir;

    @Test
    void itWritesTheFileIcebergsOwnPositionDeleteWriterWrites(EmbeddedS3Server server) throws IOException {
        assertWritesIcebergsFile(server, recordCount -> new long[] {0, 3, 4, 17, recordCount - 1});
    }

    /** Over two full pages and a part (a data file's carried deletes grow to many pages before compaction). */
    @Test
    void aFileOfSeveralPagesIsTheFileIcebergsWriterWrites(EmbeddedS3Server server) throws IOException {
        int n = 2 * PositionDeleteFileWriter.PAGE_ROWS + 1;
        assertWritesIcebergsFile(server, recordCount -> {
            long[] positions = new long[n];
            for (int i = 0; i < n; i++) {
                positions[i] = 3L * i + 1; // as many as there are: the reader does not check against the data file
            }
            return positions;
        });
    }

    private void assertWritesIcebergsFile(EmbeddedS3Server server, LongFunction<long[]> positionsFor)
            throws IOException {
        Table table = mergedTable(server, dir, Map.of());
        assertTrue(PositionDeleteFileWriter.handles(table), "a Parquet table without encryption");
        DataFile dataFile;
        try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
            dataFile = tasks.iterator().next().file();
        }
        assertTrue(dataFile.recordCount() > 20, "the data file has rows to delete: " + dataFile.recordCount());
        long[] positions = positionsFor.apply(dataFile.recordCount());

        OutputFileFactory files = OutputFileFactory.builderFor(table, 0, 7)
                .format(FileFormat.PARQUET)
                .suffix("deletes")
                .build();
        PartitionSpec spec = table.specs().get(dataFile.specId());
        DeleteFile ours = PositionDeleteFileWriter.write(
                table,
                files.newOutputFile(spec, dataFile.partition()).encryptingOutputFile(),
                dataFile,
                positions,
                MergeWriter.mergeFileSettings(table.properties()));

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
    private static Map<String, ColumnChunkMetaData> chunks(InputFile file) throws IOException {
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
