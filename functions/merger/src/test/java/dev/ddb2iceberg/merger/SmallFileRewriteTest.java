package dev.ddb2iceberg.merger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.LocalStack;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.table.TableItems;
import dev.ddb2iceberg.workload.ExpectedTable;
import dev.ddb2iceberg.workload.KeyedWorkload;
import dev.ddb2iceberg.workload.StreamEvents;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.io.CloseableIterable;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A merge that touches a small data file rewrites it (its other rows move into the merge's new
 * files) instead of giving it a delete file, as merges do by default. Against the real
 * parts (embedded S3 over HTTP, the SQLite catalog), with the key index and with the scan: after
 * every merge the table equals the model, so rows moved by one merge are found where they went by
 * the next.
 */
@ExtendWith(S3ServerExtension.class)
class SmallFileRewriteTest {
  @TempDir Path dir;
  private final Map<String, String> env = new HashMap<>();
  private final ExpectedTable model = new ExpectedTable();
  private MergerSettings settings;
  private Catalog catalog;
  private StagingStore store;

  @BeforeEach
  void setUp(EmbeddedS3Server server) {
    env.putAll(new LocalStack(server, S3ServerExtension.newBucket(server), dir).environment("orders"));
    env.put("PARTITION_SPEC", "bucket(2, pk)");
    settings = MergerSettings.from(new Environment(env));
    catalog = settings.catalog().load();
    store = new StagingStore(server.newClient(), settings.staging());
  }

  private Table table() {
    return catalog.loadTable(TableIdentifier.of(settings.table().namespace(), settings.table().name()));
  }

  private void mergeBatch(List<Change> batch, MergeOptions options) {
    assertTrue(new BatchStager(store).stage(StreamEvents.batch(batch).getRecords()).complete());
    model.apply(batch);
    new Merger(catalog, settings.table(), store, options).run();
    var actual = TableItems.read(table());
    assertTrue(model.items().equals(actual), () -> ExpectedTable.diff(model.items(), actual));
  }

  private record Files(Set<String> data, int deleteFiles) {}

  private Files files() {
    Set<String> data = new HashSet<>();
    int deletes = 0;
    try (CloseableIterable<FileScanTask> tasks = table().newScan().planFiles()) {
      for (FileScanTask t : tasks) {
        data.add(t.file().location());
        deletes += t.deletes().size();
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return new Files(data, deletes);
  }

  @ParameterizedTest(name = "key index {0}")
  @ValueSource(booleans = {true, false})
  void aSmallFileAMergeTouchesIsRewrittenWithoutADeleteFileAndItsMovedRowsAreFoundByTheNextMerge(boolean keyIndex) {
    MergeOptions rewrite = settings.options().withKeyIndex(keyIndex)
        .withRewriteFilesBelow(MergeOptions.REWRITE_BELOW_BYTES);
    KeyedWorkload w = new KeyedWorkload(11, 1000);
    List<Change> inserts = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      inserts.add(w.upsert(i, Operation.INSERT));
    }
    mergeBatch(inserts, rewrite);
    Files first = files();

    // Update a few items and remove one: each touched file is rewritten, none gets deletes.
    List<Change> touch = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      touch.add(w.upsert(i, Operation.MODIFY)); // ten keys: both buckets
    }
    touch.add(w.remove(77, false));
    mergeBatch(touch, rewrite);
    Files second = files();
    assertEquals(0, second.deleteFiles(), "delete files after rewriting the touched small files");
    assertTrue(second.data().stream().noneMatch(first.data()::contains),
        "every file the merge touched was replaced: before " + first.data() + ", after " + second.data());

    // The next merges change rows that moved: found at their new place (no duplicate, no stale row).
    for (int round = 0; round < 3; round++) {
      List<Change> more = new ArrayList<>();
      for (int i = round; i < 200; i += 7) {
        more.add(i % 5 == 0 ? w.remove(i, false) : w.upsert(i, Operation.MODIFY));
      }
      more.add(w.upsert(300 + round, Operation.INSERT));
      mergeBatch(more, rewrite);
    }
    assertEquals(0, files().deleteFiles(), "no delete file ever");
    assertTrue(files().data().size() <= 2, "one small file per partition (2 buckets): " + files().data());

    // With folding off (REWRITE_FILES_BELOW_BYTES=0), the same kind of merge leaves delete files.
    mergeBatch(List.of(w.upsert(5, Operation.MODIFY), w.upsert(151, Operation.MODIFY)),
        rewrite.withRewriteFilesBelow(0));
    assertFalse(files().deleteFiles() == 0, "with rewriting off, updates leave delete files");
  }
}
