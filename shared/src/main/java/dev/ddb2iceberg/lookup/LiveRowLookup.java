package dev.ddb2iceberg.lookup;

import dev.ddb2iceberg.table.TableLayout;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Table;

/**
 * How a merge finds the live rows of the keys it changes, in the snapshot it merges into: where
 * each row is (data file, position) and which change wrote it. An answer must be exact: every live
 * row of each key, and none of another key. Two implementations: {@link ScanLookup} reads key
 * columns, {@link IndexLookup} reads the key index; tests hold one against the other.
 */
public interface LiveRowLookup {
    /**
     * What was found, and what it cost.
     *
     * @param rows each key's live rows (empty for a key with none), at its position in the keys asked for
     * @param liveRowsByFile live rows in each data file where that is known, by location; a file
     *     whose rows are all replaced or removed can then be dropped instead of given deletes
     * @param files every data file of the snapshot, with its deletes (the merge picks small files to fold from them)
     * @param filesRead data files (or index files) read to answer
     */
    record Found(List<List<LiveRow>> rows, Map<String, Long> liveRowsByFile, List<FileScanTask> files, int filesRead) {
        /** Nothing found for {@code keys} keys: the lookup of an empty table. */
        static Found nothing(int keys) {
            return new Found(Collections.nCopies(keys, List.of()), Map.of(), List.of(), 0);
        }

        /** Data files in the snapshot. */
        public int filesInTable() {
            return files.size();
        }
    }

    /** What a commit records for the next lookup: snapshot summary properties, and the files holding them. */
    record Recorded(Map<String, String> properties, List<String> files) {
        static final Recorded NOTHING = new Recorded(Map.of(), List.of());
    }

    /**
     * Live rows of the keys (each once) in snapshot {@code snapshotId}, or in an empty table when it
     * is null; the answer is by position, not by key, so that a merge of a million keys holds no map
     * of them while it writes.
     */
    Found find(Table table, TableLayout layout, Long snapshotId, List<List<Object>> keys);

    /**
     * Called once the commit's rows are written, before it commits: records where the written rows
     * are and which keys lost their rows ({@code removed}), for the lookups of later commits.
     */
    Recorded record(Table table, TableLayout layout, List<WrittenRow> written, Collection<List<Object>> removed);
}
