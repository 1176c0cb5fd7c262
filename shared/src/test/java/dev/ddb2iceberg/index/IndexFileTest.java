package dev.ddb2iceberg.index;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.zip.GZIPInputStream;
import java.util.zip.GZIPOutputStream;
import org.apache.iceberg.inmemory.InMemoryFileIO;
import org.apache.iceberg.io.FileIO;
import org.junit.jupiter.api.Test;

/**
 * A key index file (what a merge writes as its delta): read back entry for entry, tombstones
 * included; refused as damage when cut short or changed, never read as fewer or other entries; and
 * a file from before zstd (gzip of the same bytes) still read. Bytes only, so an in-memory FileIO
 * holds them; reading and writing them through S3 is in KeyIndexTest.
 */
class IndexFileTest {
    private final FileIO io = new InMemoryFileIO();

    private static IndexEntries entries(int n) {
        Random random = new Random(7);
        IndexEntries.Builder b = new IndexEntries.Builder();
        for (int i = 0; i < n; i++) {
            byte[] key = ("customer-" + random.nextInt(1_000_000) + "#order-" + i).getBytes(StandardCharsets.UTF_8);
            byte[] sequence = BigInteger.valueOf(1_000_000L + i).toByteArray();
            if (i % 10 == 3) {
                b.add(key, null, 0, sequence); // a removed key's tombstone
            } else {
                b.add(key, "s3://bucket/data/file-" + (i % 7) + ".parquet", i * 3L, sequence);
            }
        }
        return b.build();
    }

    private static String describe(IndexEntries entries, int i) {
        IndexEntries.Entry e = entries.entry(i);
        return new String(e.key(), StandardCharsets.UTF_8) + " -> " + e.file() + "@" + e.position() + "#"
                + e.sequence();
    }

    private static void assertSameEntries(IndexEntries expected, IndexEntries actual) {
        assertEquals(expected.size(), actual.size(), "entries read back");
        for (int i = 0; i < expected.size(); i++) {
            assertEquals(describe(expected, i), describe(actual, i), "entry " + i);
        }
    }

    private byte[] bytesOf(String location) throws IOException {
        try (InputStream in = io.newInputFile(location).newStream()) {
            return in.readAllBytes();
        }
    }

    private void put(String location, byte[] bytes, int length) throws IOException {
        try (OutputStream out = io.newOutputFile(location).createOrOverwrite()) {
            out.write(bytes, 0, length);
        }
    }

    @Test
    void aFileReadsBackEntryForEntryTombstonesIncluded() throws IOException {
        IndexEntries written = entries(20_000);
        long size = IndexFile.write(io, "mem://index/delta.bin", written);
        assertEquals(bytesOf("mem://index/delta.bin").length, size, "the size write returns is the stored size");
        assertSameEntries(written, IndexFile.read(io, "mem://index/delta.bin"));
    }

    @Test
    void anEntryLargerThanTheWritersChunkReadsBack() throws IOException {
        IndexEntries.Builder b = new IndexEntries.Builder();
        byte[] sequence = BigInteger.valueOf(42).toByteArray();
        b.add("a-short-key".getBytes(StandardCharsets.UTF_8), "s3://bucket/data/f.parquet", 1, sequence);
        byte[] huge = new byte[100_000]; // past the 64 KB the writer gathers entries in
        Arrays.fill(huge, (byte) 'k');
        b.add(huge, "s3://bucket/data/f.parquet", 2, sequence);
        b.add("z-short-key".getBytes(StandardCharsets.UTF_8), null, 0, sequence);
        IndexEntries written = b.build();
        IndexFile.write(io, "mem://index/huge.bin", written);
        IndexEntries read = IndexFile.read(io, "mem://index/huge.bin");
        assertSameEntries(written, read);
        assertArrayEquals(huge, read.entry(1).key(), "the long key, byte for byte");
    }

    @Test
    void aFileCutShortOrChangedIsDamageNeverFewerEntries() throws IOException {
        IndexEntries written = entries(2_000);
        IndexFile.write(io, "mem://index/good.bin", written);
        byte[] good = bytesOf("mem://index/good.bin");
        List<Integer> places = new ArrayList<>();
        for (int at = 0; at < good.length; at += Math.max(1, good.length / 97)) {
            places.add(at);
        }
        for (int back = 1; back <= 12; back++) {
            places.add(good.length - back); // the frame's end and its checksum: only zstd's checks see these
        }
        for (int length : places) {
            put("mem://index/cut.bin", good, length);
            int cut = length;
            assertThrows(
                    DamagedIndexException.class,
                    () -> IndexFile.read(io, "mem://index/cut.bin"),
                    () -> "a file cut to " + cut + " of " + good.length + " bytes");
        }
        for (int at : places) {
            byte[] bad = good.clone();
            bad[at] ^= 0x41;
            put("mem://index/bad.bin", bad, bad.length);
            int changed = at;
            assertThrows(
                    DamagedIndexException.class,
                    () -> IndexFile.read(io, "mem://index/bad.bin"),
                    () -> "a file with byte " + changed + " of " + good.length + " changed");
        }
    }

    /** Tables indexed before the switch to zstd hold gzip files: the same bytes, gzipped. */
    @Test
    void aGzipFileFromBeforeZstdIsStillRead() throws IOException {
        IndexEntries written = entries(5_000);
        IndexFile.write(io, "mem://index/new.bin", written);
        byte[] raw;
        try (InputStream in = new com.github.luben.zstd.ZstdInputStreamNoFinalizer(
                io.newInputFile("mem://index/new.bin").newStream())) {
            raw = in.readAllBytes();
        }
        ByteArrayOutputStream gzipped = new ByteArrayOutputStream();
        try (GZIPOutputStream gzip = new GZIPOutputStream(gzipped)) {
            gzip.write(raw);
        }
        byte[] old = gzipped.toByteArray();
        try (InputStream check = new GZIPInputStream(new java.io.ByteArrayInputStream(old))) {
            assertEquals(raw.length, check.readAllBytes().length, "the gzip file holds the same bytes");
        }
        put("mem://index/old.bin", old, old.length);
        assertSameEntries(written, IndexFile.read(io, "mem://index/old.bin"));
        put("mem://index/old-cut.bin", old, old.length - 9);
        assertThrows(
                DamagedIndexException.class,
                () -> IndexFile.read(io, "mem://index/old-cut.bin"),
                "a gzip file cut short is damage too");
    }
}
