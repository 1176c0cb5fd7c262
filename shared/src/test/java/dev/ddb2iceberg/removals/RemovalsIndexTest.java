package dev.ddb2iceberg.removals;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.commit.Checkpoint;
import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.function.MergerSettings;
import dev.ddb2iceberg.index.IndexCache;
import dev.ddb2iceberg.index.KeyIndex;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagedFormat;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.status.TableStatus;
import dev.ddb2iceberg.table.DerivedFiles;
import dev.ddb2iceberg.table.TableLayout;
import dev.ddb2iceberg.testkit.ExpectedTable;
import dev.ddb2iceberg.testkit.KeyedWorkload;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.StreamEvents;
import dev.ddb2iceberg.testkit.TableItems;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The removals index: merges record their removals in it and look up only the keys they need; a
 * redelivered older change of a removed item stays out whether the merger caches the index (warm)
 * or reads it (cold); an item put back comes back; folds forget removals past their time; a table
 * from before the index moves its removals files into one; a damaged index stops the merge (it is
 * the truth, nothing rebuilds it); orphan cleanup keeps every file a snapshot names. Real parts:
 * the embedded S3 server over HTTP and the SQLite catalog.
 */
@ExtendWith(S3ServerExtension.class)
class RemovalsIndexTest {
    @TempDir
    Path dir;

    private final ExecutorService pool = Executors.newFixedThreadPool(4);

    @AfterEach
    void stopPool() {
        pool.shutdownNow();
    }

    /** A merger over one table, and what the table should hold. */
    private final class Pipeline {
        final MergerSettings settings;
        final Catalog catalog;
        final StagingStore store;
        final ExpectedTable model = new ExpectedTable();
        Table table;

        Pipeline(EmbeddedS3Server server) {
            Map<String, String> env = new HashMap<>(
                    new LocalStack(server, S3ServerExtension.newBucket(server), dir).environment("orders"));
            env.put("PARTITION_SPEC", "none"); // one data file a merge: the removals are what is tested
            settings = MergerSettings.from(new Environment(env));
            catalog = settings.catalog().load();
            store = new StagingStore(server.newClient(), settings.staging());
        }

        /** Stages {@code batch} and merges it; the table must then equal the model. */
        void merge(List<Change> batch, MergeOptions options) {
            stage(batch);
            new Merger(catalog, settings.table(), store, options).run();
            check();
        }

        void merge(List<Change> batch) {
            merge(batch, settings.options());
        }

        void stage(List<Change> batch) {
            assertTrue(new BatchStager(store)
                    .stage(StreamEvents.batch(batch).getRecords())
                    .complete());
            model.apply(batch);
        }

        void check() {
            table = catalog.loadTable(TableIdentifier.of(
                    settings.table().namespace(), settings.table().name()));
            var actual = TableItems.read(table);
            assertTrue(model.items().equals(actual), () -> ExpectedTable.diff(model.items(), actual));
        }

        String property() {
            return Checkpoint.readProperty(table, PipelineProperties.REMOVALS);
        }

        /** What {@code ddb2iceberg status} shows of the removals. */
        TableStatus.RemovalsIndexStatus status() {
            table.refresh();
            TableStatus status = TableStatus.of("orders", table, store, 128L << 20, Clock.systemUTC());
            assertTrue(
                    status.removalsIndex() == null || status.text().contains("removed      "),
                    () -> "status shows the removals index on a line of its own:\n" + status.text());
            return status.removalsIndex();
        }
    }

    @Test
    void mergesRecordRemovalsInTheIndexAndOlderChangesOfRemovedItemsStayOutWarmOrCold(EmbeddedS3Server server) {
        Pipeline p = new Pipeline(server);
        KeyedWorkload w = new KeyedWorkload(21, 1000);
        p.merge(inserts(w, 0, 200));

        // Older versions of items about to be removed, held back as a redelivery would be.
        List<Change> older = new ArrayList<>();
        for (int i = 0; i < 9; i++) {
            older.add(w.upsert(i, Operation.MODIFY));
        }
        for (int m = 0; m < 12; m++) {
            p.merge(List.of(w.remove(m * 2, false), w.remove(m * 2 + 1, true), w.upsert(150 + m, Operation.MODIFY)));
            String manifest = p.property();
            assertTrue(
                    manifest.startsWith(DerivedFiles.location(p.table) + "removals-index/")
                            && manifest.endsWith("-manifest.json"),
                    "merge " + m + " names " + manifest + ", not a removals index manifest");
        }

        // A new container reads the index; a warm one has it cached: either way the older changes stay out.
        p.merge(older.subList(0, 3), p.settings.options().withoutKeyIndexCache());
        p.merge(older.subList(3, 6));
        // In a merge with other changes, and in the parallel lookups of many keys.
        List<Change> mixed = new ArrayList<>(older.subList(6, 9));
        mixed.addAll(inserts(w, 200, 400));
        p.merge(mixed);
        for (int i = 0; i < 9; i++) {
            assertFalse(TableItems.read(p.table).containsKey(w.key(i)), "removed item " + i + " came back");
        }

        // An item put back (a newer upsert) comes back, and leaves the index: a later older copy of
        // the removal's time is judged by its row.
        String before = p.property();
        p.merge(List.of(w.upsert(4, Operation.INSERT)));
        assertTrue(TableItems.read(p.table).containsKey(w.key(4)), "an item put back after its removal stayed out");
        assertTrue(!p.property().equals(before), "putting back a removed item did not remove it from the index");
        RemovalsIndex index = RemovalsIndex.open(p.table, TableLayout.of(p.table), 0, new IndexCache(0));
        TableLayout layout = TableLayout.of(p.table);
        RemovalsIndex.Known known =
                index.lookup(List.of(layout.keyOf(w.remove(4, false)), layout.keyOf(w.remove(5, false))), pool);
        assertEquals(1, known.size(), "item 4 was put back (off the record), item 5 is still removed");
        TableStatus.RemovalsIndexStatus status = p.status();
        assertTrue(
                status.damaged() == null
                        && !status.earlierFormat()
                        && status.manifest().equals(p.property())
                        && status.entries() + status.deltaEntries() >= 23
                        && status.bytes() > 0,
                () -> "status shows the 23 removals on record (24 made, one put back): " + status);

        // What orphan cleanup keeps covers every file any remaining snapshot's index names.
        p.table
                .expireSnapshots()
                .retainLast(5)
                .expireOlderThan(System.currentTimeMillis())
                .cleanExpiredFiles(false)
                .commit();
        p.table.refresh();
        Set<String> kept = RemovalsIndex.namedByAnySnapshot(p.table);
        for (Snapshot s : p.table.snapshots()) {
            String manifest = s.summary().get(PipelineProperties.REMOVALS);
            for (String f : KeyIndex.filesOfManifest(p.table.io(), manifest)) {
                assertTrue(
                        kept.contains(f),
                        "snapshot " + s.snapshotId() + " names " + f + ", which orphan cleanup would not keep");
            }
        }
    }

    @Test
    void aFoldForgetsTheRemovalsOfItsPartRecordedBeforeTheCutoff(EmbeddedS3Server server) {
        Pipeline p = new Pipeline(server);
        KeyedWorkload w = new KeyedWorkload(5, 100_000);
        p.merge(List.of(w.upsert(0, Operation.INSERT)));
        TableLayout layout = TableLayout.of(p.table);
        // 2,000 removals recorded at time 1,000: every part gets some.
        Map<List<Object>, Change> old = new LinkedHashMap<>();
        for (int i = 1; i <= 2000; i++) {
            Change r = w.remove(i, false);
            old.put(layout.keyOf(r), r);
        }
        commit(
                p.table,
                RemovalsIndex.open(p.table, layout, 0, new IndexCache(0)).update(old, 1_000, pool));
        assertEquals(2000, lookUp(p.table, old).size(), "every removal recorded is on record");
        // Then a merge a time with one removal at 5,000, forgetting what came before 2,000: a commit
        // folds one part, so after as many commits as parts every old removal is gone.
        Map<List<Object>, Change> recent = new LinkedHashMap<>();
        for (int m = 0; m < RemovalsIndex.PARTS; m++) {
            Change r = w.remove(5000 + m, false);
            recent.put(layout.keyOf(r), r);
            int left = lookUp(p.table, old).size();
            assertTrue(
                    left <= 2000 - 2000 * m / RemovalsIndex.PARTS / 2,
                    "after " + m + " folds " + left + " of 2,000 expired removals are still on record");
            commit(
                    p.table,
                    RemovalsIndex.open(p.table, layout, 2_000, new IndexCache(0))
                            .update(Map.of(layout.keyOf(r), r), 5_000, pool));
        }
        assertEquals(0, lookUp(p.table, old).size(), "removals recorded before the cutoff are still on record");
        assertEquals(RemovalsIndex.PARTS, lookUp(p.table, recent).size(), "a removal newer than the cutoff was lost");
    }

    @Test
    void aTableFromBeforeTheIndexMovesItsRemovalsFilesIntoOne(EmbeddedS3Server server) throws IOException {
        Pipeline p = new Pipeline(server);
        KeyedWorkload w = new KeyedWorkload(8, 1000);
        p.merge(List.of(w.upsert(0, Operation.INSERT)));
        // Items 1-6 were removed by a merger of the earlier format: its removals file holds them,
        // after these versions of theirs, which a redelivery brings now.
        List<Change> older = new ArrayList<>();
        for (int i = 1; i <= 6; i++) {
            older.add(w.upsert(i, Operation.MODIFY));
        }
        List<Change> removals = new ArrayList<>();
        for (int i = 1; i <= 6; i++) {
            Change r = w.remove(i, false);
            removals.add(
                    new Change(r.keys(), r.operation(), null, r.sequenceNumber(), System.currentTimeMillis(), false));
        }
        String file = DerivedFiles.location(p.table) + "ddb2iceberg/removals-legacy.ddbstage";
        try (OutputStream out = p.table.io().newOutputFile(file).createOrOverwrite()) {
            out.write(StagedFormat.write(removals));
        }
        Map<String, String> carried = Checkpoint.carried(p.table);
        var append = p.table.newAppend().set(PipelineProperties.RUN_ID, "earlier-format");
        carried.forEach(append::set);
        append.set(PipelineProperties.REMOVALS, file).commit();
        p.model.apply(removals); // what the table remembers

        assertTrue(p.status().earlierFormat(), "status does not say the table names the earlier files");
        p.merge(older.subList(0, 3));
        assertTrue(
                p.property().endsWith("-manifest.json"), "the first merge did not move the removals: " + p.property());
        assertEquals(6, p.status().entries(), "status: the removals moved into the index");
        p.merge(older.subList(3, 6));
        for (int i = 1; i <= 6; i++) {
            assertFalse(TableItems.read(p.table).containsKey(w.key(i)), "removed item " + i + " came back");
        }
        // Snapshots that still name the earlier files keep them from orphan cleanup.
        assertTrue(RemovalsIndex.namedByAnySnapshot(p.table).contains(file), "the earlier removals file is not kept");
    }

    @Test
    void aMissingRemovalsIndexStopsTheMergeNamingItAndNothingIsLost(EmbeddedS3Server server) throws IOException {
        Pipeline p = new Pipeline(server);
        KeyedWorkload w = new KeyedWorkload(13, 1000);
        p.merge(inserts(w, 0, 20));
        Change old = w.upsert(3, Operation.MODIFY);
        p.merge(List.of(w.remove(3, false)));
        String manifest = p.property();
        byte[] bytes;
        try (InputStream in = p.table.io().newInputFile(manifest).newStream()) {
            bytes = in.readAllBytes();
        }
        p.table.io().deleteFile(manifest);

        p.stage(List.of(old, w.upsert(7, Operation.MODIFY)));
        p.model.apply(List.of()); // the model already holds what is staged; the table must catch up later
        IllegalStateException e = assertThrows(
                IllegalStateException.class,
                () -> new Merger(
                                p.catalog,
                                p.settings.table(),
                                p.store,
                                p.settings.options().withoutKeyIndexCache())
                        .run());
        assertTrue(
                e.getMessage().contains("removals index") && e.getMessage().contains(manifest),
                "the error does not name the removals index and its file: " + e.getMessage());
        String damaged = p.status().damaged();
        assertTrue(damaged != null && damaged.contains(manifest), "status does not show the damage: " + damaged);

        // Restored, the next merge applies what waited, and the removed item stays out.
        try (OutputStream out = p.table.io().newOutputFile(manifest).createOrOverwrite()) {
            out.write(bytes);
        }
        new Merger(p.catalog, p.settings.table(), p.store, p.settings.options()).run();
        p.check();
        assertFalse(TableItems.read(p.table).containsKey(w.key(3)), "removed item 3 came back");
    }

    private Map<List<Object>, ?> lookUp(Table table, Map<List<Object>, Change> keys) {
        table.refresh();
        RemovalsIndex.Known known = RemovalsIndex.open(table, TableLayout.of(table), 0, new IndexCache(0))
                .lookup(keys.keySet(), pool);
        Map<List<Object>, Boolean> on = new HashMap<>();
        keys.keySet().stream().filter(known::remembers).forEach(k -> on.put(k, true));
        return on;
    }

    /** Inserts of items {@code from} to {@code to} (exclusive). */
    private static List<Change> inserts(KeyedWorkload w, int from, int to) {
        List<Change> out = new ArrayList<>();
        for (int i = from; i < to; i++) {
            out.add(w.upsert(i, Operation.INSERT));
        }
        return out;
    }

    /** Commits a snapshot naming the index version, as a merge's commit does. */
    private static void commit(Table table, RemovalsIndex.Updated updated) {
        table.newAppend()
                .set(PipelineProperties.RUN_ID, "test-" + System.nanoTime())
                .set(PipelineProperties.REMOVALS, updated.property())
                .commit();
        table.refresh();
    }
}
