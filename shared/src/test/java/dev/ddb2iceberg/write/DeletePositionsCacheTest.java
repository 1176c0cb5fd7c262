package dev.ddb2iceberg.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.testkit.KeyedWorkload;
import dev.ddb2iceberg.testkit.MergerFixture;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileMetadata;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.data.BaseDeleteLoader;
import org.apache.iceberg.deletes.PositionDeleteIndex;
import org.apache.parquet.column.Encoding;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.roaringbitmap.RoaringBitmap;

/**
 * A warm merger carries a touched data file's earlier deletes into its new delete file from memory
 * (the positions it wrote last time), not from storage; what it holds is exactly what storage holds,
 * and a container that holds nothing (a cold start) reads storage as before. Against the real
 * parts: embedded S3 over HTTP, the SQLite catalog; after every merge the table equals the model.
 */
@ExtendWith(S3ServerExtension.class)
class DeletePositionsCacheTest {
    @TempDir
    Path dir;

    private EmbeddedS3Server server;
    private MergerFixture fixture;

    @BeforeEach
    void setUp(EmbeddedS3Server server) {
        this.server = server;
    }

    private void configure(Map<String, String> overrides) {
        Map<String, String> env = new HashMap<>(overrides);
        env.put("PARTITION_SPEC", "none");
        fixture = new MergerFixture(server, dir, env);
    }

    @ParameterizedTest(name = "format v{0}")
    @ValueSource(ints = {2, 3})
    void aWarmMergerCarriesEarlierDeletesFromMemoryAndHoldsWhatStorageHolds(int formatVersion) {
        configure(Map.of("TABLE_FORMAT_VERSION", Integer.toString(formatVersion)));
        MergeOptions noFolding =
                fixture.settings().options().withRewriteFilesBelow(0); // every touched file gets deletes
        KeyedWorkload w = new KeyedWorkload(21, 1000);
        List<Change> inserts = new ArrayList<>();
        for (int i = 0; i < 120; i++) {
            inserts.add(w.upsert(i, Operation.INSERT));
        }
        merge(inserts, noFolding);

        DeletePositionsCache held = DeletePositionsCache.shared();
        for (int round = 0; round < 4; round++) {
            long hits = held.hits();
            long misses = held.misses();
            merge(
                    List.of(
                            w.upsert(round * 3, Operation.MODIFY),
                            w.upsert(round * 3 + 1, Operation.MODIFY),
                            w.remove(round * 3 + 2, false)),
                    noFolding);
            if (round > 0) { // the file's delete file is the one the last merge wrote here
                assertEquals(hits + 1, held.hits(), "round " + round + " carried the earlier deletes from memory");
                assertEquals(misses, held.misses(), "round " + round + " read no delete file from storage");
            }
            assertHeldEqualsStored(held);
        }
    }

    /** In Parquet's v1 pages (the default) and in v2 pages, whose positions are delta-encoded. */
    @ParameterizedTest(name = "delete files in {0} pages")
    @ValueSource(strings = {"v1", "v2"})
    void aContainerThatHoldsNothingReadsTheEarlierDeletesFromStorage(String pageVersion) {
        configure(Map.of());
        MergeOptions noFolding = fixture.settings().options().withRewriteFilesBelow(0);
        KeyedWorkload w = new KeyedWorkload(22, 1000);
        List<Change> inserts = new ArrayList<>();
        for (int i = 0; i < 120; i++) {
            inserts.add(w.upsert(i, Operation.INSERT));
        }
        merge(inserts, noFolding);
        fixture.table()
                .updateProperties()
                .set(TableProperties.DELETE_PARQUET_PAGE_VERSION, pageVersion)
                .commit();
        String loaded = fixture.dataFilesWithDeletes().keySet().iterator().next();
        merge(List.of(w.upsert(1, Operation.MODIFY), w.remove(2, false)), noFolding);

        DeletePositionsCache held = DeletePositionsCache.shared();
        held.clear(); // a new container
        long misses = held.misses();
        merge(List.of(w.upsert(3, Operation.MODIFY), w.remove(4, false)), noFolding);
        assertEquals(misses + 1, held.misses(), "the earlier delete file was read from storage");
        List<DeleteFile> deletes = fixture.dataFilesWithDeletes().get(loaded);
        assertEquals(1, deletes.size(), "the first data file has one delete file: " + deletes);
        assertEquals(4, deletes.get(0).recordCount(), "it carries the two earlier positions and the two new ones");
        Encoding positions = pageVersion.equals("v2") ? Encoding.DELTA_BINARY_PACKED : Encoding.PLAIN;
        assertTrue(
                positionEncodings(fixture.table(), deletes.get(0)).contains(positions),
                "the positions are " + positions + " in " + pageVersion + " pages");
        assertHeldEqualsStored(held); // and the new file is held from now on
    }

    /** The encodings of a delete file's positions column. */
    private static Set<Encoding> positionEncodings(Table table, DeleteFile file) {
        try {
            return PositionDeleteFileWriterTest.chunks(table.io().newInputFile(file.location()))
                    .get("pos")
                    .getEncodings();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Test
    void positionsWhoseCountDiffersFromTheFilesAreNotHeld() {
        DeletePositionsCache held = new DeletePositionsCache(1 << 20);
        DeleteFile file = deleteFile("s3://bucket/t/data/a-deletes.parquet", 3);
        held.put(file, RoaringBitmap.bitmapOf(1, 5)); // the file deletes three positions, not two
        assertNull(held.positions(List.of(file)), "a count that differs from the file's is refused");

        held.put(file, RoaringBitmap.bitmapOf(1, 5, 9));
        PositionDeleteIndex positions = held.positions(List.of(file));
        assertNotNull(positions);
        assertEquals(List.of(1L, 5L, 9L), positionsOf(positions));
        assertEquals(List.of(file), new ArrayList<>(positions.deleteFiles()), "the index names its delete file");
    }

    @Test
    void theLeastRecentlyUsedPositionsGoWhenTheBudgetIsPassed() {
        RoaringBitmap thousand = new RoaringBitmap();
        for (int p = 0; p < 2000; p += 2) {
            thousand.add(p); // not a run: about 2 KB held
        }
        DeletePositionsCache held = new DeletePositionsCache(thousand.getLongSizeInBytes() * 2 + 1000);
        DeleteFile a = deleteFile("s3://bucket/t/data/a-deletes.parquet", 1000);
        DeleteFile b = deleteFile("s3://bucket/t/data/b-deletes.parquet", 1000);
        DeleteFile c = deleteFile("s3://bucket/t/data/c-deletes.parquet", 1000);
        held.put(a, thousand.clone());
        held.put(b, thousand.clone());
        assertNotNull(held.positions(List.of(a)), "a, used last, stays");
        held.put(c, thousand.clone());
        assertNull(held.positions(List.of(b)), "b, used least recently, went to make room for c");
        assertNotNull(held.positions(List.of(a)));
        assertNotNull(held.positions(List.of(c)));
        assertNull(held.positions(List.of(a, b)), "positions of several files are held only when all are");
    }

    private void merge(List<Change> batch, MergeOptions options) {
        fixture.stage(batch);
        new Merger(fixture.catalog(), fixture.settings().table(), fixture.store(), options).run();
        fixture.assertTableHoldsModel();
    }

    /** Every delete file of the table that the cache holds deletes the positions storage says it does. */
    private void assertHeldEqualsStored(DeletePositionsCache held) {
        Table table = fixture.table();
        BaseDeleteLoader storage = new BaseDeleteLoader(f -> table.io().newInputFile(f));
        int compared = 0;
        for (Map.Entry<String, List<DeleteFile>> f :
                fixture.dataFilesWithDeletes().entrySet()) {
            for (DeleteFile d : f.getValue()) {
                PositionDeleteIndex inMemory = held.positions(List.of(d));
                assertNotNull(inMemory, "the delete file this container wrote is held: " + d.location());
                assertEquals(
                        positionsOf(storage.loadPositionDeletes(List.of(d), f.getKey())),
                        positionsOf(inMemory),
                        "positions of " + d.location());
                compared++;
            }
        }
        assertTrue(compared > 0, "the table has delete files to compare");
    }

    private static List<Long> positionsOf(PositionDeleteIndex index) {
        TreeSet<Long> positions = new TreeSet<>();
        index.forEach(positions::add);
        return new ArrayList<>(positions);
    }

    static DeleteFile deleteFile(String location, long positions) {
        return FileMetadata.deleteFileBuilder(PartitionSpec.unpartitioned())
                .ofPositionDeletes()
                .withPath(location)
                .withFormat(FileFormat.PARQUET)
                .withFileSizeInBytes(1000)
                .withRecordCount(positions)
                .build();
    }
}
