package dev.ddb2iceberg.index;

import com.github.luben.zstd.Zstd;
import com.github.luben.zstd.ZstdDecompressCtx;
import com.github.luben.zstd.ZstdException;
import dev.ddb2iceberg.util.Futures;
import dev.ddb2iceberg.util.ZstdCompression;
import java.io.ByteArrayOutputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.zip.CRC32;

/**
 * One base part of the key index, or a part's overlay (the same layout, its tombstones kept; see
 * {@code KeyIndex}), laid out to be read a block at a time: a lookup fetches only the blocks its
 * keys fall in (a ranged GET of a few KB each), never the whole part.
 *
 * <p>Layout: blocks, then a footer, then a 12-byte tail. A block is about {@link #BLOCK_BYTES} of
 * sorted entries (each key stored as the length it shares with the previous key and the rest),
 * then its restart table, compressed on its own (zstd). Every {@link #RESTART_INTERVAL}th entry
 * of a block, from its first, is a restart: its key is stored whole, and the restart table
 * (a 4-byte offset per restart, at the block's end) says where each starts, so a lookup finds
 * the restart at or below its key by binary search and decodes at most that many entries, not
 * half the block. Parts written before restarts (footer magic {@code 0xDD820002}) have none, and
 * are scanned from each block's start; an overlay's footer magic is {@code 0xDD820004}, a base
 * part's {@code 0xDD820003}. The footer (compressed too) holds the entry count, the data file table the
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

    /**
     * Decompressors (a zstd context and a block buffer), each used by one thread at a time and then
     * handed back. A new context per block (what Zstd.decompressByteArray makes) costs a native
     * allocation and a cleared workspace, a quarter of a key's lookup; a new buffer per block was a
     * tenth of a merge's allocation. There are at most as many as threads that ever decompressed at
     * once.
     */
    private static final Queue<Decompressor> DECOMPRESSORS = new ConcurrentLinkedQueue<>();
    /** The largest block buffer a pooled decompressor keeps (blocks are about {@link #BLOCK_BYTES}). */
    private static final int POOLED_BUFFER_MAX = 8 * BLOCK_BYTES;

    private static final class Decompressor {
        final ZstdDecompressCtx context = new ZstdDecompressCtx();
        byte[] buffer = new byte[BLOCK_BYTES + 256];
        private boolean closed;

        /**
         * Where a block of {@code size} raw bytes is decoded: the pooled buffer (grown when needed),
         * or, for a block longer than any this writer makes, an array of its own, not kept.
         */
        byte[] bufferFor(int size) {
            if (buffer.length < size && size <= POOLED_BUFFER_MAX) {
                buffer = new byte[size];
            }
            return size <= buffer.length ? buffer : new byte[size];
        }

        static Decompressor take() {
            Decompressor d = DECOMPRESSORS.poll();
            return d != null ? d : new Decompressor();
        }

        /** Hands it back for the next thread, unless its context was closed. */
        void give() {
            if (!closed) {
                DECOMPRESSORS.offer(this);
            }
        }

        /** Closes the context (after zstd refused a frame, it is not trusted again). */
        void close() {
            closed = true;
            context.close();
        }
    }

    /** The footer magic of parts whose blocks end with a restart table. */
    private static final int FOOTER_MAGIC = 0xDD82_0003;
    /** The footer magic of parts written before restart tables (still read: their blocks are scanned). */
    private static final int FOOTER_MAGIC_NO_RESTARTS = 0xDD82_0002;
    /**
     * The footer magic of a part's overlay (see {@code KeyIndex}): blocks with restart tables, as
     * {@link #FOOTER_MAGIC}, whose entries may be tombstones, since an overlay lies over a base part
     * whose entries it replaces or removes. A base part never holds one.
     */
    private static final int FOOTER_MAGIC_OVERLAY = 0xDD82_0004;

    /**
     * Entries per restart: a lookup decodes at most this many entries after its binary search over
     * the restarts (about 20 in a block of 8 KB, each taking 4 bytes and its key's shared prefix).
     */
    static final int RESTART_INTERVAL = 16;

    private static final int TAIL_MAGIC = 0xDD82_FFFF;

    private PartFile() {}

    /** Encodes sorted entries (no tombstones: a base part has nothing under it) as a part file's bytes. */
    static byte[] encode(IndexEntries entries) {
        Writer out = new Writer(entries.files(), entries.size());
        for (int i = 0; i < entries.size(); i++) {
            out.add(
                    entries.keyData(),
                    entries.keyFrom(i),
                    entries.keyLength(i),
                    entries.fileRef(i),
                    entries.position(i),
                    entries.sequenceData(),
                    entries.sequenceFrom(i),
                    entries.sequenceLength(i));
        }
        return out.finish();
    }

    /**
     * A part's entries with {@code changes} (sorted, tombstones among them) laid over them, in one
     * pass, as a new part: the part's entries stream from its blocks into the new part's, and nothing
     * of the part is held decoded. A change replaces its key's entry, a tombstone removes it (a base
     * part has nothing under it to mark). {@code footer} null: the part is empty. Data files enter
     * the new part's table only when an entry that points to one is written, so files no entry
     * points to any more (rewritten, every row replaced) leave it.
     *
     * <p>The fold is cut into {@code ranges} ranges of the part's blocks (and the changes between
     * their first keys) folded on as many threads; the new part is their blocks end to end, over one
     * data file table. A fold's cost is CPU (decoding and encoding every entry), so a merger with
     * more cores folds faster.
     */
    static Writer overlay(Footer footer, byte[] part, IndexEntries changes, int ranges) {
        return overlay(footer, part, changes, ranges, Long.MIN_VALUE);
    }

    /**
     * {@link #overlay(Footer, byte[], IndexEntries, int)}, dropping every entry, old or new, whose
     * position is below {@code keepFrom}: the removals index keeps a removal's time there, and its
     * folds forget removals past their time (see {@code RemovalsIndex}).
     */
    static Writer overlay(Footer footer, byte[] part, IndexEntries changes, int ranges, long keepFrom) {
        return overlay(footer, part, changes, ranges, keepFrom, false);
    }

    /**
     * {@link #overlay(Footer, byte[], IndexEntries, int, long)}; {@code keepBlocks}: the new part's
     * writer keeps each block decompressed ({@link Writer#blocks}), for the cache.
     */
    static Writer overlay(
            Footer footer, byte[] part, IndexEntries changes, int ranges, long keepFrom, boolean keepBlocks) {
        return overlay(footer, part, changes, ranges, keepFrom, keepBlocks, false);
    }

    /**
     * {@link #overlay(Footer, byte[], IndexEntries, int, long, boolean)}; {@code tombstones}: the new
     * file is a part's overlay, which keeps the tombstones among the changes (and those it had), for
     * they remove entries of the base part under it. Then nothing expires ({@code keepFrom} must be
     * {@link Long#MIN_VALUE}: an overlay's expired entry would uncover an older one of its base).
     */
    static Writer overlay(
            Footer footer,
            byte[] part,
            IndexEntries changes,
            int ranges,
            long keepFrom,
            boolean keepBlocks,
            boolean tombstones) {
        if (tombstones && keepFrom != Long.MIN_VALUE) {
            throw new IllegalArgumentException("an overlay keeps every entry: it expires none");
        }
        int blocks = footer == null ? 0 : footer.blocks();
        int n = Math.max(1, Math.min(ranges, blocks / MIN_BLOCKS_PER_RANGE));
        FileTable table = new FileTable();
        Writer[] out = new Writer[n];
        int[] changeFrom = new int[n + 1];
        changeFrom[n] = changes.size();
        for (int r = 1; r < n; r++) {
            changeFrom[r] = firstAtOrAbove(changes, footer.firstKey(r * blocks / n));
        }
        List<Future<?>> folds = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            int range = r;
            long expected = footer == null ? changes.size() : footer.entries / n;
            out[r] = new Writer(table, (int) Math.min(1 << 24, expected));
            if (tombstones) {
                out[r].keepTombstones();
            }
            if (keepBlocks) {
                out[r].keepBlocks();
            }
            Runnable fold = () -> overlayRange(
                    footer,
                    part,
                    range * blocks / n,
                    (range + 1) * blocks / n,
                    changes,
                    changeFrom[range],
                    changeFrom[range + 1],
                    out[range],
                    keepFrom);
            if (r < n - 1) {
                folds.add(FOLD_RANGES.submit(fold));
            } else {
                fold.run(); // the last range in this thread
            }
        }
        folds.forEach(f -> Futures.join(f, "folding a key index part"));
        return n == 1 ? out[0] : Writer.join(out);
    }

    /** Fewer blocks than this a thread are not worth a thread's start. */
    private static final int MIN_BLOCKS_PER_RANGE = 256;

    private static final ExecutorService FOLD_RANGES =
            Executors.newFixedThreadPool(Runtime.getRuntime().availableProcessors(), r -> {
                Thread t = new Thread(r, "key-index-fold");
                t.setDaemon(true);
                return t;
            });

    /** The first change whose key is not below {@code key} (changes are sorted). */
    private static int firstAtOrAbove(IndexEntries changes, byte[] key) {
        int lo = 0;
        int hi = changes.size();
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            int from = changes.keyFrom(mid);
            if (Arrays.compareUnsigned(changes.keyData(), from, from + changes.keyLength(mid), key, 0, key.length)
                    < 0) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    /** Blocks [fromBlock, toBlock) of the part with changes [fromChange, toChange) laid over them, into {@code out}. */
    private static void overlayRange(
            Footer footer,
            byte[] part,
            int fromBlock,
            int toBlock,
            IndexEntries changes,
            int fromChange,
            int toChange,
            Writer out,
            long keepFrom) {
        FileRefs changeRefs = new FileRefs(changes.files(), out::fileRef);
        int j = fromChange;
        if (footer != null) {
            Cursor old = new Cursor(footer, part, fromBlock, toBlock);
            FileRefs oldRefs = new FileRefs(footer.files, out::fileRef);
            while (old.next()) {
                for (; j < toChange && old.compareKeyTo(changes, j) > 0; j++) {
                    copyChange(changes, j, changeRefs, out, keepFrom);
                }
                if (j < toChange && old.compareKeyTo(changes, j) == 0) {
                    copyChange(changes, j++, changeRefs, out, keepFrom); // it replaces (or removes) the part's entry
                } else if (old.position() >= keepFrom) {
                    try {
                        old.copyTo(out, oldRefs.map(old.fileIndex())); // checks the key follows the last
                    } catch (IllegalArgumentException outOfOrder) {
                        throw new DamagedIndexException(footer.location + " is damaged: keys out of order");
                    }
                }
            }
        }
        for (; j < toChange; j++) {
            copyChange(changes, j, changeRefs, out, keepFrom);
        }
    }

    private static void copyChange(IndexEntries changes, int i, FileRefs refs, Writer out, long keepFrom) {
        if ((changes.fileRef(i) >= 0 || out.keepsTombstones()) && changes.position(i) >= keepFrom) {
            out.add(
                    changes.keyData(),
                    changes.keyFrom(i),
                    changes.keyLength(i),
                    refs.map(changes.fileRef(i)),
                    changes.position(i),
                    changes.sequenceData(),
                    changes.sequenceFrom(i),
                    changes.sequenceLength(i));
        }
    }

    /**
     * Encodes entries as they come, in key order, a block at a time: a merge of sorted runs streams
     * into it without holding its entries decoded.
     */
    static final class Writer {
        private final ByteArrayOutputStream file;
        private final int blockBytes;
        // The block being filled, in a plain array: ByteArrayOutputStream's synchronized write per
        // varint byte was a tenth of a fold's encoding time.
        private byte[] raw = new byte[BLOCK_BYTES + 256];
        private int rawLength;
        private byte[] compressed = new byte[ZstdCompression.bound(raw.length)];
        private final ByteArrayOutputStream blockIndex = new ByteArrayOutputStream();
        private final FileTable table;
        private byte[] previous = new byte[64]; // the last key written (a copy: callers reuse their buffers)
        private int previousLength = -1; // -1: nothing written yet
        private byte[] firstKey;
        private byte[] firstKeyWritten; // this writer's first key (a joined range must follow the one before)
        private int inBlock;
        private int[] restarts = new int[64]; // where each restart of the block being filled starts
        private int blocks;
        private long entries;
        /** Each block as written, decompressed (restarts included), when {@link #keepBlocks} asked for them. */
        private List<byte[]> rawBlocks;
        /** Whether this is an overlay's writer, which writes tombstones ({@link #keepTombstones}). */
        private boolean tombstones;

        /** {@code files}: the data file table the references given to {@link #add} point into. */
        Writer(String[] files, int expectedEntries) {
            this(new FileTable(), expectedEntries);
            for (String f : files) {
                table.ref(f);
            }
        }

        /** A writer of one key range of a part, whose data file table other ranges share. */
        Writer(FileTable table, int expectedEntries) {
            this(table, expectedEntries, BLOCK_BYTES);
        }

        /** As above, with blocks of about {@code blockBytes} raw bytes (a benchmark compares sizes). */
        Writer(FileTable table, int expectedEntries, int blockBytes) {
            this.file = new ByteArrayOutputStream(Math.max(64, expectedEntries * 12));
            this.table = table;
            this.blockBytes = blockBytes;
        }

        /** The reference of a data file in this part's table, added if new. */
        int fileRef(String location) {
            return table.ref(location);
        }

        /** Whether a key ({@code keyLength} bytes from {@code keyFrom}) sorts above the last one added. */
        boolean follows(byte[] key, int keyFrom, int keyLength) {
            return previousLength < 0
                    || Arrays.compareUnsigned(previous, 0, previousLength, key, keyFrom, keyFrom + keyLength) < 0;
        }

        /**
         * Adds an entry, its key and sequence given as ranges of arrays (no copies); its key must
         * {@link #follows follow} the last one added.
         */
        void add(
                byte[] key,
                int keyFrom,
                int keyLength,
                int fileRef,
                long position,
                byte[] sequence,
                int sequenceFrom,
                int sequenceLength) {
            if (!follows(key, keyFrom, keyLength)) {
                throw new IllegalArgumentException("key index entries out of order");
            }
            if (fileRef < 0 && !tombstones) {
                throw new IllegalArgumentException("a tombstone in a base part, which has nothing under it to remove");
            }
            int shared = 0;
            if (inBlock == 0) {
                firstKey = Arrays.copyOfRange(key, keyFrom, keyFrom + keyLength);
                if (entries == 0) {
                    firstKeyWritten = firstKey;
                }
            }
            if (inBlock % RESTART_INTERVAL == 0) { // a restart: its key whole
                int r = inBlock / RESTART_INTERVAL;
                if (r == restarts.length) {
                    restarts = Arrays.copyOf(restarts, r * 2);
                }
                restarts[r] = rawLength;
            } else {
                shared = Arrays.mismatch(previous, 0, previousLength, key, keyFrom, keyFrom + keyLength);
                shared = shared < 0 ? keyLength : Math.min(shared, Math.min(previousLength, keyLength));
            }
            varint(shared);
            varint(keyLength - shared);
            put(key, keyFrom + shared, keyLength - shared);
            varint(fileRef + 1L); // 0: a tombstone (an overlay's only)
            varint(position);
            varint(sequenceLength);
            put(sequence, sequenceFrom, sequenceLength);
            if (previous.length < keyLength) {
                previous = Arrays.copyOf(previous, Math.max(keyLength, previous.length * 2));
            }
            System.arraycopy(key, keyFrom, previous, 0, keyLength);
            previousLength = keyLength;
            inBlock++;
            entries++;
            if (rawLength >= blockBytes) {
                endBlock();
            }
        }

        private void varint(long value) {
            ensure(10);
            long v = value;
            while ((v & ~0x7FL) != 0) {
                raw[rawLength++] = (byte) ((v & 0x7F) | 0x80);
                v >>>= 7;
            }
            raw[rawLength++] = (byte) v;
        }

        private void put(byte[] bytes, int from, int length) {
            ensure(length);
            System.arraycopy(bytes, from, raw, rawLength, length);
            rawLength += length;
        }

        private void ensure(int more) {
            if (rawLength + more > raw.length) {
                raw = Arrays.copyOf(raw, Math.max(rawLength + more, raw.length * 2));
            }
        }

        long entries() {
            return entries;
        }

        /**
         * Makes this the writer of an overlay: tombstones (file reference -1) are written, and its
         * footer says so. Call before the first entry.
         */
        void keepTombstones() {
            tombstones = true;
        }

        boolean keepsTombstones() {
            return tombstones;
        }

        /** Keeps a copy of each block as written, decompressed: call before the first entry. */
        void keepBlocks() {
            rawBlocks = new ArrayList<>();
        }

        /**
         * The blocks written, decompressed, in order, as a lookup decompresses them (so a fold hands
         * the cache the new part's blocks, and the next merge's lookups neither read nor decompress
         * them); null unless {@link #keepBlocks} was called.
         */
        List<byte[]> blocks() {
            return rawBlocks;
        }

        private void endBlock() {
            int restartCount = (inBlock + RESTART_INTERVAL - 1) / RESTART_INTERVAL;
            ensure(4 * restartCount);
            for (int r = 0; r < restartCount; r++) {
                writeInt(raw, rawLength, restarts[r]);
                rawLength += 4;
            }
            if (rawBlocks != null) {
                rawBlocks.add(Arrays.copyOf(raw, rawLength));
            }
            if (compressed.length < ZstdCompression.bound(rawLength)) {
                compressed = new byte[ZstdCompression.bound(rawLength)];
            }
            int length;
            try {
                length = ZstdCompression.compress(compressed, raw, 0, rawLength, LEVEL);
            } catch (ZstdException e) {
                throw new IllegalStateException("zstd could not compress a key index block: " + e.getMessage(), e);
            }
            file.write(compressed, 0, length);
            Varints.write(blockIndex, firstKey.length);
            blockIndex.writeBytes(firstKey);
            Varints.write(blockIndex, length);
            Varints.write(blockIndex, rawLength);
            Varints.write(blockIndex, inBlock);
            writeInt(blockIndex, crc(compressed, 0, length));
            rawLength = 0;
            inBlock = 0;
            blocks++;
        }

        /**
         * The writers of a part's key ranges (in key order, over one file table) as one writer: their
         * blocks end to end. Each range's last block stays as short as it ended.
         */
        static Writer join(Writer[] ranges) {
            Writer all = new Writer(ranges[0].table, 0, ranges[0].blockBytes);
            all.tombstones = ranges[0].tombstones;
            if (ranges[0].rawBlocks != null) {
                all.keepBlocks();
            }
            for (Writer r : ranges) {
                if (r.table != all.table) {
                    throw new IllegalArgumentException("key ranges of one part share one data file table");
                }
                if (r.inBlock > 0) {
                    r.endBlock();
                }
                if (r.entries == 0) {
                    continue;
                }
                if (all.previousLength >= 0
                        && Arrays.compareUnsigned(
                                        all.previous,
                                        0,
                                        all.previousLength,
                                        r.firstKeyWritten,
                                        0,
                                        r.firstKeyWritten.length)
                                >= 0) {
                    throw new IllegalArgumentException("key ranges of a part out of order");
                }
                all.file.writeBytes(r.file.toByteArray());
                if (all.rawBlocks != null) {
                    all.rawBlocks.addAll(r.rawBlocks);
                }
                all.blockIndex.writeBytes(r.blockIndex.toByteArray());
                all.blocks += r.blocks;
                all.entries += r.entries;
                all.previous = r.previous;
                all.previousLength = r.previousLength;
            }
            return all;
        }

        /** The file's bytes: the last block, the footer and the tail. */
        byte[] finish() {
            if (inBlock > 0) {
                endBlock();
            }
            ByteArrayOutputStream footer = new ByteArrayOutputStream();
            writeInt(footer, tombstones ? FOOTER_MAGIC_OVERLAY : FOOTER_MAGIC);
            Varints.write(footer, entries);
            IndexFile.writeFileTable(footer, table.files());
            Varints.write(footer, blocks);
            footer.writeBytes(blockIndex.toByteArray());
            byte[] compressedFooter = ZstdCompression.compress(footer.toByteArray(), 0, footer.size(), LEVEL);
            file.writeBytes(compressedFooter);
            writeInt(file, compressedFooter.length);
            writeInt(file, crc(compressedFooter, 0, compressedFooter.length));
            writeInt(file, TAIL_MAGIC);
            return file.toByteArray();
        }
    }

    /** A part's data file table, which the writers of its key ranges share. */
    static final class FileTable {
        private final List<String> files = new ArrayList<>();
        private final Map<String, Integer> refs = new HashMap<>();

        synchronized int ref(String location) {
            return refs.computeIfAbsent(location, f -> {
                files.add(f);
                return files.size() - 1;
            });
        }

        synchronized String[] files() {
            return files.toArray(String[]::new);
        }
    }

    /**
     * A whole part's entries one at a time, in key order, decoded a block at a time (a merge of
     * sorted runs reads them); the key is valid until the next call to {@link #next}.
     */
    static final class Cursor {
        private final Footer footer;
        private final byte[] file;
        private int block;
        private int left;
        private Reader in;
        private BlockEntries current;

        private final int toBlock;

        Cursor(Footer footer, byte[] file) {
            this(footer, file, 0, footer.blocks());
        }

        /** Over blocks [fromBlock, toBlock) only. */
        Cursor(Footer footer, byte[] file, int fromBlock, int toBlock) {
            this.footer = footer;
            this.file = file;
            this.block = fromBlock - 1;
            this.toBlock = toBlock;
        }

        /** Moves to the next entry; false after the last. */
        boolean next() {
            while (left == 0) {
                if (in != null && in.position() != footer.entriesEnd(block)) {
                    throw in.damaged("block " + block + " does not end where its entry count says");
                }
                if (++block >= toBlock) {
                    return false;
                }
                in = PartFile.block(footer, block, file, (int) footer.offsets[block]);
                current = new BlockEntries(footer, in);
                left = footer.counts[block];
            }
            current.next();
            left--;
            return true;
        }

        /** Orders cursors by their current keys, unsigned. */
        int compareKeys(Cursor other) {
            return Arrays.compareUnsigned(
                    current.keyBuffer, 0, current.keyLength, other.current.keyBuffer, 0, other.current.keyLength);
        }

        /** Compares this entry's key with entry {@code i} of {@code entries}, unsigned. */
        int compareKeyTo(IndexEntries entries, int i) {
            int from = entries.keyFrom(i);
            return Arrays.compareUnsigned(
                    current.keyBuffer, 0, current.keyLength, entries.keyData(), from, from + entries.keyLength(i));
        }

        byte[] keyBuffer() {
            return current.keyBuffer;
        }

        int keyLength() {
            return current.keyLength;
        }

        /** This entry's data file; null: a tombstone (in an overlay). */
        String file() {
            return current.ref < 0 ? null : footer.files[current.ref];
        }

        long position() {
            return current.position;
        }

        /** This entry's data file as a reference into the footer's file table. */
        int fileIndex() {
            return current.ref;
        }

        /** Appends this entry, its file reference unchanged, to {@code out}; false when its key does not follow. */
        boolean appendTo(IndexEntries.Appender out) {
            return out.append(
                    current.keyBuffer,
                    current.keyLength,
                    current.ref,
                    current.position,
                    in.data,
                    current.sequenceFrom,
                    current.sequenceLength);
        }

        /** Copies this entry, its data file as {@code fileRef} of {@code out}'s table, into {@code out}. */
        void copyTo(Writer out, int fileRef) {
            out.add(
                    current.keyBuffer,
                    0,
                    current.keyLength,
                    fileRef,
                    current.position,
                    in.data,
                    current.sequenceFrom,
                    current.sequenceLength);
        }
    }

    /**
     * What a part's footer says: its data file table and where each block is. A merger keeps the
     * footers of the parts it reads in memory (about 25 bytes a block and the file table).
     */
    static final class Footer {
        final String location;
        final long length;
        final long entries;
        /** Whether each block ends with a restart table (parts written before them do not). */
        final boolean restarts;
        /** Whether entries may be tombstones: the file is a part's overlay. */
        final boolean tombstones;

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
                boolean restarts,
                boolean tombstones,
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
            this.restarts = restarts;
            this.tombstones = tombstones;
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

        /** How many restarts a block has: 0 in a part written before restarts. */
        int restarts(int block) {
            return restarts ? restartCount(counts[block]) : 0;
        }

        /** Where a block's entries end in its decompressed bytes: its restart table follows. */
        int entriesEnd(int block) {
            return rawLengths[block] - 4 * restarts(block);
        }

        long offset(int block) {
            return offsets[block];
        }

        int length(int block) {
            return lengths[block];
        }

        /** The first key of a block. */
        byte[] firstKey(int block) {
            return Arrays.copyOfRange(firstKeys, block == 0 ? 0 : firstKeyEnds[block - 1], firstKeyEnds[block]);
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
        int magic = in.int32();
        if (magic != FOOTER_MAGIC && magic != FOOTER_MAGIC_NO_RESTARTS && magic != FOOTER_MAGIC_OVERLAY) {
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
        boolean restarts = magic != FOOTER_MAGIC_NO_RESTARTS;
        for (int b = 0; b < blocks && restarts; b++) {
            if (rawLengths[b] < 4L * restartCount(counts[b])) {
                throw new DamagedIndexException(location + " has a footer that does not match its blocks");
            }
        }
        return new Footer(
                location,
                length,
                entries,
                restarts,
                magic == FOOTER_MAGIC_OVERLAY,
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
        checkBlock(footer, block, data, at);
        // The block is decoded into the decompressor's buffer: every entry found is copied out of it.
        Decompressor d = Decompressor.take();
        try {
            return find(footer, block, d, data, at, keys);
        } finally {
            d.give();
        }
    }

    private static List<IndexEntries.Entry> find(
            Footer footer, int block, Decompressor d, byte[] data, int at, List<byte[]> keys) {
        String what = "block " + block;
        int rawLength = checkedSize(footer.location, what, footer.rawLengths[block]);
        byte[] raw = d.bufferFor(rawLength);
        decompress(d, footer.location, what, data, at, footer.lengths[block], rawLength, raw);
        return scan(footer, block, raw, keys);
    }

    /**
     * The block's bytes decompressed, after checking its CRC ({@code at}: where the block starts in
     * {@code data}): what a cache that holds blocks decompressed keeps ({@link #findDecompressed}).
     */
    static byte[] decompressBlock(Footer footer, int block, byte[] data, int at) {
        return block(footer, block, data, at).data;
    }

    /** As {@link #find}, in a block {@link #decompressBlock} gave: no CRC check, no decompression. */
    static List<IndexEntries.Entry> findDecompressed(Footer footer, int block, byte[] raw, List<byte[]> keys) {
        if (raw.length != footer.rawLengths[block]) {
            throw new IllegalArgumentException(
                    raw.length + " bytes for block " + block + " of " + footer.rawLengths[block]);
        }
        return scan(footer, block, raw, keys);
    }

    /**
     * The entries of {@code keys} (sorted, unsigned) in a block decompressed into the start of
     * {@code raw} (which may be a longer, reused buffer). Each key starts at the restart at or below it, when that is past where
     * the scan has got to; a part written before restarts is scanned from the block's start.
     */
    private static List<IndexEntries.Entry> scan(Footer footer, int block, byte[] raw, List<byte[]> keys) {
        int end = footer.entriesEnd(block); // never negative: the footer's checks saw to that
        Reader in = new Reader(footer.location, raw, 0, end);
        BlockEntries entries = new BlockEntries(footer, in);
        Restarts restarts = new Restarts(footer, block, raw, end);
        int count = footer.counts[block];
        List<IndexEntries.Entry> found = new ArrayList<>();
        int decoded = 0; // entries decoded so far
        boolean current = false; // whether the last one decoded is still to be compared with the key sought
        // Most entries are passed over without a compare: "below" is how many leading bytes the
        // entry before shares with the key sought, known when that entry sorted below it (-1: not
        // known). An entry that shares more than that with the entry before is below the key too;
        // otherwise it is compared only from where it stops sharing with the entry before, since up
        // to there it equals the key.
        int below = -1;
        for (byte[] key : keys) {
            int restart = restarts.atOrBelow(key, Math.max(0, decoded - 1) / RESTART_INTERVAL);
            if (restart >= 0 && restart * RESTART_INTERVAL >= decoded) {
                // Every entry before the restart sorts below its key, so below this key: skip them.
                entries.restartAt(restarts.offset(restart));
                decoded = restart * RESTART_INTERVAL;
                current = false;
                below = -1;
            }
            int from = 0;
            while (true) {
                if (!current) {
                    if (decoded == count) {
                        return found; // past the block's last entry: neither this key nor any after is here
                    }
                    int shared = entries.next();
                    decoded++;
                    if (below >= 0 && shared > below) {
                        continue;
                    }
                    from = below >= 0 ? shared : 0;
                    below = -1;
                    current = true;
                }
                int same = entries.sharedWith(key, from);
                int c = entries.compareAt(key, same);
                if (c < 0) {
                    below = same; // the next entry may follow it past the key
                    current = false;
                    continue;
                }
                if (c == 0) {
                    found.add(new IndexEntries.Entry(
                            entries.key(),
                            entries.ref < 0 ? null : footer.files[entries.ref], // null: a tombstone
                            entries.position,
                            new BigInteger(entries.sequence())));
                    current = false;
                }
                // Found, or the entry is above the key: the key is not here, and the entry is
                // compared with the next key.
                break;
            }
        }
        return found;
    }

    /**
     * A block's restart table (none in a part written before restarts): where each restart starts
     * and its key, which is stored whole. Offsets and keys are checked as they are read.
     */
    private static final class Restarts {
        private final Footer footer;
        private final int block;
        private final byte[] raw;
        private final int end; // where the entries end and the table starts
        private final int count;
        private final Reader probe;

        Restarts(Footer footer, int block, byte[] raw, int end) {
            this.footer = footer;
            this.block = block;
            this.raw = raw;
            this.end = end;
            this.count = footer.restarts(block);
            this.probe = new Reader(footer.location, raw, 0, end);
        }

        int offset(int restart) {
            int at = readInt(raw, end + 4 * restart);
            if (at < 0 || at >= end) {
                throw new DamagedIndexException(
                        footer.location + " has a damaged block " + block + " (a restart outside its entries)");
            }
            return at;
        }

        /**
         * The last restart, from {@code first} on, whose key is at or below {@code key}; -1 when
         * there is none (or the block has no restarts).
         */
        int atOrBelow(byte[] key, int first) {
            int lo = first;
            int hi = count - 1;
            int found = -1;
            while (lo <= hi) {
                int mid = (lo + hi) >>> 1;
                probe.seek(offset(mid));
                if (probe.varint() != 0) {
                    throw probe.damaged("a restart whose key is not whole");
                }
                int length = probe.count(Integer.MAX_VALUE);
                int at = probe.skip(length);
                if (Arrays.compareUnsigned(raw, at, at + length, key, 0, key.length) <= 0) {
                    found = mid;
                    lo = mid + 1;
                } else {
                    hi = mid - 1;
                }
            }
            return found;
        }
    }

    /** Every entry of a whole part's bytes (a fold reads the part it rewrites), checked as it goes. */
    static IndexEntries readAll(Footer footer, byte[] file) {
        IndexEntries.Appender out =
                new IndexEntries.Appender(footer.files, (int) Math.min(Integer.MAX_VALUE, footer.entries));
        Cursor entries = new Cursor(footer, file);
        for (long i = 0; entries.next(); i++) {
            if (!entries.appendTo(out)) {
                throw new DamagedIndexException(footer.location + " is damaged: keys out of order (entry " + i + ")");
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
        int sequenceFrom; // the sequence is a range of the block's raw bytes (in.data)
        int sequenceLength;

        BlockEntries(Footer footer, Reader in) {
            this.footer = footer;
            this.in = in;
        }

        /** Goes on from a restart (whose key is stored whole) at {@code offset} of the block. */
        void restartAt(int offset) {
            in.seek(offset);
            keyLength = 0;
        }

        /** Decodes the next entry; returns how many leading bytes its key shares with the one before. */
        int next() {
            int shared = (int) in.varint();
            int rest = (int) in.varint();
            if (shared < 0 || shared > keyLength) {
                throw in.damaged("a key sharing more than the previous key has");
            }
            if (shared + rest > keyBuffer.length) {
                keyBuffer = Arrays.copyOf(keyBuffer, Math.max(shared + rest, keyBuffer.length * 2));
            }
            in.copyTo(keyBuffer, shared, rest);
            keyLength = shared + rest;
            ref = (int) in.varint() - 1;
            position = in.varint();
            sequenceLength = in.count(Integer.MAX_VALUE);
            sequenceFrom = in.skip(sequenceLength);
            if ((ref < 0 && !(ref == -1 && footer.tombstones)) || ref >= footer.files.length || sequenceLength == 0) {
                throw in.damaged("an entry pointing to no data file");
            }
            return shared;
        }

        byte[] key() {
            return Arrays.copyOf(keyBuffer, keyLength);
        }

        byte[] sequence() {
            return Arrays.copyOfRange(in.data, sequenceFrom, sequenceFrom + sequenceLength);
        }

        /**
         * How many leading bytes this entry's key shares with {@code other}, given that they share
         * at least {@code from} (each key's length when they are equal).
         */
        int sharedWith(byte[] other, int from) {
            int m = Arrays.mismatch(keyBuffer, from, keyLength, other, from, other.length);
            return m < 0 ? keyLength : from + m;
        }

        /** Compares this entry's key with {@code other}, unsigned, given that they share {@code same} leading bytes. */
        int compareAt(byte[] other, int same) {
            if (same == keyLength || same == other.length) {
                return Integer.compare(keyLength, other.length);
            }
            return Integer.compare(keyBuffer[same] & 0xFF, other[same] & 0xFF);
        }
    }

    /** A block's raw entries, after checking its CRC; {@code at}: where the block starts in {@code data}. */
    private static Reader block(Footer footer, int block, byte[] data, int at) {
        checkBlock(footer, block, data, at);
        byte[] raw = decompress(
                footer.location, "block " + block, data, at, footer.lengths[block], footer.rawLengths[block]);
        return new Reader(footer.location, raw, 0);
    }

    private static void checkBlock(Footer footer, int block, byte[] data, int at) {
        int length = footer.lengths[block];
        if (at < 0 || at + length > data.length || crc(data, at, length) != footer.crcs[block]) {
            throw new DamagedIndexException(footer.location + " has a damaged block " + block + " (CRC mismatch)");
        }
    }

    /**
     * Decompresses {@code length} bytes at {@code at}; {@code rawLength} is what they must give
     * (-1: what the frame says, for the footer).
     */
    private static byte[] decompress(String location, String what, byte[] data, int at, int length, int rawLength) {
        long size;
        try {
            size = rawLength >= 0 ? rawLength : Zstd.decompressedSize(data, at, length);
        } catch (ZstdException e) {
            throw new DamagedIndexException(location + " has a damaged " + what + " (" + e.getMessage() + ")");
        }
        byte[] raw = new byte[checkedSize(location, what, size)];
        Decompressor d = Decompressor.take();
        try {
            decompress(d, location, what, data, at, length, raw.length, raw);
        } finally {
            d.give();
        }
        return raw;
    }

    /** {@code size}, the raw length a block or the footer claims, if it is one to allocate; else damage. */
    private static int checkedSize(String location, String what, long size) {
        if (size <= 0 || size > MAX_RAW_BYTES) {
            throw new DamagedIndexException(location + " has a " + what + " of " + size + " bytes uncompressed");
        }
        return (int) size;
    }

    /**
     * Decompresses into the start of {@code target} exactly {@code size} bytes, or throws
     * {@link DamagedIndexException} (and closes the decompressor's context).
     */
    private static void decompress(
            Decompressor d, String location, String what, byte[] data, int at, int length, int size, byte[] target) {
        long n;
        try {
            n = d.context.decompressByteArray(target, 0, size, data, at, length);
        } catch (ZstdException e) {
            d.close();
            throw new DamagedIndexException(location + " has a damaged " + what + " (" + e.getMessage() + ")");
        }
        if (n != size) {
            d.close();
            throw new DamagedIndexException(location + " has a damaged " + what + " (" + n + " of " + size + " bytes)");
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

    /** The restarts of a block of {@code entries} entries: its first and every {@link #RESTART_INTERVAL}th after. */
    private static int restartCount(int entries) {
        return (entries + RESTART_INTERVAL - 1) / RESTART_INTERVAL;
    }

    private static void writeInt(byte[] b, int at, int v) {
        b[at] = (byte) (v >>> 24);
        b[at + 1] = (byte) (v >>> 16);
        b[at + 2] = (byte) (v >>> 8);
        b[at + 3] = (byte) v;
    }

    private static int readInt(byte[] b, int at) {
        return ((b[at] & 0xFF) << 24) | ((b[at + 1] & 0xFF) << 16) | ((b[at + 2] & 0xFF) << 8) | (b[at + 3] & 0xFF);
    }

    /** Reads varints and byte strings from a decoded block or footer; running past its end is damage. */
    private static final class Reader {
        private final String location;
        private final byte[] data;
        /** Where the bytes to read end: {@code data} may be a reused buffer longer than them. */
        private final int end;

        private int at;

        Reader(String location, byte[] data, int at) {
            this(location, data, at, data.length);
        }

        Reader(String location, byte[] data, int at, int end) {
            this.location = location;
            this.data = data;
            this.at = at;
            this.end = end;
        }

        int position() {
            return at;
        }

        void seek(int position) {
            if (position < 0 || position > end) {
                throw damaged("a position outside the block");
            }
            at = position;
        }

        long varint() {
            long value = 0;
            for (int shift = 0; shift < 64; shift += 7) {
                if (at >= end) {
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
            if (at + 4 > end) {
                throw damaged("an entry cut short");
            }
            int v = readInt(data, at);
            at += 4;
            return v;
        }

        /** Skips {@code n} bytes; returns where they start. */
        int skip(int n) {
            if (n < 0 || at + n > end) {
                throw damaged("an entry cut short");
            }
            at += n;
            return at - n;
        }

        byte[] bytes() {
            int n = count(end - at);
            byte[] b = Arrays.copyOfRange(data, at, at + n);
            at += n;
            return b;
        }

        void copyTo(byte[] target, int offset, int n) {
            if (n < 0 || at + n > end) {
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
