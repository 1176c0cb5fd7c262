package dev.ddb2iceberg.removals;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.commit.Checkpoint;
import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.function.MergerSettings;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.testkit.ExpectedTable;
import dev.ddb2iceberg.testkit.KeyedWorkload;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.StreamEvents;
import dev.ddb2iceberg.testkit.TableItems;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The removals files: a merge writes only its own removals as a delta, every {@link
 * RemovalsFile#MAX_DELTAS} deltas are folded into a new base, and a redelivered older change of a
 * removed item stays out whether the merger remembers the removals (warm) or reads them (cold).
 * Real parts: the embedded S3 server over HTTP and the SQLite catalog.
 */
@ExtendWith(S3ServerExtension.class)
class RemovalsFilesTest {
    @TempDir
    Path dir;

    @Test
    void eachMergeWritesADeltaOfItsOwnRemovalsFoldedIntoABaseAndOlderChangesOfRemovedItemsStayOut(
            EmbeddedS3Server server) {
        Map<String, String> env =
                new HashMap<>(new LocalStack(server, S3ServerExtension.newBucket(server), dir).environment("orders"));
        env.put("PARTITION_SPEC", "none"); // one data file a merge: the removals files are what is tested
        MergerSettings settings = MergerSettings.from(new Environment(env));
        Catalog catalog = settings.catalog().load();
        StagingStore store = new StagingStore(server.newClient(), settings.staging());
        ExpectedTable model = new ExpectedTable();
        KeyedWorkload w = new KeyedWorkload(21, 1000);
        Table[] table = new Table[1];
        Runnable[] merge = new Runnable[1];
        List<Change>[] batch = new List[1];
        merge[0] = () -> {
            assertTrue(new BatchStager(store)
                    .stage(StreamEvents.batch(batch[0]).getRecords())
                    .complete());
            model.apply(batch[0]);
            new Merger(catalog, settings.table(), store, settings.options()).run();
            table[0] = catalog.loadTable(TableIdentifier.of(
                    settings.table().namespace(), settings.table().name()));
            var actual = TableItems.read(table[0]);
            assertTrue(model.items().equals(actual), () -> ExpectedTable.diff(model.items(), actual));
        };

        List<Change> inserts = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            inserts.add(w.upsert(i, Operation.INSERT));
        }
        batch[0] = inserts;
        merge[0].run();

        // Older versions of items about to be removed, held back as a redelivery would be.
        List<Change> older = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            older.add(w.upsert(i, Operation.MODIFY));
        }
        int mostFiles = 0;
        boolean folded = false;
        for (int m = 0; m < RemovalsFile.MAX_DELTAS + 8; m++) {
            batch[0] = List.of(w.remove(m * 2, false), w.remove(m * 2 + 1, true), w.upsert(150 + m, Operation.MODIFY));
            merge[0].run();
            // The list file and the base and deltas it names.
            int files =
                    RemovalsFile.files(table[0].io(), Checkpoint.readProperty(table[0], PipelineProperties.REMOVALS))
                                    .size()
                            - 1;
            assertTrue(files <= RemovalsFile.MAX_DELTAS + 1, "merge " + m + " left " + files + " removals files");
            folded |= files < mostFiles;
            mostFiles = Math.max(mostFiles, files);
        }
        assertEquals(RemovalsFile.MAX_DELTAS + 1, mostFiles, "a base and MAX_DELTAS deltas before the fold");
        assertTrue(folded, "the deltas were folded into a base");

        // A new container reads the base and deltas: the older changes of removed items stay out.
        RemovalsFile.forgetCached();
        batch[0] = older.subList(0, 3);
        merge[0].run();
        // A warm one remembers them.
        batch[0] = older.subList(3, 6);
        merge[0].run();
        for (int i = 0; i < 6; i++) {
            assertTrue(!TableItems.read(table[0]).containsKey(w.key(i)), "removed item " + i + " came back");
        }

        // What orphan cleanup keeps covers every file any remaining snapshot's list names, also once the
        // snapshots of the lists that wrote the older deltas have expired (it reads only the oldest list).
        table[0].expireSnapshots()
                .retainLast(10)
                .expireOlderThan(System.currentTimeMillis())
                .cleanExpiredFiles(false)
                .commit();
        table[0].refresh();
        Set<String> kept = RemovalsFile.namedByAnySnapshot(table[0]);
        for (Snapshot s : table[0].snapshots()) {
            for (String f : RemovalsFile.files(table[0].io(), s.summary().get(PipelineProperties.REMOVALS))) {
                assertTrue(
                        kept.contains(f),
                        "snapshot " + s.snapshotId() + " names " + f + ", which orphan cleanup would" + " not keep");
            }
        }
    }
}
