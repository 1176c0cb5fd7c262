package dev.ddb2iceberg.merge;

import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.staging.CorruptStagedObjectException;
import dev.ddb2iceberg.staging.StagedObject;
import dev.ddb2iceberg.staging.StagingStore;
import java.util.ArrayList;
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

    /** Reads the oldest pending objects (in parallel) until a bound is reached. */
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
        List<Future<List<Change>>> reads = new ArrayList<>();
        for (StagedObject o : candidates) {
            reads.add(pool.submit(() -> store.read(o.name())));
        }
        StagedSlice slice = new StagedSlice();
        long count = 0;
        for (int i = 0; i < candidates.size(); i++) {
            StagedObject o = candidates.get(i);
            List<Change> changes;
            try {
                changes = reads.get(i).get();
            } catch (ExecutionException e) {
                if (e.getCause() instanceof CorruptStagedObjectException corrupt) {
                    LOG.error(
                            "Staged object {} cannot be read and is moved to the quarantine: {}",
                            o.name().key(),
                            corrupt.getMessage());
                    store.quarantineStaged(o.name(), corrupt.getMessage());
                    slice.quarantinedObjects++;
                    continue;
                }
                throw new IllegalStateException(
                        "could not read staged object " + o.name().key() + ": " + e.getCause(), e.getCause());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            }
            if (!slice.objects.isEmpty() && count + changes.size() > options.maxChanges()) {
                break;
            }
            slice.objects.add(o);
            slice.changes.add(changes);
            count += changes.size();
        }
        return slice;
    }
}
