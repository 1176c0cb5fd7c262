package dev.ddb2iceberg.merge;

import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.staging.CorruptStagedObjectException;
import dev.ddb2iceberg.staging.StagedObject;
import dev.ddb2iceberg.staging.StagingStore;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The staged objects one merge run takes, oldest first, with their decoded changes: at most
 * {@code maxStagedBytes} of objects and {@code maxChanges} changes (always at least one object), so
 * a run's work is bounded whatever the backlog. An object that cannot be decoded is moved to the
 * quarantine and counted, never retried forever.
 */
final class StagedSlice {
    private static final Logger LOG = LoggerFactory.getLogger(StagedSlice.class);

    final List<StagedObject> objects = new ArrayList<>();
    final List<List<Change>> changes = new ArrayList<>();
    int quarantinedObjects;

    List<Change> allChanges() {
        List<Change> all = new ArrayList<>();
        changes.forEach(all::addAll);
        return all;
    }

    long changeCount() {
        return changes.stream().mapToLong(List::size).sum();
    }

    /**
     * Reads the oldest pending objects until a bound is reached. Reads run {@code ioThreads} at a
     * time, in order, and no new read starts once the change bound is met: a backlog of a million
     * changes costs a run the objects it takes, not every object up to the byte bound, read and
     * thrown away (which also held them all in memory at once).
     *
     * <p>Nor does a read start for an object the change bound will not take: once an object is
     * decoded, its changes per byte tell how many changes the reads in flight will bring, and a read
     * starts only while the next object is expected to fit. Before, a backlog's run read a whole
     * window past the bound (at the defaults, 7 objects of 10,000 changes past the 10 it took),
     * decoded them and threw them away, run after run.
     */
    static StagedSlice take(
            List<StagedObject> pending, StagingStore store, MergeOptions options, ExecutorService pool) {
        List<StagedObject> candidates = new ArrayList<>();
        long bytes = 0;
        for (StagedObject o : pending) {
            if (!candidates.isEmpty() && bytes + o.size() > options.maxStagedBytes()) {
                break;
            }
            candidates.add(o);
            bytes += o.size();
        }
        int window = Math.max(1, options.ioThreads());
        Deque<Future<List<Change>>> reads = new ArrayDeque<>();
        int submitted = 0;
        StagedSlice slice = new StagedSlice();
        long count = 0;
        ReadAhead ahead = new ReadAhead(options.maxChanges());
        try {
            for (int i = 0; i < candidates.size(); i++) {
                while (submitted < candidates.size()
                        && submitted < i + window
                        && (submitted == i || ahead.fits(count, candidates.subList(i, submitted + 1)))) {
                    StagedObject next = candidates.get(submitted++);
                    reads.add(pool.submit(() -> store.read(next.name())));
                }
                StagedObject o = candidates.get(i);
                List<Change> changes = changesOf(o, reads.poll(), store, slice);
                if (changes == null) {
                    continue; // quarantined
                }
                ahead.learn(o.size(), changes.size());
                if (!slice.objects.isEmpty() && count + changes.size() > options.maxChanges()) {
                    break;
                }
                slice.objects.add(o);
                slice.changes.add(changes);
                count += changes.size();
                if (count >= options.maxChanges()) {
                    break; // the bound is met: start no more reads
                }
            }
        } finally {
            reads.forEach(r -> r.cancel(true)); // reads past the bound
        }
        return slice;
    }

    /**
     * Whether one more read is worth starting: whether the next object is expected to fit the bound
     * after the changes taken so far and those of the reads in flight (each object's bytes at the
     * changes per byte of the objects decoded so far). Before the first object is decoded nothing is
     * known, and the whole window is read ahead.
     */
    static final class ReadAhead {
        private final long maxChanges;
        private long bytesDecoded;
        private long changesDecoded;

        ReadAhead(long maxChanges) {
            this.maxChanges = maxChanges;
        }

        void learn(long bytes, long changes) {
            bytesDecoded += bytes;
            changesDecoded += changes;
        }

        /** {@code objects}: the reads in flight, then the one to start. */
        boolean fits(long changesTaken, List<StagedObject> objects) {
            if (bytesDecoded == 0) {
                return true;
            }
            long bytes = 0;
            for (StagedObject o : objects) {
                bytes += o.size();
            }
            return changesTaken + (double) bytes * changesDecoded / bytesDecoded <= maxChanges;
        }
    }

    /** One object's changes, or null when it cannot be decoded (it is then quarantined and counted). */
    private static List<Change> changesOf(
            StagedObject o, Future<List<Change>> read, StagingStore store, StagedSlice slice) {
        try {
            return read.get();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof CorruptStagedObjectException corrupt) {
                LOG.error(
                        "Staged object {} cannot be read and is moved to the quarantine: {}",
                        o.name().key(),
                        corrupt.getMessage());
                store.quarantineStaged(o.name(), corrupt.getMessage());
                slice.quarantinedObjects++;
                return null;
            }
            throw new IllegalStateException(
                    "could not read staged object " + o.name().key() + ": " + e.getCause(), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }
}
