package dev.ddb2iceberg.write;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.BaseDeleteLoader;
import org.apache.iceberg.deletes.BaseDVFileWriter;
import org.apache.iceberg.deletes.PositionDeleteIndex;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.DeleteWriteResult;
import org.apache.iceberg.io.OutputFileFactory;
import org.apache.iceberg.io.SeekableInputStream;
import org.apache.iceberg.util.ContentFileUtil;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.roaringbitmap.RoaringBitmap;

/**
 * Our deletion vector for a data file is the one Iceberg's own writer writes for it: the same blob
 * bytes in the Puffin file, the same delete file entry (referenced data file, record count, blob
 * size), the positions Iceberg's reader reads back, and the earlier vector it replaces. Written to
 * the embedded S3 server over HTTP, for a data file of a format v3 table the merger made (SQLite
 * catalog).
 */
@ExtendWith(S3ServerExtension.class)
class DeletionVectorWriterTest {
    @TempDir
    Path dir;

    @Test
    void aFewPositionsAreTheVectorIcebergsWriterWrites(EmbeddedS3Server server) throws IOException {
        assertWritesIcebergsVector(server, new long[] {0, 3, 4, 17, 350});
    }

    /** Sparse, dense and run-shaped stretches over four 65,536-wide containers, as a late merge carries. */
    @Test
    void manyPositionsAcrossContainersAreTheVectorIcebergsWriterWrites(EmbeddedS3Server server) throws IOException {
        List<Long> positions = new ArrayList<>();
        for (long p = 0; p < 250_000; p += p < 70_000 ? 7 : p < 140_000 ? 1 : 301) {
            positions.add(p);
        }
        assertWritesIcebergsVector(
                server, positions.stream().mapToLong(Long::longValue).toArray());
    }

    private void assertWritesIcebergsVector(EmbeddedS3Server server, long[] positions) throws IOException {
        Table table = PositionDeleteFileWriterTest.mergedTable(server, dir, Map.of("TABLE_FORMAT_VERSION", "3"));
        assertTrue(DeletionVectorWriter.handles(table), "a table without encryption");
        DataFile dataFile;
        try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
            dataFile = tasks.iterator().next().file();
        }
        OutputFileFactory files = OutputFileFactory.builderFor(table, 0, 7)
                .format(FileFormat.PUFFIN)
                .build();
        PartitionSpec spec = table.specs().get(dataFile.specId());

        // An earlier vector for the file (its first two positions), which both new ones replace.
        DeleteFile earlier = icebergs(table, files, dataFile, Arrays.copyOf(positions, 2), path -> null)
                .deleteFiles()
                .get(0);
        BaseDeleteLoader reader = new BaseDeleteLoader(f -> table.io().newInputFile(f));
        PositionDeleteIndex before = reader.loadPositionDeletes(List.of(earlier), dataFile.location());

        DeleteWriteResult theirs = icebergs(table, files, dataFile, positions, path -> before);
        RoaringBitmap bitmap = new RoaringBitmap();
        Arrays.stream(positions).forEach(p -> bitmap.add((int) p));
        DeleteWriteResult ours = DeletionVectorWriter.write(
                table,
                files.newOutputFile().encryptingOutputFile(),
                List.of(new DeletionVectorWriter.Vector(dataFile, bitmap, List.of(earlier))));

        assertEquals(1, ours.deleteFiles().size(), "one vector for one data file");
        DeleteFile t = theirs.deleteFiles().get(0);
        DeleteFile o = ours.deleteFiles().get(0);
        assertEquals(FileFormat.PUFFIN, o.format());
        assertTrue(ContentFileUtil.isDV(o), "a deletion vector");
        assertEquals(t.content(), o.content());
        assertEquals(t.recordCount(), o.recordCount(), "record count (the vector's cardinality)");
        assertEquals(positions.length, o.recordCount());
        assertEquals(t.specId(), o.specId());
        assertEquals(spec.partitionType().fields().size(), o.partition().size());
        assertEquals(t.partition(), o.partition());
        assertEquals(t.referencedDataFile(), o.referencedDataFile());
        assertEquals(dataFile.location(), o.referencedDataFile());
        assertEquals(t.contentSizeInBytes(), o.contentSizeInBytes(), "the blob's size");
        assertEquals(table.io().newInputFile(o.location()).getLength(), o.fileSizeInBytes(), "the object's size");
        assertArrayEquals(blob(table, t), blob(table, o), "the blob's bytes (length, magic, bitmap, checksum)");

        assertEquals(List.of(earlier.location()), locations(ours.rewrittenDeleteFiles()), "replaces the earlier");
        assertEquals(locations(theirs.rewrittenDeleteFiles()), locations(ours.rewrittenDeleteFiles()));
        assertEquals(
                List.of(dataFile.location()),
                List.copyOf(ours.referencedDataFiles()).stream()
                        .map(CharSequence::toString)
                        .toList());

        List<Long> read = new ArrayList<>();
        reader.loadPositionDeletes(List.of(o), dataFile.location()).forEach(read::add);
        assertEquals(Arrays.stream(positions).boxed().toList(), read, "Iceberg's reader reads the positions");
    }

    /** Iceberg's own writer's vector for {@code positions}, merged with what {@code previous} gives. */
    private static DeleteWriteResult icebergs(
            Table table,
            OutputFileFactory files,
            DataFile dataFile,
            long[] positions,
            Function<String, PositionDeleteIndex> previous)
            throws IOException {
        BaseDVFileWriter writer = new BaseDVFileWriter(files, previous);
        try (writer) {
            for (long p : positions) {
                writer.delete(dataFile.location(), p, table.specs().get(dataFile.specId()), dataFile.partition());
            }
        }
        return writer.result();
    }

    /** The bytes of a vector's blob in its Puffin file. */
    private static byte[] blob(Table table, DeleteFile vector) throws IOException {
        try (SeekableInputStream in = table.io().newInputFile(vector.location()).newStream()) {
            in.seek(vector.contentOffset());
            return in.readNBytes(Math.toIntExact(vector.contentSizeInBytes()));
        }
    }

    private static List<String> locations(List<DeleteFile> files) {
        return files.stream().map(DeleteFile::location).toList();
    }
}
