package dev.ddb2iceberg.merge;

import dev.ddb2iceberg.table.TaskRows;
import dev.ddb2iceberg.util.Futures;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.Record;

/**
 * Small data files a merge rewrites instead of giving them deletes. A continuous merger writes a
 * small file per partition every few seconds, and the next merges touch those files again (recent
 * items are the likeliest to change): with deletes, each touch would add a delete file, and the
 * table's files, the merge's S3 writes and every reader's work would grow until compaction. So a
 * touched file under {@link MergeOptions#rewriteFilesBelowBytes} has its other live rows carried,
 * unchanged (sequence column included), into the merge's new files, and is dropped in the same
 * commit, with its own deletes. A partition then keeps one small growing file, not hundreds.
 */
final class SmallFileRewrite {
  private SmallFileRewrite() {}

  /**
   * The live rows of each file except those at the positions the merge deletes, as rows of the
   * table's current schema; the files are read side by side on {@code pool}.
   */
  static List<Record> liveRowsBut(Table table, List<Map.Entry<FileScanTask, List<LiveRow>>> files,
      ExecutorService pool) {
    if (files.isEmpty()) {
      return List.of();
    }
    List<Future<List<Record>>> reads = new ArrayList<>();
    for (Map.Entry<FileScanTask, List<LiveRow>> f : files) {
      reads.add(pool.submit(() -> liveRowsBut(table, f.getKey(), f.getValue())));
    }
    List<Record> out = new ArrayList<>();
    for (Future<List<Record>> read : reads) {
      out.addAll(Futures.join(read, "reading small data files to rewrite"));
    }
    return out;
  }

  private static List<Record> liveRowsBut(Table table, FileScanTask task, List<LiveRow> deleted) {
    Set<Long> gone = new HashSet<>();
    deleted.forEach(r -> gone.add(r.position()));
    List<Record> out = new ArrayList<>();
    TaskRows.withPositions(table, task, (position, row) -> {
      if (!gone.contains(position)) {
        out.add(row);
      }
    });
    return out;
  }
}
