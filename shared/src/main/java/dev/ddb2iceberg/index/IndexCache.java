package dev.ddb2iceberg.index;

import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Function;
import java.util.function.ToLongFunction;

/**
 * What a warm container keeps of the key index between runs, in memory: whole small files
 * (deltas), the footers of parts and the blocks of parts it read, by location (index files never
 * change once written, so a location always means the same bytes), least recently used first out
 * once their memory passes the budget. Anything bigger than the whole budget is read but not kept.
 * Behind it, optionally, a {@link DiskCache} of whole parts on local storage.
 */
public final class IndexCache {
    private final long budgetBytes;
    private final DiskCache disk;
    private final LinkedHashMap<String, Held> held = new LinkedHashMap<>(16, 0.75f, true);
    private long bytes;
    private long hits;
    private long misses;
    private long bytesRead;
    private long diskBytesRead;

    private record Held(Object value, long bytes) {}

    private static IndexCache shared;

    public IndexCache(long budgetBytes) {
        this(budgetBytes, null);
    }

    /** @param disk whole parts on local storage, or null */
    public IndexCache(long budgetBytes, DiskCache disk) {
        this.budgetBytes = budgetBytes;
        this.disk = disk;
    }

    /**
     * The container's cache, kept across invocations of a warm Lambda; made with the first budget
     * asked for (a container runs one configuration), with a disk cache of {@code diskBytes} (0: none).
     */
    public static synchronized IndexCache shared(long budgetBytes, long diskBytes) {
        if (shared == null) {
            shared = new IndexCache(budgetBytes, diskBytes > 0 ? DiskCache.temporary(diskBytes) : null);
        }
        return shared;
    }

    /**
     * The default budget: a third of the heap, which leaves the merge's own rows, Parquet buffers
     * and the other two thirds' headroom; {@code KEY_INDEX_CACHE_MB} sets it.
     */
    public static long defaultBudget() {
        return Runtime.getRuntime().maxMemory() / 3;
    }

    /** The disk cache behind this one, or null. */
    DiskCache disk() {
        return disk;
    }

    /** The file's entries, loaded with {@code load} (outside the lock, so loads run in parallel) if absent. */
    IndexEntries get(String location, Function<String, IndexEntries> load) {
        return get(location, load, IndexEntries::memoryBytes);
    }

    /** A part's footer, read with {@code load} if absent. */
    PartFile.Footer footer(String location, Function<String, PartFile.Footer> load) {
        return get("footer:" + location, k -> load.apply(location), PartFile.Footer::memoryBytes);
    }

    /**
     * A block as the cache holds it: as stored (compressed and not yet checked), or decompressed
     * after its checks ({@link PartFile#decompressBlock}).
     */
    record Block(byte[] bytes, boolean decompressed) {}

    /**
     * Whether to keep the blocks of an index whose parts take {@code storedBytes} in storage
     * decompressed: when they would take at most half the budget so (about 2.15 bytes decompressed
     * for each stored on the merge benchmark's keys, counted as 2.5), leaving the other half for
     * the deltas, footers and the removals index. A merge of many keys reads most blocks of an index
     * of a few million rows, and decompressing them again each merge was the largest part of a
     * lookup. A bigger index keeps them as stored, so that as many as possible fit: a block read
     * from disk or S3 costs far more than its decompression (BENCHMARKS.md, "Index blocks kept
     * decompressed").
     */
    boolean keepsDecompressed(long storedBytes) {
        return storedBytes <= budgetBytes / 5;
    }

    /** A block, or null. */
    Block block(String location, int block) {
        synchronized (this) {
            Held h = held.get(blockKey(location, block));
            if (h != null) {
                hits++;
                return (Block) h.value();
            }
            misses++;
            return null;
        }
    }

    /** Keeps a block's bytes as stored. */
    void putBlock(String location, int block, byte[] data) {
        put(blockKey(location, block), new Block(data, false), data.length + 64L);
    }

    /** Keeps a block decompressed, in place of its stored bytes if the cache held those. */
    synchronized void putDecompressedBlock(String location, int block, byte[] raw) {
        String key = blockKey(location, block);
        Held stored = held.remove(key);
        if (stored != null) {
            bytes -= stored.bytes();
        }
        put(key, new Block(raw, true), raw.length + 64L);
    }

    /** Blocks held decompressed. */
    public synchronized long decompressedBlocks() {
        return held.values().stream()
                .filter(h -> h.value() instanceof Block b && b.decompressed())
                .count();
    }

    private static String blockKey(String location, int block) {
        return location + "#" + block;
    }

    @SuppressWarnings("unchecked")
    private <T> T get(String key, Function<String, T> load, ToLongFunction<T> size) {
        synchronized (this) {
            Held h = held.get(key);
            if (h != null) {
                hits++;
                return (T) h.value();
            }
            misses++;
        }
        T loaded = load.apply(key);
        put(key, loaded, size.applyAsLong(loaded));
        return loaded;
    }

    /** Keeps entries just written, so the next run in this container need not read them back. */
    void put(String location, IndexEntries loaded) {
        put(location, loaded, loaded.memoryBytes());
    }

    private synchronized void put(String key, Object value, long size) {
        if (held.containsKey(key) || size > budgetBytes) {
            return;
        }
        held.put(key, new Held(value, size));
        bytes += size;
        for (var it = held.entrySet().iterator(); bytes > budgetBytes && it.hasNext(); ) {
            Map.Entry<String, Held> eldest = it.next();
            bytes -= eldest.getValue().bytes();
            it.remove();
        }
    }

    /**
     * Drops what the cache holds of index files a newer index version no longer lists (a part its
     * fold replaced, a delta every part absorbed), in memory and on disk. Index files never change,
     * so nothing is lost that is still read: a merge whose commit lost a race and plans again on
     * the older version reads them back. Left in, they would sit there until the budget pushed them
     * out, filling the cache with blocks no lookup asks for (a 10M-row index replaces about 10 MB of
     * blocks a merge), pushing live ones out first once it is full, and in a warm container
     * making every full collection mark them.
     */
    void forget(Collection<String> locations) {
        for (String location : locations) {
            synchronized (this) {
                if (drop(location)) {
                    continue; // a file held whole (a delta): it has no footer or blocks, nor a copy on disk
                }
                Held footer = held.get("footer:" + location);
                drop("footer:" + location);
                if (footer != null) {
                    int blocks = ((PartFile.Footer) footer.value()).blocks();
                    for (int b = 0; b < blocks; b++) {
                        drop(blockKey(location, b));
                    }
                } else {
                    // Blocks outlived their footer (least recently used first out): look for them.
                    String prefix = location + "#";
                    held.entrySet().removeIf(e -> {
                        boolean block = e.getKey().startsWith(prefix);
                        if (block) {
                            bytes -= e.getValue().bytes();
                        }
                        return block;
                    });
                }
            }
            if (disk != null) {
                disk.remove(location);
            }
        }
    }

    /** Memory held for index file {@code location}: its entries, footer and blocks (for tests and diagnostics). */
    public synchronized long heldBytes(String location) {
        long sum = 0;
        for (Map.Entry<String, Held> e : held.entrySet()) {
            String key = e.getKey();
            if (key.equals(location) || key.equals("footer:" + location) || key.startsWith(location + "#")) {
                sum += e.getValue().bytes();
            }
        }
        return sum;
    }

    /** Whether the disk cache behind this one holds {@code location}. */
    public boolean onDisk(String location) {
        return disk != null && disk.holds(location);
    }

    /** Removes one entry; whether there was one. */
    private boolean drop(String key) {
        Held h = held.remove(key);
        if (h != null) {
            bytes -= h.bytes();
        }
        return h != null;
    }

    public synchronized long bytes() {
        return bytes;
    }

    public synchronized long hits() {
        return hits;
    }

    public synchronized long misses() {
        return misses;
    }

    /** Bytes of index files read from storage (S3) through this cache, since it was made. */
    public synchronized long bytesRead() {
        return bytesRead;
    }

    /** Bytes of index parts read from the local disk cache instead of storage, since it was made. */
    public synchronized long diskBytesRead() {
        return diskBytesRead;
    }

    synchronized void recordRead(long bytes) {
        bytesRead += bytes;
    }

    synchronized void recordDiskRead(long bytes) {
        diskBytesRead += bytes;
    }
}
