package dev.ddb2iceberg.index;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Whole key index parts on local storage (a Lambda's {@code /tmp}), so a warm merger reads the
 * blocks its keys need from disk instead of S3. Parts go in when this container writes them (a
 * fold, a rebuild), least recently used out once the budget is passed. A read that finds nothing
 * (never written here, evicted, or the file gone) returns null and the caller reads S3; what it
 * returns is checked against the part's CRCs like bytes from S3.
 */
public final class DiskCache {
    private static final Logger LOG = LoggerFactory.getLogger(DiskCache.class);

    private final Path dir;
    private final long budgetBytes;
    private final LinkedHashMap<String, Stored> files = new LinkedHashMap<>(16, 0.75f, true);
    private long bytes;
    private long next;

    private record Stored(Path file, long bytes) {}

    /** A cache in {@code dir} (made if missing) of at most {@code budgetBytes}. */
    public DiskCache(Path dir, long budgetBytes) {
        this.dir = dir;
        this.budgetBytes = budgetBytes;
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("could not make the key index disk cache folder " + dir, e);
        }
    }

    /** A cache in a new folder of the temporary directory ({@code /tmp} in Lambda), removed when the JVM exits. */
    static DiskCache temporary(long budgetBytes) {
        try {
            Path dir = Files.createTempDirectory("ddb2iceberg-key-index-");
            Runtime.getRuntime().addShutdownHook(new Thread(() -> deleteTree(dir)));
            return new DiskCache(dir, budgetBytes);
        } catch (IOException e) {
            throw new UncheckedIOException("could not make a folder for the key index disk cache", e);
        }
    }

    /**
     * The default budget: three quarters of the temporary directory's free space, at most 10 GB
     * (a Lambda's ephemeral storage is 512 MB to 10 GB, the template's {@code MergerEphemeralStorageMb}).
     */
    public static long defaultBudget() {
        try {
            Path tmp = Path.of(System.getProperty("java.io.tmpdir"));
            return Math.min(10L << 30, Files.getFileStore(tmp).getUsableSpace() / 4 * 3);
        } catch (IOException e) {
            return 0;
        }
    }

    /** Keeps a part's bytes; a failure to write only means the part is read from S3 later. */
    void put(String location, byte[] data) {
        if (data.length > budgetBytes) {
            return;
        }
        Path file;
        synchronized (this) {
            if (files.containsKey(location)) {
                return;
            }
            file = dir.resolve("part-" + next++ + ".bin");
        }
        try {
            Path partial = dir.resolve(file.getFileName() + ".partial");
            Files.write(partial, data);
            Files.move(partial, file, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            LOG.warn(
                    "Could not keep key index part {} on local disk ({}); it is read from storage",
                    location,
                    e.getMessage());
            return;
        }
        synchronized (this) {
            files.put(location, new Stored(file, data.length));
            bytes += data.length;
            for (var it = files.entrySet().iterator(); bytes > budgetBytes && it.hasNext(); ) {
                Map.Entry<String, Stored> eldest = it.next();
                bytes -= eldest.getValue().bytes();
                it.remove();
                deleteQuietly(eldest.getValue().file());
            }
        }
    }

    /** {@code length} bytes of a kept part at {@code offset}, or null when it is not kept. */
    byte[] read(String location, long offset, int length) {
        Stored stored;
        synchronized (this) {
            stored = files.get(location);
        }
        if (stored == null || offset + length > stored.bytes()) {
            return null;
        }
        try (FileChannel channel = FileChannel.open(stored.file(), StandardOpenOption.READ)) {
            ByteBuffer buf = ByteBuffer.allocate(length);
            while (buf.hasRemaining()) {
                if (channel.read(buf, offset + buf.position()) < 0) {
                    return null;
                }
            }
            return buf.array();
        } catch (IOException e) {
            return null; // evicted while read, or the disk failed: S3 has it
        }
    }

    /** Whether a part is kept (it may still go before it is read). */
    synchronized boolean holds(String location) {
        return files.containsKey(location);
    }

    /** A kept part's whole bytes, or null. */
    byte[] readAll(String location) {
        Stored stored;
        synchronized (this) {
            stored = files.get(location);
        }
        return stored == null ? null : read(location, 0, (int) stored.bytes());
    }

    /** Forgets a part whose kept bytes failed their checks. */
    synchronized void remove(String location) {
        Stored stored = files.remove(location);
        if (stored != null) {
            bytes -= stored.bytes();
            deleteQuietly(stored.file());
        }
    }

    public synchronized long bytes() {
        return bytes;
    }

    private static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException e) {
            // a file left behind in a temporary folder
        }
    }

    private static void deleteTree(Path dir) {
        try (Stream<Path> all = Files.walk(dir)) {
            all.sorted(Comparator.reverseOrder()).forEach(DiskCache::deleteQuietly);
        } catch (IOException e) {
            // a temporary folder left behind
        }
    }
}
