package dev.ddb2iceberg.index;

import dev.ddb2iceberg.commit.PipelineProperties;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import org.apache.iceberg.DataOperations;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.io.FileIO;

/**
 * The key index of one snapshot: for every live row, its key, data file, position and the
 * sequence number of the change that wrote it, so a merge finds the live rows of the keys it
 * changes by reading a few index parts instead of the key columns of every data file.
 *
 * <p>Layout, under {@code <table location>/key-index/}: the keys are spread over {@code parts}
 * parts by a hash of the key; each part has a base file of sorted entries, and each commit adds
 * one small delta file with its own entries (new rows, and tombstones for removed items) instead
 * of rewriting the parts it touches. A manifest lists the files; the snapshot summary property
 * {@link PipelineProperties#KEY_INDEX} names the manifest, written in the same commit as the rows it describes. When
 * deltas pile up past {@link #MAX_DELTAS}, the commit merges them into one, and once they hold
 * {@link #FOLD_SHARE} of the parts' entries, folds them into the parts they touch.
 *
 * <p>Derived state, never the truth: an index is used only for the snapshot whose own summary
 * names it (another writer's commit names none), and a file that is missing or damaged makes the
 * merge rebuild it from the table.
 */
public final class KeyIndex {
    public static final String NO_MOVES = "none";
    /** Deltas kept before a commit folds them into the parts. */
    public static final int MAX_DELTAS = 16;

    private final FileIO io;
    private final String location;
    private final IndexManifest manifest;
    private final IndexCache cache;

    private KeyIndex(FileIO io, String location, IndexManifest manifest, IndexCache cache) {
        this.io = io;
        this.location = location;
        this.manifest = manifest;
        this.cache = cache;
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
     * Every file of the index the snapshot names (manifest, parts, deltas), for orphan cleanup: files
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
        List<String> files = new ArrayList<>();
        files.add(manifest);
        try {
            files.addAll(IndexManifest.read(table.io(), manifest).files());
        } catch (DamagedIndexException damaged) {
            // nothing more to keep: the next merge rebuilds the index
        }
        return files;
    }

    /** Opens the index a manifest describes; a missing or damaged manifest throws {@link DamagedIndexException}. */
    public static KeyIndex open(Table table, String manifestLocation, IndexCache cache) {
        return new KeyIndex(table.io(), manifestLocation, IndexManifest.read(table.io(), manifestLocation), cache);
    }

    /** Opens an index: a manifest's files plus later moves deltas (oldest first), as deltas. */
    public static KeyIndex open(Table table, String manifest, List<String> moves, IndexCache cache) {
        KeyIndex index = open(table, manifest, cache);
        if (moves.isEmpty()) {
            return index;
        }
        IndexManifest m = index.manifest;
        List<String> deltas = new ArrayList<>(m.deltas());
        long entries = m.deltaEntries();
        long bytes = m.bytes();
        for (String move : moves) {
            deltas.add(move);
            entries += index.load(move).size();
            bytes += table.io().newInputFile(move).getLength();
        }
        return new KeyIndex(
                table.io(),
                manifest,
                new IndexManifest(1, m.parts(), m.base(), deltas, m.baseEntries(), entries, bytes),
                cache);
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
     * The entries of these keys (by {@link IndexKeys#encode}) that have live rows; the parts they
     * fall in are read in parallel (or come from the cache). A damaged file throws
     * {@link DamagedIndexException}.
     */
    public Map<IndexEntries.ByteKey, IndexEntries.Entry> lookup(Collection<byte[]> keys, ExecutorService pool) {
        List<IndexEntries> deltas = new ArrayList<>();
        for (String delta : manifest.deltas()) {
            deltas.add(load(delta));
        }
        Map<Integer, List<byte[]>> byPart = new HashMap<>();
        for (byte[] key : keys) {
            byPart.computeIfAbsent(IndexKeys.part(key, manifest.parts()), p -> new ArrayList<>())
                    .add(key);
        }
        List<Future<List<IndexEntries.Entry>>> reads = new ArrayList<>();
        for (Map.Entry<Integer, List<byte[]>> part : byPart.entrySet()) {
            reads.add(pool.submit(() -> lookupInPart(part.getKey(), part.getValue(), deltas)));
        }
        Map<IndexEntries.ByteKey, IndexEntries.Entry> found = new HashMap<>();
        for (Future<List<IndexEntries.Entry>> read : reads) {
            for (IndexEntries.Entry e : dev.ddb2iceberg.util.Futures.join(read, "reading the key index")) {
                found.put(new IndexEntries.ByteKey(e.key()), e);
            }
        }
        return found;
    }

    private List<IndexEntries.Entry> lookupInPart(int part, List<byte[]> keys, List<IndexEntries> deltas) {
        String basePath = manifest.base().get(part);
        IndexEntries base = basePath == null ? IndexEntries.EMPTY : load(basePath);
        List<IndexEntries.Entry> out = new ArrayList<>();
        for (byte[] key : keys) {
            IndexEntries.Entry e = null;
            for (int d = deltas.size() - 1; d >= 0 && e == null; d--) {
                e = deltas.get(d).find(key);
            }
            if (e == null) {
                e = base.find(key);
            }
            if (e != null && !e.isTombstone()) {
                out.add(e);
            }
        }
        return out;
    }

    private IndexEntries load(String path) {
        return cache.get(path, p -> IndexFile.read(io, p, cache::recordRead));
    }

    /** Files a new index version wrote, so a commit that does not land can remove them. */
    public record Written(String manifest, List<String> files) {}

    /**
     * Deltas are folded into the parts once their entries reach this share of the parts' entries;
     * before that, past {@link #MAX_DELTAS} they are merged into one delta. A fold rewrites nearly
     * every part (the changes of many merges touch them all), so its cost follows the table: at 2%
     * it comes once per 2% of the table changed, and the merge of deltas in between costs what the
     * deltas hold. (Folding every 16 merges rewrote a 100M-row index, 1.2 GB, each time.)
     */
    public static final double FOLD_SHARE = 0.02;

    /**
     * The next version: this one plus {@code changes} (this commit's entries and tombstones) as a
     * new delta; past {@link #MAX_DELTAS}, either all deltas merged into one or, once they reach
     * {@link #FOLD_SHARE} of the parts, all folded into the parts they touch.
     */
    public Written withChanges(Table table, IndexEntries changes, ExecutorService pool) {
        String dir = directory(table);
        String id = UUID.randomUUID().toString();
        List<String> written = new ArrayList<>();
        // An empty index (a new table's) gets its parts at once, not a delta over nothing.
        boolean empty = manifest.baseEntries() == 0 && manifest.deltas().isEmpty();
        if (!empty && manifest.deltas().size() + 1 <= MAX_DELTAS) {
            String delta = dir + id + "-delta.bin";
            long bytes = manifest.bytes() + IndexFile.write(io, delta, changes);
            cache.put(delta, changes);
            written.add(delta);
            List<String> deltas = new ArrayList<>(manifest.deltas());
            deltas.add(delta);
            IndexManifest next = new IndexManifest(
                    1,
                    manifest.parts(),
                    manifest.base(),
                    deltas,
                    manifest.baseEntries(),
                    manifest.deltaEntries() + changes.size(),
                    bytes);
            return finish(io, next, dir + id + "-manifest.json", written);
        }
        if (!empty && manifest.deltaEntries() + changes.size() < FOLD_SHARE * manifest.baseEntries()) {
            // Merge the deltas (newest wins, tombstones kept) into one: no part is rewritten.
            IndexEntries merged = IndexEntries.EMPTY;
            for (String d : manifest.deltas()) {
                merged = merged.overlay(load(d), true);
            }
            merged = merged.overlay(changes, true);
            String delta = dir + id + "-delta.bin";
            long bytes = manifest.bytes() - sizeOf(io, manifest.deltas()) + IndexFile.write(io, delta, merged);
            cache.put(delta, merged);
            written.add(delta);
            IndexManifest next = new IndexManifest(
                    1, manifest.parts(), manifest.base(), List.of(delta), manifest.baseEntries(), merged.size(), bytes);
            return finish(io, next, dir + id + "-manifest.json", written);
        }
        // Fold: every delta (and the new changes), part by part, over the parts' base files.
        List<IndexEntries> layers = new ArrayList<>();
        manifest.deltas().forEach(d -> layers.add(load(d)));
        layers.add(changes);
        // Each part's entries, packed, in layer order: the newest entry of a key wins.
        Map<Integer, IndexEntries.Builder> byPart = new HashMap<>();
        for (IndexEntries layer : layers) {
            String[] files = layer.files();
            for (int i = 0; i < layer.size(); i++) {
                byte[] key = layer.key(i);
                int ref = layer.fileRef(i);
                byPart.computeIfAbsent(IndexKeys.part(key, manifest.parts()), p -> new IndexEntries.Builder())
                        .add(key, ref < 0 ? null : files[ref], layer.position(i), layer.sequence(i));
            }
        }
        List<String> base = new ArrayList<>(manifest.base());
        List<Future<long[]>> folds = new ArrayList<>();
        for (Map.Entry<Integer, IndexEntries.Builder> part : byPart.entrySet()) {
            int p = part.getKey();
            String path = dir + id + "-part-" + p + ".bin";
            written.add(path);
            String old = base.get(p);
            base.set(p, path);
            IndexEntries.Builder newer = part.getValue();
            folds.add(pool.submit(() -> {
                IndexEntries before = old == null ? IndexEntries.EMPTY : load(old);
                IndexEntries folded = before.overlay(newer.build(), false);
                IndexFile.write(io, path, folded);
                cache.put(path, folded);
                return new long[] {before.size(), folded.size()};
            }));
        }
        long entries = manifest.baseEntries();
        for (Future<long[]> f : folds) {
            long[] counts = dev.ddb2iceberg.util.Futures.join(f, "folding key index deltas");
            entries += counts[1] - counts[0];
        }
        IndexManifest next = new IndexManifest(1, manifest.parts(), base, List.of(), entries, 0, sizeOf(io, base));
        return finish(io, next, dir + id + "-manifest.json", written);
    }

    /**
     * Writes entries to a file of the index's folder named {@code name} (the parallel export load's
     * workers' fragments and the parts built from them); returns its size in storage.
     */
    public static long writeFile(Table table, String name, IndexEntries entries) {
        return IndexFile.write(table.io(), directory(table) + name, entries);
    }

    /** The location a file named by {@link #writeFile} gets. */
    public static String fileLocation(Table table, String name) {
        return directory(table) + name;
    }

    /** Reads a file of entries; a missing or damaged one throws {@link DamagedIndexException}. */
    public static IndexEntries readFile(Table table, String location) {
        return IndexFile.read(table.io(), location);
    }

    /**
     * Writes the manifest of an index made of these parts' base files (null for an empty part) and
     * no deltas, built outside a merge (the parallel export load); returns the manifest's location,
     * for a commit's summary as {@link PipelineProperties#KEY_INDEX}.
     */
    public static String writeManifest(Table table, List<String> base, long entries, long bytes) {
        String path = directory(table) + UUID.randomUUID() + "-manifest.json";
        new IndexManifest(1, base.size(), new ArrayList<>(base), List.of(), entries, 0, bytes).write(table.io(), path);
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
        private final List<String> base;
        private final List<String> written = new ArrayList<>();
        private long entries;
        private long bytes;

        private Build(Table table, int parts, IndexCache cache) {
            this.table = table;
            this.prefix = directory(table) + UUID.randomUUID() + "-part-";
            this.cache = cache;
            this.base = new ArrayList<>(Collections.nCopies(parts, (String) null));
        }

        /** Writes one part's entries (live rows only); a part never written stays empty. */
        public void writePart(int part, IndexEntries partEntries) {
            if (partEntries.size() == 0) {
                return;
            }
            String path = prefix + part + ".bin";
            long size = IndexFile.write(table.io(), path, partEntries);
            cache.put(path, partEntries);
            synchronized (this) {
                base.set(part, path);
                written.add(path);
                entries += partEntries.size();
                bytes += size;
            }
        }

        /** Files written so far, so a commit that does not land can remove them. */
        public synchronized List<String> files() {
            return List.copyOf(written);
        }

        /** The index the parts make, to look keys up in and to commit through {@link #withChanges}. */
        public synchronized KeyIndex finish() {
            IndexManifest m = new IndexManifest(
                    1, base.size(), new ArrayList<>(base), List.of(), entries, 0, bytes); // null: an empty part
            return new KeyIndex(table.io(), "(rebuilt, not committed yet)", m, cache);
        }
    }

    private static Written finish(FileIO io, IndexManifest next, String manifestPath, List<String> written) {
        next.write(io, manifestPath);
        List<String> files = new ArrayList<>(written);
        files.add(manifestPath);
        return new Written(manifestPath, files);
    }

    /** Size of the parts in storage (a fold keeps parts it did not touch, whose sizes the manifest does not keep). */
    private static long sizeOf(FileIO io, List<String> base) {
        long bytes = 0;
        for (String p : base) {
            if (p != null) {
                bytes += io.newInputFile(p).getLength();
            }
        }
        return bytes;
    }

    static String directory(Table table) {
        return dev.ddb2iceberg.table.DerivedFiles.location(table) + "key-index/";
    }
}
