package dev.ddb2iceberg.write;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongConsumer;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.deletes.PositionDeleteIndex;
import org.roaringbitmap.RoaringBitmap;

/**
 * What a warm container remembers of the delete files it wrote or read: the row positions each
 * file-scoped position delete file (format v2) or deletion vector (v3) deletes, by the file's
 * identity (its location, and a vector's offset in its Puffin file). A delete file never changes
 * once written, so an entry is right for its file for as long as it is kept; one the cache does not
 * hold is read from storage, as before.
 *
 * <p>Why: a data file carries one delete file, so a merge that deletes more rows of a data file
 * must carry the positions already deleted into the new delete file, and used to read the old one
 * from storage to learn them (a GET and a Parquet read per touched data file, every merge). The
 * merge that wrote that file knew them; now the next merge in the same container takes them from
 * here.
 *
 * <p>Bounded: least recently used entries go once the held bitmaps pass the budget. Positions past
 * 2^31 (a data file of over two billion rows) are not held.
 */
public final class DeletePositionsCache {
    /** The container's cache: a 32nd of the heap, at most 256 MB (about 100M deleted positions). */
    private static final DeletePositionsCache SHARED =
            new DeletePositionsCache(Math.min(256L << 20, Runtime.getRuntime().maxMemory() / 32));

    private final long budgetBytes;
    private final LinkedHashMap<String, RoaringBitmap> held = new LinkedHashMap<>(16, 0.75f, true);
    private long bytes;
    private long hits;
    private long misses;

    DeletePositionsCache(long budgetBytes) {
        this.budgetBytes = budgetBytes;
    }

    public static DeletePositionsCache shared() {
        return SHARED;
    }

    /**
     * The positions {@code files} (a data file's own deletes) delete together, as an index that
     * names them (so a writer carrying it replaces them), or null unless every one is held.
     */
    synchronized PositionDeleteIndex positions(List<DeleteFile> files) {
        RoaringBitmap union = new RoaringBitmap();
        for (DeleteFile file : files) {
            RoaringBitmap positions = held.get(keyOf(file));
            if (positions == null) {
                misses++;
                return null;
            }
            union.or(positions);
        }
        hits++;
        return new HeldPositions(union, List.copyOf(files));
    }

    /**
     * Holds what {@code file} deletes. Refused (nothing held) when the count differs from the
     * file's record count, which a delete file's positions always equal: then the caller's idea of
     * the file's content is wrong, and the file is read from storage when next needed.
     */
    synchronized void put(DeleteFile file, RoaringBitmap positions) {
        if (positions.getLongCardinality() != file.recordCount()) {
            return;
        }
        positions.runOptimize();
        String key = keyOf(file);
        long size = sizeOf(key, positions);
        if (size > budgetBytes) {
            return;
        }
        RoaringBitmap before = held.put(key, positions);
        if (before != null) {
            bytes -= sizeOf(key, before);
        }
        bytes += size;
        var oldest = held.entrySet().iterator();
        while (bytes > budgetBytes && oldest.hasNext()) {
            Map.Entry<String, RoaringBitmap> e = oldest.next();
            bytes -= sizeOf(e.getKey(), e.getValue());
            oldest.remove();
        }
    }

    /** Forgets everything held, as a new container starts (for tests). */
    synchronized void clear() {
        held.clear();
        bytes = 0;
    }

    /**
     * What {@code index} deletes, as a bitmap the caller may change, or null when a position is past
     * what a 32-bit bitmap holds. Positions the cache held are copied bitmap to bitmap, not one by one.
     */
    static RoaringBitmap copyOf(PositionDeleteIndex index) {
        if (index instanceof HeldPositions held) {
            return held.bitmap().clone();
        }
        RoaringBitmap copy = new RoaringBitmap();
        boolean[] fits = {true};
        index.forEach(p -> {
            if (p < 0 || p > Integer.MAX_VALUE) {
                fits[0] = false;
            } else {
                copy.add((int) p);
            }
        });
        return fits[0] ? copy : null;
    }

    /** Lookups every file of which was held, and those that had to read from storage. */
    public synchronized long hits() {
        return hits;
    }

    public synchronized long misses() {
        return misses;
    }

    private static String keyOf(DeleteFile file) {
        Long offset = file.contentOffset(); // a deletion vector: one blob of a Puffin file
        return offset == null ? file.location() : file.location() + "@" + offset;
    }

    private static long sizeOf(String key, RoaringBitmap positions) {
        return positions.getLongSizeInBytes() + 2L * key.length() + 96;
    }

    /** Held positions, read only, naming the delete files they came from. */
    private record HeldPositions(RoaringBitmap bitmap, Collection<DeleteFile> files) implements PositionDeleteIndex {
        @Override
        public void delete(long position) {
            throw new UnsupportedOperationException("held delete positions are read only");
        }

        @Override
        public void delete(long posStart, long posEnd) {
            throw new UnsupportedOperationException("held delete positions are read only");
        }

        @Override
        public boolean isDeleted(long position) {
            return position >= 0 && position <= Integer.MAX_VALUE && bitmap.contains((int) position);
        }

        @Override
        public boolean isEmpty() {
            return bitmap.isEmpty();
        }

        @Override
        public void forEach(LongConsumer consumer) {
            bitmap.forEach((int p) -> consumer.accept(p)); // all held positions are below 2^31
        }

        @Override
        public Collection<DeleteFile> deleteFiles() {
            return new ArrayList<>(files);
        }

        @Override
        public long cardinality() {
            return bitmap.getLongCardinality();
        }
    }
}
