package dev.ddb2iceberg.merge;

import dev.ddb2iceberg.table.TableLayout;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.Table;

/**
 * How a merge finds the live rows of the keys it changes, in the snapshot it merges into: where
 * each row is (data file, position) and which change wrote it. An answer must be exact: every live
 * row of each key, and none of another key.
 */
interface LiveRowLookup {
  /**
   * What was found, and what it cost.
   *
   * @param rows live rows by key (a key with none is absent)
   * @param liveRowsByFile live rows in each data file that was read in full, by location; a file
   *     whose rows are all replaced or removed can then be dropped instead of given deletes
   * @param filesInTable data files in the snapshot
   * @param filesRead data files read to answer
   */
  record Found(Map<List<Object>, List<LiveRow>> rows, Map<String, Long> liveRowsByFile, int filesInTable,
      int filesRead) {
    static final Found NOTHING = new Found(Map.of(), Map.of(), 0, 0);
  }

  Found find(Table table, TableLayout layout, long snapshotId, Collection<List<Object>> keys);
}
