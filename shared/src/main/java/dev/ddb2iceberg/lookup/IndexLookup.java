package dev.ddb2iceberg.lookup;

import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.index.DamagedIndexException;
import dev.ddb2iceberg.index.IndexCache;
import dev.ddb2iceberg.index.IndexEntries;
import dev.ddb2iceberg.index.IndexKeys;
import dev.ddb2iceberg.index.KeyIndex;
import dev.ddb2iceberg.table.TableLayout;
import dev.ddb2iceberg.util.Slices;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.util.AbstractList;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileContent;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.util.ContentFileUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Finds live rows through the {@link KeyIndex} the base snapshot names, so a merge reads index
 * parts of the keys it changes instead of data files; records this commit's rows as a delta of
 * the index. One instance serves one commit attempt.
 *
 * <p>The index is trusted only when the base snapshot's own summary names it and every data file
 * it points a key to is live in that snapshot. Otherwise (a table written by another tool or an
 * older version, a commit by maintenance, a lost or damaged index file) the index is rebuilt from
 * the key columns of every data file, with one log line saying why, and the commit writes the
 * rebuilt index.
 */
public final class IndexLookup implements LiveRowLookup {
    private static final Logger LOG = LoggerFactory.getLogger(IndexLookup.class);

    private final ExecutorService pool;
    private final IndexCache cache;
    private final int parts;
    private final long buildMemoryBytes;
    /** A fan-out worker's lookup: it reads the base snapshot's index and writes nothing (see {@link #readOnly}). */
    private final boolean readOnly;

    private Long baseSnapshotId;
    private int rewrittenFilesRead; // data files read to follow other writers' rewrites
    private KeyIndex index; // the base snapshot's index: trusted, or rebuilt
    private final List<String> writtenFiles =
            new ArrayList<>(); // index files this attempt wrote (a rebuild's parts, moves)

    /** @param buildMemoryBytes memory a rebuild may use; past it, it sorts through runs in storage */
    public IndexLookup(ExecutorService pool, IndexCache cache, int parts, long buildMemoryBytes) {
        this(pool, cache, parts, buildMemoryBytes, false);
    }

    private IndexLookup(ExecutorService pool, IndexCache cache, int parts, long buildMemoryBytes, boolean readOnly) {
        this.pool = pool;
        this.cache = cache;
        this.parts = parts;
        this.buildMemoryBytes = buildMemoryBytes;
        this.readOnly = readOnly;
    }

    /**
     * A lookup that only reads: one of many workers of a fanned-out merge, whose commit step alone
     * writes the index. It folds nothing ahead, and where a writer would rebuild the index or record
     * another writer's rewrite, it refuses (IllegalStateException, saying why): the fan-out's plan
     * checks that the base snapshot's index is trusted as it is.
     */
    public static IndexLookup readOnly(ExecutorService pool, IndexCache cache) {
        return new IndexLookup(pool, cache, 0, 0, true);
    }

    @Override
    public Found find(Table table, TableLayout layout, Long snapshotId, List<List<Object>> keys) {
        if (snapshotId == null) {
            index = KeyIndex.newBuild(table, parts, cache).finish(); // a new table: its index starts with this commit
            return Found.nothing(keys.size());
        }
        baseSnapshotId = snapshotId;
        Snapshot snapshot = table.snapshot(snapshotId);
        Map<String, FileScanTask> tasks = plan(table, snapshotId);
        // The keys are distinct and their encoding is one to one, so the encoded keys are too. The
        // index answers each key at its position in this list.
        List<byte[]> encoded = Slices.map(keys, pool, IndexKeys::encode, "encoding keys for the key index");

        IndexEntries.Entry[] hits = null;
        List<LiveRow> hitRows = null;
        String why = null;
        KeyIndex.Resolved resolved = KeyIndex.resolve(table, snapshot);
        String manifest = resolved.manifest();
        if (manifest == null) {
            why = resolved.why();
        } else {
            try {
                List<String> moves = new ArrayList<>();
                for (KeyIndex.Step step : resolved.steps()) {
                    moves.add(
                            step.moves() != null
                                    ? step.moves()
                                    : movesOfRewrite(table, layout, step.rewrittenBy(), tasks));
                }
                index = KeyIndex.open(table, manifest, moves, cache);
                hits = index.lookupEach(encoded, pool);
                hitRows = rowsOf(hits, tasks, pool);
                String missing = fileNotIn(hits, hitRows);
                if (missing != null) {
                    why = "key index " + manifest + " points a key to data file " + missing + ", which snapshot "
                            + snapshotId + " does not hold";
                }
            } catch (DamagedIndexException damaged) {
                why = damaged.getMessage();
            }
        }
        int filesRead = rewrittenFilesRead;
        if (readOnly && why != null) {
            throw new IllegalStateException(
                    "the key index of snapshot " + snapshotId + " cannot be used as it is: " + why);
        }
        if (!readOnly && why == null && index != null) {
            index.foldAhead(table); // this commit's share of folding, beside the rest of the merge
        }
        if (why != null) {
            rebuild(table, layout, tasks, why);
            hits = index.lookupEach(encoded, pool);
            hitRows = rowsOf(hits, tasks, pool);
            filesRead = tasks.size();
        }

        // A key has one live row at most here: each key's list is made when asked for, not held.
        List<LiveRow> hit = hitRows;
        List<List<LiveRow>> rows = new AbstractList<>() {
            @Override
            public List<LiveRow> get(int i) {
                LiveRow row = hit.get(i);
                return row == null ? List.of() : List.of(row);
            }

            @Override
            public int size() {
                return hit.size();
            }
        };
        // Every file's live rows where its deletes make them certain (a lookup by file follows).
        Map<String, Long> liveRowsByFile = new HashMap<>();
        tasks.forEach((location, task) -> {
            Long live = liveRows(task);
            if (live != null) {
                liveRowsByFile.put(location, live);
            }
        });
        return new Found(rows, liveRowsByFile, List.copyOf(tasks.values()), filesRead);
    }

    /**
     * Each hit's row (its file's task, its position and sequence number) on every core; null where
     * there is no hit, or where the snapshot does not hold the hit's data file (see {@link #fileNotIn}).
     * The map of tasks is only read there.
     */
    private static List<LiveRow> rowsOf(
            IndexEntries.Entry[] hits, Map<String, FileScanTask> tasks, ExecutorService pool) {
        return Slices.map(
                Arrays.asList(hits),
                pool,
                e -> {
                    FileScanTask task = e == null ? null : tasks.get(e.file());
                    return task == null ? null : new LiveRow(task, e.position(), e.sequence());
                },
                "resolving the key index's hits");
    }

    /** A data file some hit points to that the snapshot does not hold (its row is null), or null. */
    private static String fileNotIn(IndexEntries.Entry[] hits, List<LiveRow> rows) {
        for (int i = 0; i < hits.length; i++) {
            if (hits[i] != null && rows.get(i) == null) {
                return hits[i].file();
            }
        }
        return null;
    }

    @Override
    public Recorded record(
            Table table, TableLayout layout, List<WrittenRow> written, Collection<List<Object>> removed) {
        return recordEntries(table, layout, entriesOf(written, removed));
    }

    /**
     * The index entries of written rows (their keys and sequence numbers taken as they were
     * written) and the tombstones of removed keys: what {@link #record} records, and what a fan-out
     * worker hands its commit step.
     */
    public static List<IndexEntries.Entry> entriesOf(List<WrittenRow> written, Collection<List<Object>> removed) {
        List<IndexEntries.Entry> entries = new ArrayList<>(written.size() + removed.size());
        for (WrittenRow r : written) {
            entries.add(new IndexEntries.Entry(r.key(), r.file(), r.position(), r.sequence()));
        }
        for (List<Object> key : removed) {
            entries.add(new IndexEntries.Entry(IndexKeys.encode(key), null, 0, BigInteger.ZERO)); // a tombstone
        }
        return entries;
    }

    /** Records {@code entries} (see {@link #entriesOf}) as this commit's delta of the index found by {@link #find}. */
    public Recorded recordEntries(Table table, TableLayout layout, List<IndexEntries.Entry> entries) {
        if (readOnly) {
            throw new IllegalStateException("a read-only lookup records nothing");
        }
        IndexEntries.Builder changes = new IndexEntries.Builder(entries.size());
        entries.forEach(changes::add);
        IndexEntries delta = changes.build();
        KeyIndex.Written next;
        try {
            next = index.withChanges(table, delta, pool);
        } catch (DamagedIndexException damaged) {
            // Folding deltas reads parts this run's lookups did not need; one of them is damaged.
            rebuild(table, layout, plan(table, baseSnapshotId), damaged.getMessage());
            next = index.withChanges(table, delta, pool);
        }
        List<String> files = new ArrayList<>(writtenFiles);
        files.addAll(next.files());
        return new Recorded(Map.of(PipelineProperties.KEY_INDEX, next.manifest()), files);
    }

    /**
     * Where another writer's rewrite (S3 Tables' or Spark's compaction) put the rows it moved: the
     * keys of the data files it added that the base snapshot still holds (with their deletes), read
     * once and written as a moves delta, which the next index version names like our own
     * compaction's. Its cost follows what was rewritten, not the table. A rewrite that dropped rows
     * leaves entries pointing to files that are gone; a lookup that meets one rebuilds the index.
     */
    private String movesOfRewrite(Table table, TableLayout layout, long snapshotId, Map<String, FileScanTask> tasks) {
        if (readOnly) {
            throw new DamagedIndexException("snapshot " + snapshotId
                    + " by another writer rewrote data files, whose rows the index does not follow yet");
        }
        List<FileScanTask> added = new ArrayList<>();
        for (DataFile f : table.snapshot(snapshotId).addedDataFiles(table.io())) {
            FileScanTask task = tasks.get(f.location());
            if (task != null) {
                added.add(task); // a file a later rewrite replaced again is that rewrite's to move
            }
        }
        LOG.info(
                "Snapshot {} by another writer rewrote data files: reading the keys of the {} it added, to move their"
                        + " rows in the key index",
                snapshotId,
                added.size());
        String path = KeyIndex.writeMoves(table, IndexRebuild.entriesOf(table, layout, added, pool), cache);
        writtenFiles.add(path);
        rewrittenFilesRead += added.size();
        return path;
    }

    /** Rebuilds the base snapshot's index from its data files, saying why in one line. */
    private void rebuild(Table table, TableLayout layout, Map<String, FileScanTask> tasks, String why) {
        LOG.warn("Rebuilding the key index from the key columns of {} data files: {}", tasks.size(), why);
        KeyIndex.Build build = IndexRebuild.build(table, layout, tasks.values(), parts, buildMemoryBytes, cache, pool);
        writtenFiles.addAll(build.files());
        index = build.finish();
    }

    /** The snapshot's data files, with their deletes, by location. */
    private static Map<String, FileScanTask> plan(Table table, long snapshotId) {
        Map<String, FileScanTask> tasks = new HashMap<>();
        try (CloseableIterable<FileScanTask> planned =
                table.newScan().useSnapshot(snapshotId).planFiles()) {
            planned.forEach(t -> tasks.put(t.file().location(), t));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return tasks;
    }

    /**
     * Live rows of a data file when its deletes make that certain: none, or exactly one file-scoped
     * delete file or deletion vector (whose count is the file's deleted positions). Null otherwise.
     */
    private static Long liveRows(FileScanTask task) {
        List<DeleteFile> deletes = task.deletes();
        if (deletes.isEmpty()) {
            return task.file().recordCount();
        }
        if (deletes.size() == 1
                && deletes.get(0).content() == FileContent.POSITION_DELETES
                && task.file().location().equals(ContentFileUtil.referencedDataFileLocation(deletes.get(0)))) {
            return task.file().recordCount() - deletes.get(0).recordCount();
        }
        return null;
    }
}
