package dev.ddb2iceberg.index;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Function;

/**
 * Index files a warm container keeps between runs, by location (index files never change once
 * written, so a location always means the same entries), least recently used first out once their
 * memory passes the budget. A file bigger than the whole budget is read but not kept.
 */
public final class IndexCache {
    private final long budgetBytes;
    private final LinkedHashMap<String, IndexEntries> files = new LinkedHashMap<>(16, 0.75f, true);
    private long bytes;
    private long hits;
    private long misses;
    private long bytesRead;

    private static IndexCache shared;

    public IndexCache(long budgetBytes) {
        this.budgetBytes = budgetBytes;
    }

    /**
     * The container's cache, kept across invocations of a warm Lambda; made with the first budget
     * asked for (a container runs one configuration).
     */
    public static synchronized IndexCache shared(long budgetBytes) {
        if (shared == null) {
            shared = new IndexCache(budgetBytes);
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

    /** The file's entries, loaded with {@code load} (outside the lock, so loads run in parallel) if absent. */
    IndexEntries get(String location, Function<String, IndexEntries> load) {
        synchronized (this) {
            IndexEntries cached = files.get(location);
            if (cached != null) {
                hits++;
                return cached;
            }
            misses++;
        }
        IndexEntries loaded = load.apply(location);
        put(location, loaded);
        return loaded;
    }

    /** Keeps entries just written, so the next run in this container need not read them back. */
    synchronized void put(String location, IndexEntries loaded) {
        if (files.containsKey(location)) {
            return;
        }
        long size = loaded.memoryBytes();
        if (size <= budgetBytes) {
            files.put(location, loaded);
            bytes += size;
            for (var it = files.entrySet().iterator(); bytes > budgetBytes && it.hasNext(); ) {
                Map.Entry<String, IndexEntries> eldest = it.next();
                bytes -= eldest.getValue().memoryBytes();
                it.remove();
            }
        }
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

    /** Bytes of index files read from storage through this cache (its misses), since it was made. */
    public synchronized long bytesRead() {
        return bytesRead;
    }

    synchronized void recordRead(long bytes) {
        bytesRead += bytes;
    }
}
