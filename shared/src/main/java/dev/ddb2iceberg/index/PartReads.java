package dev.ddb2iceberg.index;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.RangeReadable;
import org.apache.iceberg.io.SeekableInputStream;
import software.amazon.awssdk.services.s3.model.S3Exception;

/**
 * Reads parts of the key index ({@link PartFile}) through the cache's tiers: memory, then the
 * local disk, then a ranged GET of just the bytes needed. Damage is told from a passing network
 * error by the object itself: when a read fails and the object is missing or not the length the
 * manifest recorded, the index is damaged ({@link DamagedIndexException}: the merge rebuilds it);
 * otherwise the error passes (the run fails and the next one reads again).
 */
final class PartReads {
    /**
     * Threads for block reads: a merge reads a block per key, each a small GET whose time is S3's
     * latency, not bandwidth, so many run at once (more than the merge's own pool of CPU work).
     */
    static final ExecutorService BLOCK_READS = Executors.newFixedThreadPool(32, daemon("key-index-read-"));

    private final FileIO io;
    private final IndexCache cache;
    /** Keep blocks in the memory cache decompressed ({@link IndexCache#keepsDecompressed}). */
    private final boolean keepDecompressed;

    PartReads(FileIO io, IndexCache cache) {
        this(io, cache, false);
    }

    PartReads(FileIO io, IndexCache cache, boolean keepDecompressed) {
        this.io = io;
        this.cache = cache;
        this.keepDecompressed = keepDecompressed;
    }

    /** Whether this index's blocks are kept in the memory cache decompressed. */
    boolean keepsDecompressed() {
        return keepDecompressed;
    }

    /** The part's footer, from the cache, the disk cache, or one (rarely two) ranged GETs of its end. */
    PartFile.Footer footer(IndexManifest.Part part) {
        return cache.footer(part.path(), location -> {
            DiskCache disk = cache.disk();
            if (disk != null && disk.holds(location)) {
                try {
                    return readFooter(part, (offset, n) -> {
                        byte[] b = disk.read(location, offset, n);
                        if (b == null) {
                            throw new DamagedIndexException(location + " left the disk cache while read");
                        }
                        cache.recordDiskRead(n);
                        return b;
                    });
                } catch (DamagedIndexException damagedOnDisk) {
                    disk.remove(location); // storage's copy is read and checked below
                }
            }
            return readFooter(part, (offset, n) -> range(location, part.length(), offset, n));
        });
    }

    private interface Ranges {
        byte[] read(long offset, int length);
    }

    /** Reads the footer and tail the manifest says end the part, in one read (two if it says wrong). */
    private static PartFile.Footer readFooter(IndexManifest.Part part, Ranges ranges) {
        int n = (int) Math.min(part.length(), Math.max(PartFile.TAIL_BYTES, part.footer()));
        byte[] tail = ranges.read(part.length() - n, n);
        PartFile.Footer footer = PartFile.footer(part.path(), part.length(), tail);
        if (footer == null) {
            int whole = PartFile.footerLength(part.path(), part.length(), tail) + PartFile.TAIL_BYTES;
            footer = PartFile.footer(part.path(), part.length(), ranges.read(part.length() - whole, whole));
        }
        return footer;
    }

    /**
     * The entries of {@code keys} (sorted, all falling in {@code block}) in that block. Bytes from
     * the memory or disk cache that fail their checks are dropped and read again from storage.
     * Blocks of an index small enough ({@link IndexCache#keepsDecompressed}) are kept decompressed,
     * so that the next lookup in them decompresses nothing.
     */
    List<IndexEntries.Entry> find(PartFile.Footer footer, int block, List<byte[]> keys) {
        IndexCache.Block held = cache.block(footer.location, block);
        if (held != null) {
            return held.decompressed()
                    ? PartFile.findDecompressed(footer, block, held.bytes(), keys)
                    : findAndKeep(footer, block, held.bytes(), keys, false);
        }
        DiskCache disk = cache.disk();
        byte[] local = disk == null ? null : disk.read(footer.location, footer.offset(block), footer.length(block));
        if (local != null) {
            try {
                List<IndexEntries.Entry> found = findAndKeep(footer, block, local, keys, true);
                cache.recordDiskRead(local.length);
                return found;
            } catch (DamagedIndexException damagedOnDisk) {
                disk.remove(footer.location); // the local copy went bad; storage's is checked below
            }
        }
        byte[] stored = range(footer.location, footer.length, footer.offset(block), footer.length(block));
        return findAndKeep(footer, block, stored, keys, true);
    }

    /**
     * Finds the keys in a block's stored bytes and keeps the block in the memory cache: decompressed
     * where this index keeps them so, else as stored unless the cache holds them already ({@code
     * keepStored} false).
     */
    private List<IndexEntries.Entry> findAndKeep(
            PartFile.Footer footer, int block, byte[] stored, List<byte[]> keys, boolean keepStored) {
        if (keepDecompressed) {
            byte[] raw = PartFile.decompressBlock(footer, block, stored, 0);
            List<IndexEntries.Entry> found = PartFile.findDecompressed(footer, block, raw, keys);
            cache.putDecompressedBlock(footer.location, block, raw);
            return found;
        }
        List<IndexEntries.Entry> found = PartFile.find(footer, block, stored, 0, keys);
        if (keepStored) {
            cache.putBlock(footer.location, block, stored);
        }
        return found;
    }

    /** A whole part's bytes and its footer; {@code fromDisk}: read from the disk cache, not storage. */
    record Whole(PartFile.Footer footer, byte[] bytes, boolean fromDisk) {}

    /**
     * Decodes a whole part (a fold rewrites it) read from the disk cache, else in one GET; when the
     * disk's copy turns out damaged, it is dropped and the part read again from storage.
     */
    <T> T readWhole(IndexManifest.Part part, Function<Whole, T> decode) {
        Whole whole = whole(part, true);
        try {
            return decode.apply(whole);
        } catch (DamagedIndexException damaged) {
            if (!whole.fromDisk()) {
                throw damaged;
            }
            cache.disk().remove(part.path());
            return decode.apply(whole(part, false));
        }
    }

    private Whole whole(IndexManifest.Part part, boolean fromDisk) {
        PartFile.Footer footer = footer(part);
        DiskCache disk = cache.disk();
        byte[] local = disk == null || !fromDisk ? null : disk.readAll(part.path());
        if (local != null && local.length == part.length()) {
            cache.recordDiskRead(local.length);
            return new Whole(footer, local, true);
        }
        if (part.length() > Integer.MAX_VALUE - 16) {
            throw new IllegalStateException("key index part " + part.path() + " is " + part.length()
                    + " bytes, more than one read can hold: rebuild the index with more KEY_INDEX_PARTS");
        }
        return new Whole(footer, range(part.path(), part.length(), 0, (int) part.length()), false);
    }

    /** Every entry of a part. */
    IndexEntries readAll(IndexManifest.Part part) {
        return readWhole(part, w -> PartFile.readAll(w.footer(), w.bytes()));
    }

    /** {@code length} bytes at {@code offset} of a file of {@code fileLength} bytes, in one ranged GET. */
    byte[] range(String location, long fileLength, long offset, int length) {
        byte[] buf = new byte[length];
        try (SeekableInputStream in = io.newInputFile(location, fileLength).newStream()) {
            if (in instanceof RangeReadable ranged) {
                ranged.readFully(offset, buf, 0, length);
            } else {
                in.seek(offset);
                new DataInputStream(in).readFully(buf);
            }
            cache.recordRead(length);
            return buf;
        } catch (NotFoundException missing) {
            throw new DamagedIndexException(location + " is missing");
        } catch (S3Exception e) {
            if (e.statusCode() == 404) {
                throw new DamagedIndexException(location + " is missing");
            }
            throw damagedOr(location, fileLength, e);
        } catch (EOFException truncated) {
            throw new DamagedIndexException(location + " is shorter than the manifest says (truncated)");
        } catch (IOException | RuntimeException e) {
            throw damagedOr(location, fileLength, e);
        }
    }

    /** The error a failed read means: damage when the object is gone or another length, else itself. */
    private RuntimeException damagedOr(String location, long fileLength, Exception e) {
        long actual;
        try {
            actual = io.newInputFile(location).getLength();
        } catch (NotFoundException missing) {
            return new DamagedIndexException(location + " is missing");
        } catch (RuntimeException unknown) {
            if (unknown instanceof S3Exception s3 && s3.statusCode() == 404) {
                return new DamagedIndexException(location + " is missing");
            }
            return e instanceof RuntimeException r ? r : new UncheckedIOException((IOException) e);
        }
        if (actual != fileLength) {
            return new DamagedIndexException(location + " is " + actual + " bytes, but the manifest says " + fileLength
                    + " (truncated or replaced)");
        }
        return e instanceof RuntimeException r
                ? r
                : new UncheckedIOException("could not read key index part " + location, (IOException) e);
    }

    private static java.util.concurrent.ThreadFactory daemon(String prefix) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, prefix + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }
}
