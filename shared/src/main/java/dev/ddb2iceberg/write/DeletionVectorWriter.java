package dev.ddb2iceberg.write;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileMetadata;
import org.apache.iceberg.IcebergBuild;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.Table;
import org.apache.iceberg.encryption.PlaintextEncryptionManager;
import org.apache.iceberg.io.DeleteWriteResult;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.puffin.Blob;
import org.apache.iceberg.puffin.BlobMetadata;
import org.apache.iceberg.puffin.Puffin;
import org.apache.iceberg.puffin.PuffinWriter;
import org.apache.iceberg.puffin.StandardBlobTypes;
import org.apache.iceberg.util.CharSequenceSet;
import org.apache.iceberg.util.ContentFileUtil;
import org.roaringbitmap.RoaringBitmap;

/**
 * Writes a merge's deletion vectors (format v3): one Puffin file, one {@code deletion-vector-v1}
 * blob a data file, each holding every position the data file has deleted, and replacing the data
 * file's earlier vector in the same commit.
 *
 * <p>Why not Iceberg's {@code BaseDVFileWriter}: it takes a file's earlier positions from a loader
 * and adds them to the new vector one by one unless the loader hands it Iceberg's own bitmap, a
 * class of its package. A merge carries every position deleted since compaction (millions late in
 * the hour), so that was 8 % of a late merge's CPU. Here the merge hands over each file's whole
 * bitmap (the container's held one copied, this merge's positions added: {@link MergeWriter#carry}),
 * and the vector is that bitmap's bytes.
 *
 * <p>The blob is as the Puffin spec gives it, and as Iceberg writes it: the length of what follows
 * up to the checksum (4 bytes, big-endian), the magic bytes {@code D1 D3 39 64}, the positions as a
 * 64-bit Roaring bitmap in its portable form (the count of 32-bit bitmaps, 8 bytes little-endian,
 * then each one's key, 4 bytes little-endian, and its portable serialization, run-length encoded
 * where that is smaller), and a CRC-32 of the magic bytes and the bitmap (4 bytes, big-endian).
 * Positions here are below 2^31, so there is one 32-bit bitmap, of key 0.
 */
final class DeletionVectorWriter {
    private static final byte[] MAGIC = {(byte) 0xD1, (byte) 0xD3, 0x39, 0x64};

    /** One data file's new vector: every position it deletes, and the vector it replaces (if any). */
    record Vector(DataFile dataFile, RoaringBitmap positions, List<DeleteFile> replaced) {}

    private DeletionVectorWriter() {}

    /** Whether this writer writes the table's deletion vectors: no table encryption. */
    static boolean handles(Table table) {
        return table.encryption() instanceof PlaintextEncryptionManager;
    }

    /**
     * Writes {@code vectors} (each data file once, each with at least one position) to {@code out}.
     * Each vector's bitmap is run-length encoded in place where that makes it smaller.
     */
    static DeleteWriteResult write(Table table, OutputFile out, List<Vector> vectors) {
        List<BlobMetadata> blobs = new ArrayList<>(vectors.size());
        long fileSize;
        try (PuffinWriter writer =
                Puffin.write(out).createdBy(IcebergBuild.fullVersion()).build()) {
            for (Vector vector : vectors) {
                blobs.add(writer.write(blob(vector)));
            }
            writer.finish();
            fileSize = writer.fileSize();
        } catch (IOException e) {
            throw new UncheckedIOException("writing deletion vectors to " + out.location(), e);
        }
        List<DeleteFile> written = new ArrayList<>(vectors.size());
        CharSequenceSet referenced = CharSequenceSet.empty();
        List<DeleteFile> replaced = new ArrayList<>();
        for (int i = 0; i < vectors.size(); i++) {
            Vector vector = vectors.get(i);
            DataFile dataFile = vector.dataFile();
            written.add(FileMetadata.deleteFileBuilder(table.specs().get(dataFile.specId()))
                    .ofPositionDeletes()
                    .withFormat(FileFormat.PUFFIN)
                    .withPath(out.location())
                    .withPartition(dataFile.partition())
                    .withFileSizeInBytes(fileSize)
                    .withReferencedDataFile(dataFile.location())
                    .withContentOffset(blobs.get(i).offset())
                    .withContentSizeInBytes(blobs.get(i).length())
                    .withRecordCount(vector.positions().getLongCardinality())
                    .build());
            referenced.add(dataFile.location());
            // As Iceberg's writer: what the new vector replaces is the file's own (file-scoped) deletes.
            vector.replaced().stream().filter(ContentFileUtil::isFileScoped).forEach(replaced::add);
        }
        return new DeleteWriteResult(written, referenced, replaced);
    }

    private static Blob blob(Vector vector) {
        RoaringBitmap positions = vector.positions();
        if (positions.isEmpty()) {
            throw new IllegalArgumentException(
                    "no positions to delete in " + vector.dataFile().location());
        }
        return new Blob(
                StandardBlobTypes.DV_V1,
                List.of(MetadataColumns.ROW_POSITION.fieldId()),
                -1, // the snapshot and sequence number are the commit's, unknown here (as Iceberg's writer leaves them)
                -1,
                serialize(positions),
                null, // deletion vectors are never compressed
                Map.of(
                        "referenced-data-file",
                        vector.dataFile().location(),
                        "cardinality",
                        Long.toString(positions.getLongCardinality())));
    }

    /** The {@code deletion-vector-v1} blob of {@code positions} (all below 2^31). */
    static ByteBuffer serialize(RoaringBitmap positions) {
        positions.runOptimize();
        int bitmapLength = Long.BYTES + Integer.BYTES + positions.serializedSizeInBytes();
        byte[] bytes = new byte[Integer.BYTES + MAGIC.length + bitmapLength + Integer.BYTES];
        ByteBuffer buffer = ByteBuffer.wrap(bytes);
        buffer.order(ByteOrder.BIG_ENDIAN).putInt(MAGIC.length + bitmapLength).put(MAGIC);
        buffer.order(ByteOrder.LITTLE_ENDIAN).putLong(1).putInt(0); // one 32-bit bitmap, key 0
        positions.serialize(buffer);
        CRC32 crc = new CRC32();
        crc.update(bytes, Integer.BYTES, MAGIC.length + bitmapLength);
        buffer.order(ByteOrder.BIG_ENDIAN).putInt((int) crc.getValue());
        return ByteBuffer.wrap(bytes);
    }
}
