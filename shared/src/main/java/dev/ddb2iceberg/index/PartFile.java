package dev.ddb2iceberg.index;

import com.github.luben.zstd.Zstd;
import com.github.luben.zstd.ZstdException;
import java.io.ByteArrayOutputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.zip.CRC32;

/**
 * One base part of the key index, laid out to be read a block at a time: a lookup fetches only
 * the blocks its keys fall in (a ranged GET of a few KB each), never the whole part.
 *
 * <p>Layout: blocks, then a footer, then a 12-byte tail. A block is about {@link #BLOCK_BYTES} of
 * sorted entries (each key stored as the length it shares with the previous key and the rest),
 * compressed on its own (zstd). The footer (compressed too) holds the entry count, the data file table the
 * entries point into, and per block its first key, compressed and raw length, entry count and
 * CRC-32. The tail is the footer's length, its CRC-32 and a marker. Every block and the footer are
 * checked against their CRC, and entry counts and key order are checked as they are decoded, so a
 * truncated or damaged part fails to read ({@link DamagedIndexException}), never reads as fewer or
 * other entries.
 */
final class PartFile {
    /**
     * Raw bytes of entries per block. A lookup reads one block per key, so smaller blocks read
     * less (5,000 keys read ~4 KB each at 8 KB raw) but make the footer, which a merger keeps in
     * memory, bigger (about 25 bytes a block).
     */
    static final int BLOCK_BYTES = 8 * 1024;

    static final int TAIL_BYTES = 12;
    /**
     * zstd level 1: about four times as fast as deflate's fastest level here, at the same size
     * (a fold re-encodes 1/64 of the index each merge, so this is on the merge's path).
     */
    private static final int LEVEL = 1;
    /** No block or footer decompresses to more than this (a damaged length is refused, not allocated). */
    private static final long MAX_RAW_BYTES = 1L << 30;

    private static final int FOOTER_MAGIC = 0xDD82_0002;
    private static final int TAIL_MAGIC = 0xDD82_FFFF;

    private PartFile() {}

    /** Encodes sorted entries (no tombstones: a base part has nothing under it) as a part file's bytes. */
    static byte[] encode(IndexEntries entries) {
        ByteArrayOutputStream file = new ByteArrayOutputStream(Math.max(64, entries.size() * 12));
        ByteArrayOutputStream raw = new ByteArrayOutputStream(BLOCK_BYTES + 256);
        ByteArrayOutputStream blockIndex = new ByteArrayOutputStream();
        byte[] previous = new byte[0];
        int inBlock = 0;
        int blocks = 0;
        byte[] firstKey = null;
        for (int i = 0; i < entries.size(); i++) {
            byte[] key = entries.key(i);
            if (inBlock == 0) {
                firstKey = key;
                previous = new byte[0];
            }
            int shared = Arrays.mismatch(previous, key);
            shared = shared < 0 ? key.length : Math.min(shared, Math.min(previous.length, key.length));
            Varints.write(raw, shared);
            Varints.write(raw, key.length - shared);
            raw.write(key, shared, key.length - shared);
            Varints.write(raw, entries.fileRef(i) + 1L); // 0 would be a tombstone
            Varints.write(raw, entries.position(i));
            byte[] seq = entries.sequence(i);
            Varints.write(raw, seq.length);
            raw.writeBytes(seq);
            previous = key;
            inBlock++;
            if (raw.size() >= BLOCK_BYTES || i == entries.size() - 1) {
                byte[] compressed = Zstd.compress(raw.toByteArray(), LEVEL);
                file.writeBytes(compressed);
                Varints.write(blockIndex, firstKey.length);
                blockIndex.writeBytes(firstKey);
                Varints.write(blockIndex, compressed.length);
                Varints.write(blockIndex, raw.size());
                Varints.write(blockIndex, inBlock);
                writeInt(blockIndex, crc(compressed, 0, compressed.length));
                raw.reset();
                inBlock = 0;
                blocks++;
            }
        }
        ByteArrayOutputStream footer = new ByteArrayOutputStream();
        writeInt(footer, FOOTER_MAGIC);
        Varints.write(footer, entries.size());
        IndexFile.writeFileTable(footer, entries.files());
        Varints.write(footer, blocks);
        footer.writeBytes(blockIndex.toByteArray());
        byte[] compressedFooter = Zstd.compress(footer.toByteArray(), LEVEL);
        file.writeBytes(compressedFooter);
        writeInt(file, compressedFooter.length);
        writeInt(file, crc(compressedFooter, 0, compressedFooter.length));
        writeInt(file, TAIL_MAGIC);
        return file.toByteArray();
    }

    /**
     * What a part's footer says: its data file table and where each block is. A merger keeps the
     * footers of the parts it reads in memory (about 25 bytes a block and the file table).
     */
    static final class Footer {
        final String location;
        final long length;
        final long entries;
        final String[] files;
        private final byte[] firstKeys;
        private final int[] firstKeyEnds;
        private final long[] offsets;
        private final int[] lengths;
        private final int[] rawLengths;
        private final int[] counts;
        private final int[] crcs;

        private Footer(
                String location,
                long length,
                long entries,
                String[] files,
                byte[] firstKeys,
                int[] firstKeyEnds,
                long[] offsets,
                int[] lengths,
                int[] rawLengths,
                int[] counts,
                int[] crcs) {
            this.location = location;
            this.length = length;
            this.entries = entries;
            this.files = files;
            this.firstKeys = firstKeys;
            this.firstKeyEnds = firstKeyEnds;
            this.offsets = offsets;
            this.lengths = lengths;
            this.rawLengths = rawLengths;
            this.counts = counts;
            this.crcs = crcs;
        }

        int blocks() {
            return offsets.length;
        }

        long offset(int block) {
            return offsets[block];
        }

        int length(int block) {
            return lengths[block];
        }

        /** Where the footer starts: the blocks end there. */
        long blocksEnd() {
            return blocks() == 0 ? 0 : offsets[blocks() - 1] + lengths[blocks() - 1];
        }

        /** The block a key would be in (the last whose first key is not above it), or -1: before every block. */
        int blockOf(byte[] key) {
            int lo = 0;
            int hi = blocks() - 1;
            int found = -1;
            while (lo <= hi) {
                int mid = (lo + hi) >>> 1;
                int from = mid == 0 ? 0 : firstKeyEnds[mid - 1];
                if (Arrays.compareUnsigned(firstKeys, from, firstKeyEnds[mid], key, 0, key.length) <= 0) {
                    found = mid;
                    lo = mid + 1;
                } else {
                    hi = mid - 1;
                }
            }
            return found;
        }

        long memoryBytes() {
            long fileBytes = 0;
            for (String f : files) {
                fileBytes += 40 + 2L * f.length();
            }
            return firstKeys.length + 28L * blocks() + fileBytes + 200;
        }
    }

    /**
     * Reads the footer from the end of a part: {@code tail} holds the file's last bytes (at least
     * the tail, and the whole footer when it fits). Returns null when the footer is longer than
     * {@code tail} holds: {@link #footerLength} says how much to read.
     */
    static Footer footer(String location, long length, byte[] tail) {
        int footerLength = footerLength(location, length, tail);
        if (footerLength + TAIL_BYTES > tail.length) {
            return null;
        }
        int at = tail.length - TAIL_BYTES - footerLength;
        int crc = readInt(tail, tail.length - 8);
        if (crc(tail, at, footerLength) != crc) {
            throw new DamagedIndexException(location + " has a damaged footer (CRC mismatch)");
        }
        byte[] raw = decompress(location, "footer", tail, at, footerLength, -1);
        Reader in = new Reader(location, raw, 0);
        if (in.int32() != FOOTER_MAGIC) {
            throw new DamagedIndexException(location + " is not a key index part");
        }
        long entries = in.varint();
        int fileCount = in.count(raw.length);
        String[] files = new String[fileCount];
        for (int f = 0; f < fileCount; f++) {
            files[f] = new String(in.bytes(), StandardCharsets.UTF_8);
        }
        int blocks = in.count(raw.length);
        ByteArrayOutputStream keys = new ByteArrayOutputStream();
        int[] keyEnds = new int[blocks];
        long[] offsets = new long[blocks];
        int[] lengths = new int[blocks];
        int[] rawLengths = new int[blocks];
        int[] counts = new int[blocks];
        int[] crcs = new int[blocks];
        long offset = 0;
        long counted = 0;
        for (int b = 0; b < blocks; b++) {
            keys.writeBytes(in.bytes());
            keyEnds[b] = keys.size();
            offsets[b] = offset;
            lengths[b] = (int) in.varint();
            rawLengths[b] = (int) in.varint();
            counts[b] = (int) in.varint();
            crcs[b] = in.int32();
            offset += lengths[b];
            counted += counts[b];
        }
        if (in.position() != raw.length
                || counted != entries
                || offset + footerLength + TAIL_BYTES != length
                || Arrays.stream(lengths).anyMatch(l -> l <= 0)) {
            throw new DamagedIndexException(location + " has a footer that does not match its blocks");
        }
        return new Footer(
                location,
                length,
                entries,
                files,
                keys.toByteArray(),
                keyEnds,
                offsets,
                lengths,
                rawLengths,
                counts,
                crcs);
    }

    /** Bytes the footer and tail take at the end of an encoded part. */
    static int footerBytes(byte[] file) {
        return readInt(file, file.length - TAIL_BYTES) + TAIL_BYTES;
    }

    /** The footer's length, from a part's last bytes. */
    static int footerLength(String location, long length, byte[] tail) {
        if (tail.length < TAIL_BYTES || length < TAIL_BYTES) {
            throw new DamagedIndexException(location + " is too short to be a key index part");
        }
        if (readInt(tail, tail.length - 4) != TAIL_MAGIC) {
            throw new DamagedIndexException(location + " does not end as a key index part does (truncated?)");
        }
        int footerLength = readInt(tail, tail.length - TAIL_BYTES);
        if (footerLength <= 0 || footerLength > length - TAIL_BYTES) {
            throw new DamagedIndexException(location + " claims a footer of " + footerLength + " bytes");
        }
        return footerLength;
    }

    /**
     * The entries of {@code keys} (sorted, unsigned) found in one block's bytes; a damaged block
     * throws {@link DamagedIndexException}.
     */
    static List<IndexEntries.Entry> find(Footer footer, int block, byte[] data, int at, List<byte[]> keys) {
        BlockEntries entries = new BlockEntries(footer, block(footer, block, data, at));
        List<IndexEntries.Entry> found = new ArrayList<>();
        int k = 0;
        for (int i = 0; i < footer.counts[block] && k < keys.size(); i++) {
            entries.next();
            while (k < keys.size() && entries.compareKeyTo(keys.get(k)) > 0) {
                k++; // not in this block
            }
            if (k < keys.size() && entries.compareKeyTo(keys.get(k)) == 0) {
                found.add(new IndexEntries.Entry(
                        entries.key(), footer.files[entries.ref], entries.position, new BigInteger(entries.sequence)));
                k++;
            }
        }
        return found;
    }

    /** Every entry of a whole part's bytes (a fold reads the part it rewrites), checked as it goes. */
    static IndexEntries readAll(Footer footer, byte[] file) {
        IndexEntries.Appender out =
                new IndexEntries.Appender(footer.files, (int) Math.min(Integer.MAX_VALUE, footer.entries));
        for (int b = 0; b < footer.blocks(); b++) {
            Reader in = block(footer, b, file, (int) footer.offsets[b]);
            BlockEntries entries = new BlockEntries(footer, in);
            for (int i = 0; i < footer.counts[b]; i++) {
                entries.next();
                if (!out.append(entries.key(), entries.ref, entries.position, entries.sequence)) {
                    throw in.damaged("keys out of order (entry " + i + " of block " + b + ")");
                }
            }
            if (in.position() != footer.rawLengths[b]) {
                throw in.damaged("block " + b + " does not end where its entry count says");
            }
        }
        return out.build();
    }

    /** A block's entries decoded one at a time, each key rebuilt from the previous one in a reused buffer. */
    private static final class BlockEntries {
        private final Footer footer;
        private final Reader in;
        private byte[] keyBuffer = new byte[64];
        private int keyLength;
        int ref;
        long position;
        byte[] sequence;

        BlockEntries(Footer footer, Reader in) {
            this.footer = footer;
            this.in = in;
        }

        void next() {
            int shared = (int) in.varint();
            int rest = (int) in.varint();
            if (shared > keyLength) {
                throw in.damaged("a key sharing more than the previous key has");
            }
            if (shared + rest > keyBuffer.length) {
                keyBuffer = Arrays.copyOf(keyBuffer, Math.max(shared + rest, keyBuffer.length * 2));
            }
            in.copyTo(keyBuffer, shared, rest);
            keyLength = shared + rest;
            ref = (int) in.varint() - 1;
            position = in.varint();
            sequence = in.bytes();
            if (ref < 0 || ref >= footer.files.length || sequence.length == 0) {
                throw in.damaged("an entry pointing to no data file");
            }
        }

        byte[] key() {
            return Arrays.copyOf(keyBuffer, keyLength);
        }

        /** Compares this entry's key with {@code other}, unsigned. */
        int compareKeyTo(byte[] other) {
            return Arrays.compareUnsigned(keyBuffer, 0, keyLength, other, 0, other.length);
        }
    }

    /** A block's raw entries, after checking its CRC; {@code at}: where the block starts in {@code data}. */
    private static Reader block(Footer footer, int block, byte[] data, int at) {
        int length = footer.lengths[block];
        if (at < 0 || at + length > data.length || crc(data, at, length) != footer.crcs[block]) {
            throw new DamagedIndexException(footer.location + " has a damaged block " + block + " (CRC mismatch)");
        }
        byte[] raw = decompress(footer.location, "block " + block, data, at, length, footer.rawLengths[block]);
        return new Reader(footer.location, raw, 0);
    }

    /**
     * Decompresses {@code length} bytes at {@code at}; {@code rawLength} is what they must give
     * (-1: what the frame says, for the footer).
     */
    private static byte[] decompress(String location, String what, byte[] data, int at, int length, int rawLength) {
        try {
            byte[] frame = Arrays.copyOfRange(data, at, at + length);
            long size = rawLength >= 0 ? rawLength : Zstd.decompressedSize(frame);
            if (size <= 0 || size > MAX_RAW_BYTES) {
                throw new DamagedIndexException(location + " has a " + what + " of " + size + " bytes uncompressed");
            }
            byte[] raw = new byte[(int) size];
            long n = Zstd.decompress(raw, frame);
            if (Zstd.isError(n) || n != size) {
                throw new DamagedIndexException(
                        location + " has a damaged " + what + " (" + n + " of " + size + " bytes)");
            }
            return raw;
        } catch (ZstdException e) {
            throw new DamagedIndexException(location + " has a damaged " + what + " (" + e.getMessage() + ")");
        }
    }

    private static int crc(byte[] data, int at, int length) {
        CRC32 crc = new CRC32();
        crc.update(data, at, length);
        return (int) crc.getValue();
    }

    private static void writeInt(ByteArrayOutputStream out, int v) {
        out.write(v >>> 24);
        out.write(v >>> 16);
        out.write(v >>> 8);
        out.write(v);
    }

    private static int readInt(byte[] b, int at) {
        return ((b[at] & 0xFF) << 24) | ((b[at + 1] & 0xFF) << 16) | ((b[at + 2] & 0xFF) << 8) | (b[at + 3] & 0xFF);
    }

    /** Reads varints and byte strings from a decoded block or footer; running past its end is damage. */
    private static final class Reader {
        private final String location;
        private final byte[] data;
        private int at;

        Reader(String location, byte[] data, int at) {
            this.location = location;
            this.data = data;
            this.at = at;
        }

        int position() {
            return at;
        }

        long varint() {
            long value = 0;
            for (int shift = 0; shift < 64; shift += 7) {
                if (at >= data.length) {
                    throw damaged("an entry cut short");
                }
                byte b = data[at++];
                value |= (long) (b & 0x7F) << shift;
                if ((b & 0x80) == 0) {
                    return value;
                }
            }
            throw damaged("a varint longer than 64 bits");
        }

        /** A count of things each at least a byte long, so never more than the bytes left. */
        int count(int limit) {
            long n = varint();
            if (n < 0 || n > limit) {
                throw damaged("a count of " + n);
            }
            return (int) n;
        }

        int int32() {
            if (at + 4 > data.length) {
                throw damaged("an entry cut short");
            }
            int v = readInt(data, at);
            at += 4;
            return v;
        }

        byte[] bytes() {
            int n = count(data.length - at);
            byte[] b = Arrays.copyOfRange(data, at, at + n);
            at += n;
            return b;
        }

        void copyTo(byte[] target, int offset, int n) {
            if (n < 0 || at + n > data.length) {
                throw damaged("an entry cut short");
            }
            System.arraycopy(data, at, target, offset, n);
            at += n;
        }

        DamagedIndexException damaged(String what) {
            return new DamagedIndexException(location + " is damaged: " + what);
        }
    }
}
