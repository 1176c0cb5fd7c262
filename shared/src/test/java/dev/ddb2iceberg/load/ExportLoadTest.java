package dev.ddb2iceberg.load;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.FaultInjectingBlobStore;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.export.ExportLocation;
import dev.ddb2iceberg.function.MergerSettings;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.testkit.DynamoDbExportFiles;
import dev.ddb2iceberg.testkit.ExpectedTable;
import dev.ddb2iceberg.testkit.ExportHistory;
import dev.ddb2iceberg.testkit.KeyedWorkload;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.TableAssertions;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Initial load from a DynamoDB export and the hand-off to the stream, against the embedded S3
 * server and a real catalog. The export files are written by the test in DynamoDB's documented
 * layout (DynamoDB's export cannot run here). The source table is modelled by applying its changes
 * in order: what it held at the export time is the export; what the stream carries is staged.
 */
@ExtendWith(S3ServerExtension.class)
class ExportLoadTest {
    private static final List<String> KEYS = List.of("pk", "sk");

    @TempDir
    Path dir;

    private EmbeddedS3Server server;
    private MergerSettings settings;
    private Catalog catalog;
    private S3Client s3;
    private StagingStore store;
    private DynamoDbExportFiles exports;
    private final Map<String, String> env = new HashMap<>();

    @BeforeEach
    void setUp(EmbeddedS3Server server) {
        this.server = server;
        String bucket = S3ServerExtension.newBucket(server);
        env.putAll(new LocalStack(server, bucket, dir).environment("orders"));
        settings = MergerSettings.from(new Environment(env));
        catalog = settings.catalog().load();
        s3 = server.newClient();
        store = new StagingStore(s3, settings.staging());
        exports = new DynamoDbExportFiles(s3, bucket, "exports/");
    }

    private ExportLoader loader(int chunkItems) {
        return new ExportLoader(
                catalog, settings.table(), store, settings.options().withMaxChanges(chunkItems), s3);
    }

    private ExportLoader.Request request(String location) {
        return new ExportLoader.Request(ExportLocation.parse(location), KEYS, Duration.ofMinutes(5), false);
    }

    private static Instant later() {
        return Instant.now().plus(Duration.ofMinutes(10));
    }

    private void stage(List<Change> changes) {
        TableAssertions.stage(store, changes);
    }

    private Table table() {
        return catalog.loadTable(TableIdentifier.of(
                settings.table().namespace(), settings.table().name()));
    }

    private void assertTableEquals(ExpectedTable model) {
        TableAssertions.assertHolds(table(), model);
    }

    /** The source table as the export shows it. */
    private static ExpectedTable exportedOnly(ExportHistory h) {
        ExpectedTable model = new ExpectedTable();
        h.exported()
                .forEach(item -> model.apply(List.of(new Change(
                        Map.of("pk", item.get("pk"), "sk", item.get("sk")), Operation.INSERT, item, "1", 0, false))));
        return model;
    }

    /** The source table now: the export, then the stream's changes (those before it are already in it). */
    private static ExpectedTable source(ExportHistory h) {
        ExpectedTable model = exportedOnly(h);
        model.apply(h.before());
        model.apply(h.after());
        return model;
    }

    @Test
    void anExportLoadedBeforeTheOverlappingStreamIsMergedGivesTheSourceTable() {
        ExportHistory h = ExportHistory.of(1);
        stage(h.before());
        stage(h.after());
        String location = exports.writeFull("01764000000000-a", Instant.now().minusSeconds(60), h.exported(), 4);

        ExportLoadResult r = loader(100_000).run(request(location), later());
        assertTrue(r.done(), r.toString());
        assertEquals(h.exported().size(), r.itemsLoaded());
        assertEquals(5, r.filesDone(), "four data files and the empty one");
        new Merger(catalog, settings.table(), store, settings.options()).run();

        assertTableEquals(source(h));
    }

    @Test
    void anExportLoadedAfterTheStreamWasMergedNeitherUndoesUpdatesNorBringsBackRemovedItems() {
        ExportHistory h = ExportHistory.of(2);
        stage(h.before());
        stage(h.after());
        new Merger(catalog, settings.table(), store, settings.options()).run(); // the stream first
        String location = exports.writeFull("01764000000000-b", Instant.now().minusSeconds(60), h.exported(), 3);

        ExportLoadResult r = loader(100_000).run(request(location), later());
        assertTrue(r.done(), r.toString());
        assertTrue(r.skipped() > 0, "exported items the stream changed since are skipped: " + r);

        assertTableEquals(source(h));
    }

    @Test
    void aLoadInterruptedMidwayResumesFromTheTableAndEndsIdentical() {
        ExportHistory h = ExportHistory.of(3);
        stage(h.before());
        stage(h.after());
        String location = exports.writeFull("01764000000000-c", Instant.now().minusSeconds(60), h.exported(), 4);

        // A deadline already past: each run loads one chunk of 70 items, then stops, like a Lambda timing out.
        int runs = 0;
        ExportLoadResult r;
        do {
            r = loader(70).run(request(location), Instant.now());
            runs++;
            assertEquals(1, r.snapshots(), "one chunk per run: " + r);
        } while (!r.done() && runs < 100);
        assertTrue(r.done(), r.toString());
        assertEquals((h.exported().size() + 69) / 70, runs, "chunks of 70 items");
        assertEquals(h.exported().size(), r.itemsLoaded());

        ExportLoadResult again = loader(70).run(request(location), later());
        assertEquals(0, again.snapshots(), "a finished load is never loaded twice: " + again);
        assertTrue(again.note().contains("loaded before"), again.note());

        new Merger(catalog, settings.table(), store, settings.options()).run();
        assertTableEquals(source(h));
    }

    @Test
    void aLoadThatCrashesMidChunkResumesAtTheLastCommittedChunk() {
        ExportHistory h = ExportHistory.of(10);
        stage(h.before());
        stage(h.after());
        String location = exports.writeFull("01764000000000-k", Instant.now().minusSeconds(60), h.exported(), 4);
        ExportLoadResult first = loader(100).run(request(location), Instant.now());
        assertEquals(100, first.itemsLoaded(), first.toString());
        // The next chunk's table files cannot be written: the run fails, as a Lambda crash would.
        server.faults().failFrom(FaultInjectingBlobStore.Operation.PUT, 1, key -> key.startsWith("warehouse/"));
        assertThrows(RuntimeException.class, () -> loader(100).run(request(location), later()));
        server.faults().clear();

        ExportLoadResult rest = loader(100).run(request(location), later());
        assertTrue(rest.done(), rest.toString());
        assertEquals(h.exported().size() - 100, rest.itemsThisRun(), "resumed after the committed chunk: " + rest);
        new Merger(catalog, settings.table(), store, settings.options()).run();
        assertTableEquals(source(h));
    }

    @Test
    void aManifestWhoseCountsDoNotMatchItsFilesIsRefusedBeforeLoadingAnything() throws Exception {
        ExportHistory h = ExportHistory.of(4);
        stage(h.before());
        String location = exports.writeFull("01764000000000-d", Instant.now().minusSeconds(60), h.exported(), 2);
        String folder = ExportLocation.parse(location).folder();
        ObjectMapper json = new ObjectMapper();
        JsonNode summary = json.readTree(s3.getObjectAsBytes(
                        b -> b.bucket(ExportLocation.parse(location).bucket()).key(folder + "manifest-summary.json"))
                .asByteArray());
        exports.put(
                folder + "manifest-summary.json",
                ((ObjectNode) summary)
                        .put("itemCount", h.exported().size() + 1)
                        .toString()
                        .getBytes(StandardCharsets.UTF_8));

        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> loader(100_000).run(request(location), later()));
        assertTrue(
                e.getMessage()
                        .contains("counts " + (h.exported().size() + 1) + " items but manifest-files.json lists "
                                + h.exported().size()),
                e.getMessage());
        assertFalse(
                catalog.tableExists(TableIdentifier.of(
                        settings.table().namespace(), settings.table().name())),
                "nothing was loaded");
    }

    @Test
    void aDataFileHoldingOtherThanItsManifestSaysIsRefusedNamingTheFile() {
        ExportHistory h = ExportHistory.of(5);
        stage(h.before());
        String location = exports.writeFull("01764000000000-e", Instant.now().minusSeconds(60), h.exported(), 2);
        String dataKey = ExportLocation.parse(location).folder() + "data/00000-01764000000000-e.json.gz";
        exports.put(
                dataKey,
                DynamoDbExportFiles.gzip(
                        "{\"Item\":{\"pk\":{\"S\":\"x\"},\"sk\":{\"N\":\"1\"}}}\n".getBytes(StandardCharsets.UTF_8)));

        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> loader(100_000).run(request(location), later()));
        assertTrue(e.getMessage().contains(dataKey) && e.getMessage().contains("MD5"), e.getMessage());
        assertFalse(
                catalog.tableExists(TableIdentifier.of(
                        settings.table().namespace(), settings.table().name())),
                "nothing of the damaged file was loaded");
    }

    @Test
    void theLoadIsRefusedWhenTheStagedStreamDoesNotReachBackToTheExportTime() {
        ExportHistory h = ExportHistory.of(6);
        Instant exportTime = Instant.now().minus(Duration.ofHours(2));
        // The stager started after the export: its oldest change is an hour after the export time.
        Change late = new Change(
                Map.of("pk", new DdbValue.S("late"), "sk", new DdbValue.N("1")),
                Operation.INSERT,
                Map.of("pk", new DdbValue.S("late"), "sk", new DdbValue.N("1")),
                "900000000000000000000",
                exportTime.plus(Duration.ofHours(1)).toEpochMilli(),
                false);
        stage(List.of(late));
        String location = exports.writeFull("01764000000000-f", exportTime, h.exported(), 2);

        IllegalStateException e =
                assertThrows(IllegalStateException.class, () -> loader(100_000).run(request(location), later()));
        assertTrue(
                e.getMessage().contains("reaches back to " + Instant.ofEpochMilli(late.approximateCreationMillis()))
                        && e.getMessage().contains("changes between would be missing"),
                e.getMessage());
    }

    @Test
    void withNoStreamChangeYetTheLoadNeedsTheUsersWordThatNothingChanged() {
        ExportHistory h = ExportHistory.of(7);
        String location = exports.writeFull("01764000000000-g", Instant.now().minusSeconds(60), h.exported(), 2);
        IllegalStateException e =
                assertThrows(IllegalStateException.class, () -> loader(100_000).run(request(location), later()));
        assertTrue(e.getMessage().contains("skipHandOffCheck"), e.getMessage());

        ExportLoadResult r = loader(100_000)
                .run(
                        new ExportLoader.Request(ExportLocation.parse(location), KEYS, Duration.ofMinutes(5), true),
                        later());
        assertTrue(r.done(), r.toString());
        ExpectedTable model = exportedOnly(h);
        assertTableEquals(model);
    }

    @Test
    void anIncrementalExportAppliesEachItemsNewestChangeOverTheFullExport() {
        ExportHistory h = ExportHistory.of(8);
        stage(h.before());
        Instant fullTime = Instant.now().minus(Duration.ofMinutes(30));
        loader(100_000).run(request(exports.writeFull("01764000000000-h", fullTime, h.exported(), 2)), later());
        // Incremental exports hold changes after the full export, with their write times.
        List<Change> changes = new ArrayList<>();
        long t = fullTime.toEpochMilli();
        for (Change c : new KeyedWorkload(80, 400).next(200)) {
            t += 1000;
            changes.add(new Change(c.keys(), c.operation(), c.newImage(), c.sequenceNumber(), t, c.ttlExpiry()));
        }
        String incremental =
                exports.writeIncremental("01764000000001-i", fullTime, Instant.ofEpochMilli(t), changes, 3);
        ExportLoadResult r = loader(100_000).run(request(incremental), later());
        assertTrue(r.done(), r.toString());
        assertEquals("INCREMENTAL", r.type());

        ExpectedTable model = exportedOnly(h);
        model.apply(changes);
        assertTableEquals(model);
    }
}
