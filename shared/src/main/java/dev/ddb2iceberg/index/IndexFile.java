package dev.ddb2iceberg.index;

import com.github.luben.zstd.ZstdIOException;
import com.github.luben.zstd.ZstdInputStreamNoFinalizer;
import com.github.luben.zstd.ZstdOutputStreamNoFinalizer;
import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.FilterInputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.StreamCorruptedException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.function.LongConsumer;
import java.util.zip.GZIPInputStream;
import java.util.zip.ZipException;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.OutputFile;

/**
 * One key index file (a delta, or a base part of an index from before {@link PartFile}) in object
 * storage: zstd of a header, the data file table, the sorted entries and an end marker. The zstd
 * frame's checksum, the marker and the counts make a truncated or damaged file fail to read, never
 * read as fewer entries. Files written before 2026-12-04 are gzip of the same bytes, and are read
 * as such (told apart by their first bytes).
 */
final class IndexFile {
    private static final int MAGIC = 0xDD81_0001;
    private static final int END = 0xDD81_FFFF;
    /** Entries are gathered in chunks of this size before they go to the compressor. */
    private static final int CHUNK_BYTES = 1 << 16;
    /** The most bytes {@link Varints#write} takes for a 64-bit value. */
    private static final int MAX_VARINT_BYTES = 10;

    private IndexFile() {}

    /** Writes the file; returns its size in storage (so no request is needed to learn it). */
    static long write(FileIO io, String location, IndexEntries entries) {
        OutputFile file = io.newOutputFile(location);
        CountingOutputStream raw;
        try (CountingOutputStream counted = new CountingOutputStream(file.createOrOverwrite());
                ZstdOutputStreamNoFinalizer zstd = new ZstdOutputStreamNoFinalizer(counted, LEVEL).setChecksum(true)) {
            raw = counted;
            ByteArrayOutputStream head = new ByteArrayOutputStream();
            writeInt(head, MAGIC);
            Varints.write(head, entries.size());
            writeFileTable(head, entries.files());
            head.writeTo(zstd);
            // The entries straight from the packed arrays into a chunk: a delta of a merge is about
            // 180,000 entries, and copying each key and sequence out first, and writing each number
            // through a stream, made six small arrays an entry.
            byte[] keys = entries.keyData();
            byte[] sequences = entries.sequenceData();
            byte[] chunk = new byte[CHUNK_BYTES];
            int at = 0;
            for (int i = 0; i < entries.size(); i++) {
                int keyLength = entries.keyLength(i);
                int sequenceLength = entries.sequenceLength(i);
                int most = 4 * MAX_VARINT_BYTES + keyLength + sequenceLength;
                if (at + most > chunk.length) {
                    zstd.write(chunk, 0, at);
                    at = 0;
                    if (most > chunk.length) {
                        chunk = new byte[most]; // a key longer than a chunk
                    }
                }
                at = Varints.write(chunk, at, keyLength);
                System.arraycopy(keys, entries.keyFrom(i), chunk, at, keyLength);
                at += keyLength;
                at = Varints.write(chunk, at, entries.fileRef(i) + 1L); // 0: tombstone
                at = Varints.write(chunk, at, entries.position(i));
                at = Varints.write(chunk, at, sequenceLength);
                System.arraycopy(sequences, entries.sequenceFrom(i), chunk, at, sequenceLength);
                at += sequenceLength;
            }
            zstd.write(chunk, 0, at);
            head.reset();
            writeInt(head, END);
            head.writeTo(zstd);
        } catch (IOException e) {
            throw new UncheckedIOException("could not write key index file " + location, e);
        }
        return raw.count;
    }

    /** The data file table entries point into: a count, then each location's length and UTF-8 bytes. */
    static void writeFileTable(ByteArrayOutputStream out, String[] files) {
        Varints.write(out, files.length);
        for (String f : files) {
            byte[] b = f.getBytes(StandardCharsets.UTF_8);
            Varints.write(out, b.length);
            out.writeBytes(b);
        }
    }

    /**
     * zstd level 1, as {@link PartFile}'s blocks: a merge writes its delta on its commit's path, on
     * one thread. It was gzip at deflate's fastest level, which took about 1 % of a steady merge's
     * CPU at 10M rows (deltas are short-lived: folds absorb them into the parts).
     */
    private static final int LEVEL = 1;

    /** No data file table is longer (a damaged count is refused, not allocated). */
    private static final int MAX_FILES = 1 << 24;

    /** The first two bytes of a gzip stream: the files written before zstd. */
    private static final int GZIP_MAGIC = 0x1F8B;

    /** Counts the bytes that pass, for the size of a file just written. */
    private static final class CountingOutputStream extends FilterOutputStream {
        long count;

        CountingOutputStream(OutputStream out) {
            super(out);
        }

        @Override
        public void write(int b) throws IOException {
            out.write(b);
            count++;
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            out.write(b, off, len);
            count += len;
        }
    }

    /** Reads a file; a missing, truncated or damaged one throws {@link DamagedIndexException}. */
    static IndexEntries read(FileIO io, String location) {
        return read(io, location, bytes -> {});
    }

    /** As {@link #read(FileIO, String)}, telling {@code bytesRead} how many bytes it read from storage. */
    static IndexEntries read(FileIO io, String location, LongConsumer bytesRead) {
        long[] read = {0};
        try (InputStream raw = new BufferedInputStream(
                        new CountingInputStream(io.newInputFile(location).newStream(), read), 1 << 16);
                DataInputStream in = new DataInputStream(new BufferedInputStream(decompressing(raw), 1 << 16))) {
            if (in.readInt() != MAGIC) {
                throw new DamagedIndexException(location + " is not a key index file");
            }
            long count = Varints.read(in);
            long fileCount = Varints.read(in);
            if (fileCount < 0 || fileCount > MAX_FILES) {
                throw new DamagedIndexException(location + " claims a table of " + fileCount + " data files");
            }
            String[] files = new String[(int) fileCount];
            for (int f = 0; f < fileCount; f++) {
                files[f] = new String(readBytes(in), StandardCharsets.UTF_8);
            }
            if (count < 0 || count > Integer.MAX_VALUE) {
                throw new DamagedIndexException(location + " claims " + count + " entries");
            }
            // Sized for what is read, not for what a damaged count claims: the appender grows.
            IndexEntries.Appender entries = new IndexEntries.Appender(files, (int) Math.min(count, 1 << 16));
            for (long i = 0; i < count; i++) {
                byte[] key = readBytes(in);
                int ref = (int) Varints.read(in) - 1;
                long position = Varints.read(in);
                byte[] seq = readBytes(in);
                if (ref >= fileCount || seq.length == 0 || !entries.append(key, ref, position, seq)) {
                    throw new DamagedIndexException(location + " has a damaged entry (" + i + " of " + count + ")");
                }
            }
            if (in.readInt() != END || in.read() != -1) {
                throw new DamagedIndexException(location + " does not end where its entry count says");
            }
            return entries.build();
        } catch (EOFException | ZipException | ZstdIOException | StreamCorruptedException e) {
            throw new DamagedIndexException(location + " is truncated or damaged (" + e.getMessage() + ")");
        } catch (NotFoundException e) {
            throw new DamagedIndexException(location + " is missing");
        } catch (IOException e) {
            // Anything else (a network error) may pass: the run fails and the next one reads the index again.
            throw new UncheckedIOException("could not read key index file " + location, e);
        } finally {
            bytesRead.accept(read[0]);
        }
    }

    /** The file's bytes decompressed: zstd, or gzip for a file from before (by its first two bytes). */
    private static InputStream decompressing(InputStream raw) throws IOException {
        raw.mark(2);
        int first = raw.read();
        int second = raw.read();
        raw.reset();
        if (first < 0 || second < 0) {
            throw new EOFException("no bytes");
        }
        return ((first << 8) | second) == GZIP_MAGIC
                ? new GZIPInputStream(raw, 1 << 16)
                : new ZstdInputStreamNoFinalizer(raw);
    }

    /** Counts the bytes read from storage, for what a merge reads of the index. */
    private static final class CountingInputStream extends FilterInputStream {
        private final long[] count;

        CountingInputStream(InputStream in, long[] count) {
            super(in);
            this.count = count;
        }

        @Override
        public int read() throws IOException {
            int b = in.read();
            if (b >= 0) {
                count[0]++;
            }
            return b;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            int n = in.read(b, off, len);
            if (n > 0) {
                count[0] += n;
            }
            return n;
        }
    }

    private static byte[] readBytes(DataInputStream in) throws IOException {
        long n = Varints.read(in);
        if (n < 0 || n > Integer.MAX_VALUE) {
            throw new StreamCorruptedException("a length of " + n);
        }
        byte[] b = in.readNBytes((int) n); // reads what is there: a damaged length does not allocate it
        if (b.length != n) {
            throw new EOFException();
        }
        return b;
    }

    private static void writeInt(ByteArrayOutputStream out, int v) {
        out.write(v >>> 24);
        out.write(v >>> 16);
        out.write(v >>> 8);
        out.write(v);
    }
}
