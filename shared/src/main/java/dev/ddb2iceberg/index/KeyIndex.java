package dev.ddb2iceberg.index;

import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.util.Futures;
import dev.ddb2iceberg.util.Slices;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.IntFunction;
import org.apache.iceberg.DataOperations;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.io.FileIO;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The key index of one snapshot: for every live row, its key, data file, position and the
 * sequence number of the change that wrote it, so a merge finds the live rows of the keys it
 * changes by reading a block of the index per key instead of the key columns of every data file.
 *
 * <p>Layout, under {@code <table location>/key-index/}: the keys are spread over {@code parts}
 * parts by a hash of the key; each part is a file of sorted entries in blocks of a few KB with a
 * block index at its end ({@link PartFile}), so a lookup reads only the blocks its keys fall in.
 * Each commit adds one small delta file with its own entries (new rows, and tombstones for removed
 * items), numbered by generation, and folds the deltas into a few parts: those that absorbed the
 * fewest generations ({@link #withChanges}). No commit rewrites more than a bounded share of the
 * index, and the deltas a lookup consults stay few. A part large against what a fold brings it (on
 * a table of 100M rows, or with small merges) takes folds into its overlay, a file of its newer entries and
 * tombstones, until that passes {@link #overlayShare} of it: so a fold's cost follows what
 * changed since the part was last rewritten, not the part. A manifest ({@link IndexManifest}) lists the
 * files; the snapshot summary property {@link PipelineProperties#KEY_INDEX} names the manifest,
 * written in the same commit as the rows it describes.
 *
 * <p>Derived state, never the truth: an index is used only for the snapshot whose own summary
 * names it (another writer's commit names none), and a file that is missing or damaged makes the
 * merge rebuild it from the table.
 */
public final class KeyIndex {
    private static final Logger LOG = LoggerFactory.getLogger(KeyIndex.class);

    public static final String NO_MOVES = "none";
    /**
     * Every part absorbs the deltas at least once in this many commits: each commit folds
     * {@code parts / FOLD_WINDOW} parts (one of the default 64), so a commit rewrites about 1/64
     * of the index (18 MB at 100M rows, 180 MB at 1B) and lookups consult at most about 64 deltas.
     */
    public static final int FOLD_WINDOW = 64;
    /** A commit folds no more than this much of the index, unless the deltas' memory bound needs it. */
    public static final long MAX_FOLD_BYTES = 256L << 20;
    /**
     * Deltas a merger holds in memory at most, in entries (about 60 MB each million): past it, a
     * commit folds every part that lags most, so the oldest deltas can go. Reached only when merges
     * are large (64 merges of 60,000 changes), where folding more often is what keeps up.
     */
    public static final long MAX_DELTA_ENTRIES = 4_000_000;
    /**
     * The share of its part a part's overlay grows to before a fold rewrites the part (and the
     * overlay goes): from 1/16 to 3/16 by part number, an eighth on average. So while the part is
     * large against what each fold brings it (a large table), a fold rewrites the overlay, what the
     * part took since it was last rewritten, instead of the part; a key's lookup reads a block of
     * the overlay besides one of the part. The shares differ so that parts that started together (a
     * rebuilt index's) come to their rewrites in different merges, not all in the same round of
     * folds: with one share for all, every part's rewrite came in the same 21 merges of each 83
     * (100M rows, merges of 100,000 changes), each as costly as a merge without overlays.
     */
    public static double overlayShare(int part) {
        return (1 + (part % 8) * 2.0 / 7) / 16;
    }

    private final FileIO io;
    private final String location;
    /** The folder this index writes its files to (the key index's, or the removals index's). */
    private final String folder;

    private final IndexManifest manifest;
    private final IndexCache cache;
    private final PartReads reads;
    /** Folds drop entries whose position is below this (the removals index's expiry); none for the key index. */
    private final long keepFrom;

    private KeyIndex(
            FileIO io, String location, String folder, IndexManifest manifest, IndexCache cache, long keepFrom) {
        this.io = io;
        this.location = location;
        this.folder = folder;
        this.manifest = manifest;
        this.cache = cache;
        this.keepFrom = keepFrom;
        this.reads = new PartReads(io, cache, cache.keepsDecompressed(manifest.baseBytes()));
    }

    /** The manifest location the snapshot's own summary names, or null. */
    public static String manifestOf(Snapshot snapshot) {
        return snapshot == null ? null : snapshot.summary().get(PipelineProperties.KEY_INDEX);
    }

    /**
     * Which index describes a snapshot: the manifest the nearest snapshot names, walking back only
     * through snapshots that moved rows without changing any (maintenance), plus what each of those
     * moved, oldest first.
     *
     * @param manifest the manifest, or null when the index must be rebuilt ({@code why} says why)
     */
    public record Resolved(String manifest, List<Step> steps, String why) {}

    /**
     * One rewrite after the named index: our compaction's moves delta ({@code moves}), or a rewrite
     * by another writer ({@code rewrittenBy}, a snapshot id: S3 Tables' or Spark's compaction), whose
     * new data files must be read to learn where their rows went.
     */
    public record Step(String moves, Long rewrittenBy) {}

    public static Resolved resolve(Table table, Snapshot snapshot) {
        List<Step> steps = new ArrayList<>();
        for (Snapshot s = snapshot; s != null; s = s.parentId() == null ? null : table.snapshot(s.parentId())) {
            String manifest = manifestOf(s);
            if (manifest != null) {
                Collections.reverse(steps);
                return new Resolved(manifest, steps, null);
            }
            String moved = s.summary().get(PipelineProperties.KEY_INDEX_MOVES);
            if (moved == null && DataOperations.REPLACE.equals(s.operation())) {
                // Another writer's rewrite: it moved rows (and may have applied deletes) but changed no item.
                steps.add(new Step(null, s.snapshotId()));
            } else if (moved == null) {
                return new Resolved(
                        null,
                        List.of(),
                        "snapshot " + s.snapshotId() + " (" + s.operation() + ") names no key"
                                + " index: the first merge with the index, or a commit by another writer");
            } else if (!NO_MOVES.equals(moved)) {
                steps.add(new Step(moved, null));
            }
        }
        return new Resolved(null, List.of(), "no snapshot back to the oldest kept one names a key index");
    }

    /**
     * Every file of the index the snapshot names (manifest, parts, overlays, deltas), for orphan cleanup: files
     * no kept snapshot names are orphans. A manifest that cannot be read keeps only itself.
     */
    public static List<String> filesOf(Table table, Snapshot snapshot) {
        if (snapshot == null) {
            return List.of();
        }
        String manifest = manifestOf(snapshot);
        String moves = snapshot.summary().get(PipelineProperties.KEY_INDEX_MOVES);
        if (moves != null && !NO_MOVES.equals(moves)) {
            return List.of(moves);
        }
        if (manifest == null) {
            return List.of();
        }
        try {
            return filesOfManifest(table.io(), manifest);
        } catch (DamagedIndexException damaged) {
            return List.of(manifest); // nothing more to keep: the next merge rebuilds the index
        }
    }

    /** A manifest and every file it names; a manifest that cannot be read throws {@link DamagedIndexException}. */
    public static List<String> filesOfManifest(FileIO io, String manifest) {
        List<String> files = new ArrayList<>();
        files.add(manifest);
        files.addAll(IndexManifest.read(io, manifest).files());
        return files;
    }

    /** Opens the index a manifest describes; a missing or damaged manifest throws {@link DamagedIndexException}. */
    public static KeyIndex open(Table table, String manifestLocation, IndexCache cache) {
        return open(table, manifestLocation, directory(table), cache);
    }

    /**
     * Opens an index whose next versions write to {@code folder} (the removals index's): the table's
     * current place for its own files, which a changed {@code DERIVED_FILES_LOCATION} moves, so new
     * files follow it while the manifest still names the older ones where they are.
     */
    public static KeyIndex open(Table table, String manifestLocation, String folder, IndexCache cache) {
        return new KeyIndex(
                table.io(),
                manifestLocation,
                folder,
                IndexManifest.read(table.io(), manifestLocation),
                cache,
                Long.MIN_VALUE);
    }

    /**
     * An empty index of {@code parts} parts whose files go to {@code folder} (the removals index's;
     * its first {@link #withChanges} writes every part at once).
     */
    public static KeyIndex empty(FileIO io, String folder, int parts, IndexCache cache) {
        IndexManifest m = IndexManifest.of(Collections.nCopies(parts, emptyPart()), List.of(), 0);
        return new KeyIndex(io, "(new, not committed yet)", folder, m, cache, Long.MIN_VALUE);
    }

    /**
     * This version, whose folds drop the entries whose position is below {@code keepFrom}: the
     * removals index keeps a removal's time in the position, and forgets removals past their time
     * when it folds their part. Entries not folded yet still answer lookups.
     */
    public KeyIndex keepingFrom(long keepFrom) {
        return new KeyIndex(io, location, folder, manifest, cache, keepFrom);
    }

    /** Opens an index: a manifest's files plus later moves deltas (oldest first), as its newest deltas. */
    public static KeyIndex open(Table table, String manifest, List<String> moves, IndexCache cache) {
        KeyIndex index = open(table, manifest, cache);
        if (moves.isEmpty()) {
            return index;
        }
        IndexManifest m = index.manifest;
        List<IndexManifest.Delta> deltas = new ArrayList<>(m.deltas());
        long generation = m.generation();
        for (String move : moves) {
            long size = index.load(move).size();
            long length = table.io().newInputFile(move).getLength();
            deltas.add(new IndexManifest.Delta(move, ++generation, size, length));
        }
        return new KeyIndex(
                table.io(),
                manifest,
                index.folder,
                IndexManifest.of(m.base(), m.overlays(), deltas, generation),
                cache,
                index.keepFrom);
    }

    /**
     * Writes a moves delta (a compaction's new row locations) to go in a maintenance commit's
     * summary as {@link PipelineProperties#KEY_INDEX_MOVES}; returns its location.
     */
    public static String writeMoves(Table table, IndexEntries moves, IndexCache cache) {
        String path = directory(table) + UUID.randomUUID() + "-moves.bin";
        IndexFile.write(table.io(), path, moves);
        cache.put(path, moves);
        return path;
    }

    public IndexManifest manifest() {
        return manifest;
    }

    public String location() {
        return location;
    }

    /**
     * The entries of these keys (by {@link IndexKeys#encode}) that have live rows, by key; see
     * {@link #lookupEach}.
     */
    public Map<IndexEntries.ByteKey, IndexEntries.Entry> lookup(Collection<byte[]> keys, ExecutorService pool) {
        List<byte[]> list = new ArrayList<>(keys);
        IndexEntries.Entry[] found = lookupEach(list, pool);
        Map<IndexEntries.ByteKey, IndexEntries.Entry> byKey = new HashMap<>();
        for (int i = 0; i < found.length; i++) {
            if (found[i] != null) {
                byKey.put(new IndexEntries.ByteKey(list.get(i)), found[i]);
            }
        }
        return byKey;
    }

    /**
     * The entry of each of these distinct keys (by {@link IndexKeys#encode}) that has a live row, at
     * the key's own position (null: no live row). Each key is looked up in the deltas its part has
     * not absorbed, newest first (on every core), then in the one block of its part's overlay it can
     * be in, then in the one block of its part; the blocks are read in parallel (or come from the
     * caches). Answers go by position, not through
     * a map of keys: a merge looks up its every key, and hashing them all on one thread cost more
     * than the lookup. A damaged file throws {@link DamagedIndexException}.
     */
    public IndexEntries.Entry[] lookupEach(List<byte[]> keys, ExecutorService pool) {
        List<IndexEntries> deltas = loadDeltas();
        int parts = manifest.parts();
        // Each slice of the keys goes through the deltas one delta at a time, newest first: a delta's
        // key filter (about a byte a key) then stays in the core's cache while every key of the
        // slice probes it, where a key at a time through all deltas fetched a filter word from memory
        // per delta (up to 64 of them).
        List<IndexEntries.Entry> inDeltas = new ArrayList<>(keys.size());
        Slices.perSlice(
                        keys,
                        pool,
                        slice -> {
                            int n = slice.size();
                            long[] hashes = new long[n];
                            long[] absorbed = new long[n];
                            for (int i = 0; i < n; i++) {
                                hashes[i] = IndexEntries.hash(slice.get(i));
                                absorbed[i] = manifest.base()
                                        .get(IndexKeys.part(slice.get(i), parts))
                                        .absorbed();
                            }
                            IndexEntries.Entry[] newest = new IndexEntries.Entry[n];
                            for (int d = deltas.size() - 1; d >= 0; d--) {
                                long generation = manifest.deltas().get(d).generation();
                                IndexEntries delta = deltas.get(d);
                                for (int i = 0; i < n; i++) {
                                    if (newest[i] == null && generation > absorbed[i]) {
                                        newest[i] = delta.find(slice.get(i), hashes[i]);
                                    }
                                }
                            }
                            return Arrays.asList(newest);
                        },
                        "looking keys up in the key index's deltas")
                .forEach(inDeltas::addAll);
        IndexEntries.Entry[] found = new IndexEntries.Entry[keys.size()];
        // The part of each key no delta decides (-1: decided).
        int[] partOf = new int[found.length];
        for (int i = 0; i < found.length; i++) {
            IndexEntries.Entry e = inDeltas.get(i);
            partOf[i] = -1;
            if (e == null) {
                partOf[i] = IndexKeys.part(keys.get(i), parts);
            } else if (!e.isTombstone()) {
                found[i] = e;
            }
        }
        if (!manifest.overlays().isEmpty()) {
            // A part's overlay holds its newer entries and tombstones: a key it decides is not
            // looked for in the part itself.
            IndexEntries.Entry[] inOverlays = new IndexEntries.Entry[found.length];
            readParts(keys, partOf, manifest::overlay, true, inOverlays, pool);
            for (int i = 0; i < found.length; i++) {
                if (inOverlays[i] != null) {
                    partOf[i] = -1;
                    found[i] = inOverlays[i].isTombstone() ? null : inOverlays[i];
                }
            }
        }
        readParts(keys, partOf, p -> manifest.base().get(p), false, found, pool);
        return found;
    }

    /**
     * Looks each key up in the file {@code fileOf} gives for its part ({@code partOf}: -1 where the
     * key is decided already), filling {@code found} at the key's position: the footers first (cached
     * in a warm merger), then each block with the keys it can hold, in parallel. {@code overlays}:
     * the files are overlays (which may hold tombstones); a file of the other kind is damage, so a
     * base part can never answer a key with a tombstone.
     */
    private void readParts(
            List<byte[]> keys,
            int[] partOf,
            IntFunction<IndexManifest.Part> fileOf,
            boolean overlays,
            IndexEntries.Entry[] found,
            ExecutorService pool) {
        int parts = manifest.parts();
        // The positions of the keys to look up, grouped by part: a counting sort into one array.
        int[] partStart = new int[parts + 1];
        for (int p : partOf) {
            if (p >= 0) {
                partStart[p + 1]++;
            }
        }
        for (int p = 0; p < parts; p++) {
            partStart[p + 1] += partStart[p];
        }
        int[] next = Arrays.copyOf(partStart, parts);
        int[] byPart = new int[partStart[parts]];
        for (int i = 0; i < partOf.length; i++) {
            if (partOf[i] >= 0) {
                byPart[next[partOf[i]]++] = i;
            }
        }
        Map<Integer, Future<PartFile.Footer>> footers = new HashMap<>();
        List<Integer> partsToRead = new ArrayList<>();
        for (int p = 0; p < parts; p++) {
            IndexManifest.Part part = fileOf.apply(p);
            if (partStart[p + 1] > partStart[p] && part.path() != null) { // else no key, or an empty part
                footers.put(p, PartReads.BLOCK_READS.submit(() -> reads.footer(part)));
                partsToRead.add(p);
            }
        }
        // Each part's keys in key order, on the merge's cores: blocks hold ranges of keys, so the
        // keys of one block come one after another, and each block's read gets its keys sorted.
        List<List<Future<?>>> reading = Slices.map(
                partsToRead,
                pool,
                p -> {
                    PartFile.Footer footer = Futures.join(footers.get(p), "reading the key index");
                    if (footer.tombstones != overlays) {
                        throw new DamagedIndexException(footer.location + " is "
                                + (overlays ? "not a part's overlay" : "a part's overlay")
                                + ", but the manifest names it as " + (overlays ? "one" : "a part"));
                    }
                    KeySort.sort(byPart, partStart[p], partStart[p + 1], KeySort.Keys.of(keys));
                    List<Future<?>> started = new ArrayList<>();
                    for (int from = partStart[p]; from < partStart[p + 1]; ) {
                        int block = footer.blockOf(keys.get(byPart[from]));
                        int to = from + 1;
                        while (to < partStart[p + 1] && footer.blockOf(keys.get(byPart[to])) == block) {
                            to++;
                        }
                        if (block >= 0) {
                            started.add(readBlock(footer, block, keys, Arrays.copyOfRange(byPart, from, to), found));
                        }
                        from = to;
                    }
                    return started;
                },
                "finding the key index blocks of the keys");
        List<Future<?>> blockReads = new ArrayList<>();
        reading.forEach(blockReads::addAll);
        blockReads.forEach(read -> Futures.join(read, "reading the key index"));
    }

    /**
     * Starts the read of one block for the keys at positions {@code at} (in key order, all falling
     * in the block); each hit fills its key's place in {@code found}. The entries come back in key
     * order, a subsequence of the keys.
     */
    private Future<?> readBlock(
            PartFile.Footer footer, int block, List<byte[]> keys, int[] at, IndexEntries.Entry[] found) {
        List<byte[]> sorted = new ArrayList<>(at.length);
        for (int i : at) {
            sorted.add(keys.get(i));
        }
        return PartReads.BLOCK_READS.submit(() -> {
            int k = 0;
            for (IndexEntries.Entry e : reads.find(footer, block, sorted)) {
                while (!Arrays.equals(sorted.get(k), e.key())) {
                    k++;
                }
                found[at[k++]] = e;
            }
        });
    }

    /** Every delta, oldest first, read in parallel (a new container reads up to about 64 small files). */
    private List<IndexEntries> loadDeltas() {
        List<Future<IndexEntries>> loads = new ArrayList<>();
        for (IndexManifest.Delta delta : manifest.deltas()) {
            loads.add(PartReads.BLOCK_READS.submit(() -> load(delta.path())));
        }
        List<IndexEntries> deltas = new ArrayList<>();
        loads.forEach(f -> deltas.add(Futures.join(f, "reading the key index's deltas")));
        return deltas;
    }

    private IndexEntries load(String path) {
        return cache.get(path, p -> IndexFile.read(io, p, cache::recordRead));
    }

    /** Files a new index version wrote, so a commit that does not land can remove them. */
    public record Written(String manifest, List<String> files) {}

    /**
     * The next version: this one plus {@code changes} (this commit's entries and tombstones) as a
     * new delta, with the parts that absorbed the fewest generations folded: {@code parts /
     * FOLD_WINDOW} of them (at least one, and within {@link #MAX_FOLD_BYTES} unless the deltas'
     * memory bound {@link #MAX_DELTA_ENTRIES} needs more). A part no pending entry falls in absorbs
     * them without a rewrite. Deltas every part has absorbed leave the manifest. So each commit
     * rewrites about the same small share of the index: the worst merge costs what the median does.
     */
    public Written withChanges(Table table, IndexEntries changes, ExecutorService pool) {
        String dir = folder;
        String id = UUID.randomUUID().toString();
        List<String> written = new ArrayList<>();
        long generation = manifest.generation() + 1;
        int parts = manifest.parts();
        List<IndexManifest.Part> base = new ArrayList<>(manifest.base());
        List<IndexManifest.Part> overlays = new ArrayList<>();
        for (int p = 0; p < parts; p++) {
            overlays.add(manifest.overlay(p));
        }
        List<IndexManifest.Delta> deltas = new ArrayList<>(manifest.deltas());
        // An empty index (a new table's) gets its parts at once, not a delta over nothing.
        boolean empty = manifest.baseEntries() == 0 && deltas.isEmpty();
        if (empty) {
            List<Integer> all = new ArrayList<>();
            for (int p = 0; p < parts; p++) {
                all.add(p);
            }
            Folded folded = foldParts(all, List.of(changes), List.of(generation), generation, dir + id, pool);
            folded.parts().forEach(base::set);
            folded.overlays().forEach(overlays::set);
            written.addAll(folded.written());
        } else {
            String delta = dir + id + "-delta.bin";
            long length = IndexFile.write(io, delta, changes);
            cache.put(delta, changes);
            written.add(delta);
            deltas.add(new IndexManifest.Delta(delta, generation, changes.size(), length));
            Folded folded;
            if (ahead != null) {
                // Folded while the merge ran, through the deltas before this one (which stays a delta).
                folded = Futures.join(ahead, "folding key index deltas");
            } else {
                List<IndexEntries> layers = loadDeltas();
                layers.add(changes);
                List<Long> generations = new ArrayList<>();
                deltas.forEach(d -> generations.add(d.generation()));
                folded = foldParts(partsToFold(base, deltas), layers, generations, generation, dir + id, pool);
            }
            folded.parts().forEach(base::set);
            folded.overlays().forEach(overlays::set);
            written.addAll(folded.written());
        }
        long absorbedByAll =
                base.stream().mapToLong(IndexManifest.Part::absorbed).min().orElse(generation);
        deltas.removeIf(d -> d.generation() <= absorbedByAll);
        IndexManifest next = IndexManifest.of(base, overlays, deltas, generation);
        Set<String> superseded = new HashSet<>(manifest.files());
        superseded.removeAll(next.files());
        cache.forget(superseded);
        return finish(io, next, dir + id + "-manifest.json", written);
    }

    /** Folds done ahead of the commit run here, one at a time, beside the merge's own work. */
    /** Threads one part's fold is cut over: every core (a fold is CPU: decoding and encoding each entry). */
    private static final int FOLD_THREADS = Runtime.getRuntime().availableProcessors();

    private static final ExecutorService FOLDS_AHEAD = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "key-index-fold-ahead");
        t.setDaemon(true);
        return t;
    });

    private Future<Folded> ahead; // this version's fold, started by foldAhead

    /**
     * Starts this commit's fold now, in the background, through the deltas this version already
     * has, so it overlaps the merge's lookups and writes instead of adding to them (a part of 1/64
     * of the index is 18 MB at 100M rows: 0.7 s on 2 cores). {@link #withChanges} then adds the
     * commit's own changes as a delta and takes the folded parts, which absorbed everything before
     * it. Called once the merge trusts this version; without it, withChanges folds itself.
     */
    public synchronized void foldAhead(Table table) {
        if (ahead != null || manifest.deltas().isEmpty()) {
            return;
        }
        String prefix = folder + UUID.randomUUID();
        List<Integer> fold = partsToFold(manifest.base(), manifest.deltas());
        List<Long> generations = new ArrayList<>();
        manifest.deltas().forEach(d -> generations.add(d.generation()));
        ahead = FOLDS_AHEAD.submit(
                () -> foldParts(fold, loadDeltas(), generations, manifest.generation(), prefix, null));
    }

    /** Parts folded and their overlays (by part), and the files written for them. */
    private record Folded(
            Map<Integer, IndexManifest.Part> parts, Map<Integer, IndexManifest.Part> overlays, List<String> written) {}

    /** One part folded: its base part, its overlay, and the file written ({@code null}: none). */
    private record Fold(IndexManifest.Part base, IndexManifest.Part overlay, String written) {}

    /**
     * Lays each listed part's pending entries (those of {@code layers} newer than the generation it
     * absorbed; layers oldest first, so the newest entry of a key wins) over it, as new part files
     * named {@code prefix-part-N.bin}, or into its overlay, {@code prefix-part-N-overlay.bin} (see
     * {@link #fold}); they have absorbed {@code generation}. {@code pool} null: one
     * part after another in this thread.
     */
    private Folded foldParts(
            List<Integer> fold,
            List<IndexEntries> layers,
            List<Long> layerGenerations,
            long generation,
            String prefix,
            ExecutorService pool) {
        int parts = manifest.parts();
        List<IndexManifest.Part> base = manifest.base();
        // The pending entries of the parts folded, in one pass over the layers.
        IndexEntries.Builder[] pending = new IndexEntries.Builder[parts]; // null: a part not folded
        fold.forEach(p -> pending[p] = new IndexEntries.Builder());
        for (int l = 0; l < layers.size(); l++) {
            IndexEntries layer = layers.get(l);
            long layerGeneration = layerGenerations.get(l);
            int[] partOf = layer.partsOf(parts);
            for (int i = 0; i < layer.size(); i++) {
                int p = partOf[i];
                IndexEntries.Builder b = pending[p];
                if (b != null && layerGeneration > base.get(p).absorbed()) {
                    b.add(layer, i); // its key and sequence copied straight into the builder
                }
            }
        }
        Map<Integer, Future<Fold>> folds = new HashMap<>();
        for (int p : fold) {
            IndexManifest.Part before = base.get(p);
            IndexManifest.Part overlay = manifest.overlay(p);
            IndexEntries.Builder newer = pending[p];
            String path = prefix + "-part-" + p;
            if (pool == null) {
                folds.put(p, CompletableFuture.completedFuture(fold(p, before, overlay, newer, path, generation)));
            } else {
                folds.put(p, pool.submit(() -> fold(p, before, overlay, newer, path, generation)));
            }
        }
        Map<Integer, IndexManifest.Part> bases = new HashMap<>();
        Map<Integer, IndexManifest.Part> overlays = new HashMap<>();
        List<String> written = new ArrayList<>();
        folds.forEach((p, f) -> {
            Fold done = Futures.join(f, "folding key index deltas");
            bases.put(p, done.base());
            overlays.put(p, done.overlay());
            if (done.written() != null) {
                written.add(done.written());
            }
        });
        return new Folded(bases, overlays, written);
    }

    /**
     * Which parts this commit folds: those that absorbed the fewest generations, {@code parts /
     * FOLD_WINDOW} of them within {@link #MAX_FOLD_BYTES} (at least one), or more when the deltas
     * are large ({@link #pacedParts}); then more while the deltas still kept would pass {@link
     * #MAX_DELTA_ENTRIES}.
     */
    private static List<Integer> partsToFold(List<IndexManifest.Part> base, List<IndexManifest.Delta> deltas) {
        return partsToFold(base, deltas, MAX_DELTA_ENTRIES);
    }

    /** {@link #partsToFold(List, List)} with the deltas' bound a parameter (a test runs commits against a small one). */
    static List<Integer> partsToFold(
            List<IndexManifest.Part> base, List<IndexManifest.Delta> deltas, long maxDeltaEntries) {
        List<Integer> order = new ArrayList<>();
        for (int p = 0; p < base.size(); p++) {
            order.add(p);
        }
        order.sort(
                Comparator.comparingLong((Integer p) -> base.get(p).absorbed()).thenComparing(p -> p));
        int wanted = (base.size() + FOLD_WINDOW - 1) / FOLD_WINDOW;
        int paced = pacedParts(base.size(), deltas, maxDeltaEntries);
        List<Integer> fold = new ArrayList<>();
        long bytes = 0;
        int next = 0;
        while (next < order.size()
                && (fold.isEmpty()
                        || fold.size() < paced
                        || (fold.size() < wanted
                                && bytes + base.get(order.get(next)).length() <= MAX_FOLD_BYTES))) {
            bytes += base.get(order.get(next)).length();
            fold.add(order.get(next++));
        }
        while (next < order.size() && keptDeltaEntries(base, deltas, order, next) > maxDeltaEntries) {
            bytes += base.get(order.get(next)).length();
            fold.add(order.get(next++));
        }
        if (bytes > MAX_FOLD_BYTES) {
            LOG.info(
                    "Folding {} key index parts ({} MB) in this commit: the deltas would pass {} entries otherwise",
                    fold.size(),
                    bytes >> 20,
                    maxDeltaEntries);
        }
        return fold;
    }

    /**
     * Parts a commit must fold for the deltas to stay under their bound at the pace they come.
     * A delta leaves only once every part has absorbed it, so with {@code k} parts folded a commit
     * about {@code parts / k} deltas are kept. When commits are large (100,000 changes a merge
     * write deltas of about 180,000 entries, moved rows included), {@code FOLD_WINDOW} of them pass
     * the bound: folding one part a commit, the deltas piled up until one commit had to fold most of
     * the index at once (at 100M rows a 17-second merge, every 23 merges, again and again: the parts
     * that commit folded were then all equally behind). Folding, each commit, the share of the parts
     * the deltas' mean size asks for spreads the same work evenly. The share is a fraction (2.9
     * parts, say): commits take the whole parts in turn, by generation, so that over commits they
     * fold the fraction exactly. The target is 15/16 of the bound, so the bound itself seldom has to
     * force a fold, for about a tenth more folding than the bound's edge.
     */
    static int pacedParts(int parts, List<IndexManifest.Delta> deltas, long maxDeltaEntries) {
        if (deltas.isEmpty()) {
            return 0;
        }
        long entries = deltas.stream().mapToLong(IndexManifest.Delta::entries).sum();
        double perCommit = parts * ((double) entries / deltas.size()) / (maxDeltaEntries * 15.0 / 16);
        long generation = deltas.get(deltas.size() - 1).generation();
        long due = (long) Math.floor(perCommit * (generation + 1)) - (long) Math.floor(perCommit * generation);
        return (int) Math.min(parts, due);
    }

    /** Entries of the deltas still kept once the parts before {@code next} in {@code order} have absorbed all. */
    private static long keptDeltaEntries(
            List<IndexManifest.Part> base, List<IndexManifest.Delta> deltas, List<Integer> order, int next) {
        long newest = deltas.get(deltas.size() - 1).generation();
        long absorbedByAll = next >= order.size()
                ? newest
                : Math.min(newest, base.get(order.get(next)).absorbed());
        return deltas.stream()
                .filter(d -> d.generation() > absorbedByAll)
                .mapToLong(IndexManifest.Delta::entries)
                .sum();
    }

    /**
     * Whether folding a part rewrites it: when entries are pending for it, or, in an index whose
     * folds expire entries, when it has any (its expired ones go; else a part no new entry falls in
     * would keep them for ever).
     */
    private boolean rewrites(IndexManifest.Part before, IndexEntries.Builder newer) {
        return newer.size() > 0 || (keepFrom != Long.MIN_VALUE && before.path() != null);
    }

    /**
     * Part {@code p} with its pending entries laid over it. While its overlay, with them, stays
     * within {@link #overlayShare} of the part, they go into the overlay, a new file that holds the part's
     * newer entries and tombstones: a fold then rewrites what the part took since it was last
     * rewritten, not the part. Past that, they and the overlay go into the part itself, written as
     * a new file, and the overlay goes. {@code path}: the new file's path, less its ending.
     */
    private Fold fold(
            int p,
            IndexManifest.Part before,
            IndexManifest.Part overlay,
            IndexEntries.Builder newer,
            String path,
            long generation) {
        if (!rewrites(before, newer)) {
            return new Fold(absorbed(before, generation), overlay, null);
        }
        boolean keep = reads.keepsDecompressed();
        if (intoOverlay(p, before, overlay, newer)) {
            IndexEntries changes = newer.build();
            PartFile.Writer out = overlay.path() == null
                    ? PartFile.overlay(null, null, changes, 1, keepFrom, keep, true)
                    : reads.readWhole(
                            overlay,
                            whole -> PartFile.overlay(
                                    whole.footer(), whole.bytes(), changes, FOLD_THREADS, keepFrom, keep, true));
            String file = path + "-overlay.bin";
            return new Fold(absorbed(before, generation), write(file, out, 0), out.entries() == 0 ? null : file);
        }
        IndexEntries changes = overlay.path() == null ? newer.build() : laidOver(reads.readAll(overlay), newer.build());
        // Where the cache keeps this index's blocks decompressed, the new part's go in as they are
        // written: the next merge looks up keys in nearly every block, and would otherwise read
        // each from the disk cache and decompress it (1.5 % of a steady merge at 10M rows).
        PartFile.Writer out = before.path() == null
                ? PartFile.overlay(null, null, changes, 1, keepFrom, keep)
                : reads.readWhole(
                        before,
                        whole ->
                                PartFile.overlay(whole.footer(), whole.bytes(), changes, FOLD_THREADS, keepFrom, keep));
        String file = path + ".bin";
        return new Fold(write(file, out, generation), emptyPart(), out.entries() == 0 ? null : file);
    }

    /**
     * Whether a fold goes into part {@code p}'s overlay: while the overlay stays within {@link
     * #overlayShare} of a part that has entries. The removals index, whose folds expire entries,
     * has none (an overlay's expired entry would uncover an older one of its part).
     */
    private boolean intoOverlay(
            int p, IndexManifest.Part before, IndexManifest.Part overlay, IndexEntries.Builder newer) {
        return keepFrom == Long.MIN_VALUE
                && before.path() != null
                && overlay.entries() + newer.size() <= before.entries() * overlayShare(p);
    }

    /** A part as it was, now having absorbed {@code generation}. */
    private static IndexManifest.Part absorbed(IndexManifest.Part part, long generation) {
        return new IndexManifest.Part(part.path(), part.length(), part.footer(), part.entries(), generation);
    }

    /** An overlay's entries with newer ones laid over them (a newer entry of a key wins; tombstones stay). */
    static IndexEntries laidOver(IndexEntries older, IndexEntries newer) {
        IndexEntries.Builder all = new IndexEntries.Builder(older.size() + newer.size());
        for (int i = 0; i < older.size(); i++) {
            all.add(older, i);
        }
        for (int i = 0; i < newer.size(); i++) {
            all.add(newer, i);
        }
        return all.build();
    }

    /**
     * Writes a fold's new file (kept on local disk too, and its blocks in the memory cache where it
     * keeps them decompressed); no entries: no file, an empty part.
     */
    private IndexManifest.Part write(String path, PartFile.Writer out, long generation) {
        if (out.entries() == 0) {
            return new IndexManifest.Part(null, 0, 0, 0, generation);
        }
        IndexManifest.Part written = writeEncoded(io, cache.disk(), path, out.finish(), out.entries(), generation);
        List<byte[]> blocks = out.blocks();
        if (blocks != null) {
            for (int b = 0; b < blocks.size(); b++) {
                cache.putDecompressedBlock(path, b, blocks.get(b));
            }
        }
        return written;
    }

    /** Writes a part file; {@code keep}: the disk cache that keeps a copy, or null. */
    static IndexManifest.Part writePart(FileIO io, DiskCache keep, String path, IndexEntries entries, long generation) {
        return writeEncoded(io, keep, path, PartFile.encode(entries), entries.size(), generation);
    }

    /** Writes a part file already encoded, of {@code entries} entries. */
    static IndexManifest.Part writeEncoded(
            FileIO io, DiskCache keep, String path, byte[] bytes, long entries, long generation) {
        try (var out = io.newOutputFile(path).createOrOverwrite()) {
            out.write(bytes);
        } catch (IOException e) {
            throw new UncheckedIOException("could not write key index part " + path, e);
        }
        if (keep != null) {
            keep.put(path, bytes); // its lookups and next fold then read local disk, not S3
        }
        return new IndexManifest.Part(path, bytes.length, PartFile.footerBytes(bytes), entries, generation);
    }

    /**
     * Writes entries to a file of the index's folder named {@code name} (the parallel export load's
     * workers' fragments), read whole; returns its size in storage.
     */
    public static long writeFile(Table table, String name, IndexEntries entries) {
        return IndexFile.write(table.io(), directory(table) + name, entries);
    }

    /** Writes a part of the index (the parallel export load's index groups) named {@code name}. */
    public static IndexManifest.Part writePart(Table table, String name, IndexEntries entries) {
        return writePart(table.io(), null, directory(table) + name, entries, 0);
    }

    /** The part a part that has no entries yet is. */
    public static IndexManifest.Part emptyPart() {
        return new IndexManifest.Part(null, 0, 0, 0, 0);
    }

    /** The location a file named by {@link #writeFile} gets. */
    public static String fileLocation(Table table, String name) {
        return directory(table) + name;
    }

    /** Reads a file of entries written by {@link #writeFile}; a missing or damaged one throws {@link DamagedIndexException}. */
    public static IndexEntries readFile(Table table, String location) {
        return IndexFile.read(table.io(), location);
    }

    /** Every entry of a part, its overlay laid over it (tests compare parts with the table). */
    public IndexEntries readPart(int part) {
        IndexManifest.Part p = manifest.base().get(part);
        IndexEntries entries = p.path() == null ? IndexEntries.EMPTY : reads.readAll(p);
        IndexManifest.Part overlay = manifest.overlay(part);
        if (overlay.path() == null) {
            return entries;
        }
        IndexEntries all = laidOver(entries, reads.readAll(overlay));
        IndexEntries.Builder live = new IndexEntries.Builder(all.size());
        for (int i = 0; i < all.size(); i++) {
            if (!all.entry(i).isTombstone()) {
                live.add(all, i);
            }
        }
        return live.build();
    }

    /**
     * Writes the manifest of an index made of these parts and no deltas, built outside a merge (the
     * parallel export load); returns the manifest's location, for a commit's summary as
     * {@link PipelineProperties#KEY_INDEX}.
     */
    public static String writeManifest(Table table, List<IndexManifest.Part> base) {
        String path = directory(table) + UUID.randomUUID() + "-manifest.json";
        IndexManifest.of(base, List.of(), 0).write(table.io(), path);
        return path;
    }

    /** Starts a new index of {@code parts} parts (a rebuild from the table), written part by part. */
    public static Build newBuild(Table table, int parts, IndexCache cache) {
        return new Build(table, parts, cache);
    }

    /**
     * A new index written one part at a time, so a rebuild holds only the parts it is building (see
     * {@code IndexRebuild}); it has no manifest of its own: the commit's {@link #withChanges} writes
     * the first one. Thread-safe.
     */
    public static final class Build {
        private final Table table;
        private final String prefix;
        private final IndexCache cache;
        private final List<IndexManifest.Part> base;
        private final List<String> written = new ArrayList<>();

        private Build(Table table, int parts, IndexCache cache) {
            this.table = table;
            this.prefix = directory(table) + UUID.randomUUID() + "-part-";
            this.cache = cache;
            this.base = new ArrayList<>(Collections.nCopies(parts, emptyPart()));
        }

        /** Writes one part's entries (live rows only); a part never written stays empty. */
        public void writePart(int part, IndexEntries partEntries) {
            if (partEntries.size() > 0) {
                writeEncoded(part, PartFile.encode(partEntries), partEntries.size());
            }
        }

        /** Writes one part already encoded ({@link PartSorter} streams its merge into the encoding). */
        void writeEncoded(int part, byte[] bytes, long entries) {
            if (entries == 0) {
                return;
            }
            String path = prefix + part + ".bin";
            IndexManifest.Part written = KeyIndex.writeEncoded(table.io(), cache.disk(), path, bytes, entries, 0);
            synchronized (this) {
                base.set(part, written);
                this.written.add(path);
            }
        }

        /** Files written so far, so a commit that does not land can remove them. */
        public synchronized List<String> files() {
            return List.copyOf(written);
        }

        /** The index the parts make, to look keys up in and to commit through {@link #withChanges}. */
        public synchronized KeyIndex finish() {
            IndexManifest m = IndexManifest.of(base, List.of(), 0);
            return new KeyIndex(table.io(), "(rebuilt, not committed yet)", directory(table), m, cache, Long.MIN_VALUE);
        }
    }

    private static Written finish(FileIO io, IndexManifest next, String manifestPath, List<String> written) {
        next.write(io, manifestPath);
        List<String> files = new ArrayList<>(written);
        files.add(manifestPath);
        return new Written(manifestPath, files);
    }

    static String directory(Table table) {
        return dev.ddb2iceberg.table.DerivedFiles.location(table) + "key-index/";
    }
}
