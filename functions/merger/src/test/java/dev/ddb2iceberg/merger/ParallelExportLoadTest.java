package dev.ddb2iceberg.merger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ddb2iceberg.commit.LoadMark;
import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.Settings;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.export.ExportLocation;
import dev.ddb2iceberg.function.MergerSettings;
import dev.ddb2iceberg.index.KeyIndex;
import dev.ddb2iceberg.load.parallel.ParallelExportLoad;
import dev.ddb2iceberg.maintenance.Maintenance;
import dev.ddb2iceberg.maintenance.MaintenanceOptions;
import dev.ddb2iceberg.maintenance.MaintenanceTask;
import dev.ddb2iceberg.merge.MergeResult;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.testkit.CommitHookCatalog;
import dev.ddb2iceberg.testkit.DynamoDbExportFiles;
import dev.ddb2iceberg.testkit.ExpectedTable;
import dev.ddb2iceberg.testkit.HandlerCalls;
import dev.ddb2iceberg.testkit.InProcessExportLoad;
import dev.ddb2iceberg.testkit.KeyedWorkload;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.LogCapture;
import dev.ddb2iceberg.testkit.TableAssertions;
import dev.ddb2iceberg.testkit.TableItems;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.Function;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.FileInfo;
import org.apache.iceberg.io.SupportsPrefixOperations;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The parallel export load as the state machine runs it, its steps invoked through the
 * export-load function's handler by {@link InProcessExportLoad} (Step Functions cannot run here; the
 * in-process runner takes its place, with the same steps, order and retries), against the embedded
 * S3 server and a real catalog. The export is written by the test in DynamoDB's documented layout.
 * The source table is modelled as in {@code dev.ddb2iceberg.load.ExportLoadTest}: what it held at the export time is the
 * export; what the stream carries is staged, before, during and after the load.
 */
@ExtendWith(S3ServerExtension.class)
class ParallelExportLoadTest {
    private static final ObjectMapper JSON = new ObjectMapper();
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
        env.put("LOAD_BATCH_ITEMS", "400"); // several batches a worker, as a big export gives
        configure();
        s3 = server.newClient();
        exports = new DynamoDbExportFiles(s3, bucket, "exports/");
    }

    private void configure() {
        settings = MergerSettings.from(new Environment(env));
        catalog = settings.catalog().load();
        store = new StagingStore(server.newClient(), settings.staging());
    }

    private ExportLoadHandler handler() {
        return new ExportLoadHandler(new Environment(env));
    }

    /** A handler whose steps run {@code hook} just before each commit that adds a snapshot to the table. */
    private ExportLoadHandler handler(Consumer<Table> hook) {
        Environment e = new Environment(env);
        MergerSettings s = MergerSettings.from(e);
        return new ExportLoadHandler(
                s,
                CommitHookCatalog.beforeEachSnapshot(s.catalog().load(), tableId(), hook),
                s.s3().newClient(),
                e.positiveInt(Settings.EXPORT_LOAD_CONCURRENCY),
                e.positiveInt(Settings.LOAD_BATCH_ITEMS));
    }

    /** Calls the handler as Lambda would: JSON in, JSON out; an exception it throws is rethrown. */
    private static Function<ObjectNode, JsonNode> invoker(ExportLoadHandler handler) {
        return HandlerCalls.json(handler);
    }

    private static ObjectNode input(String location) {
        ObjectNode in = JSON.createObjectNode().put("export", location);
        KEYS.forEach(in.putArray("keys")::add);
        return in;
    }

    private final List<String> progress = Collections.synchronizedList(new ArrayList<>());

    private JsonNode load(Function<ObjectNode, JsonNode> invoke, String location, int workers) {
        return new InProcessExportLoad(invoke, progress::add).run(input(location), workers);
    }

    private void stage(List<Change> changes) {
        TableAssertions.stage(store, changes);
    }

    private MergeResult merge() {
        return new Merger(catalog, settings.table(), store, settings.options()).run();
    }

    private void mergeAll() {
        for (int i = 0; i < 20 && !store.list().isEmpty(); i++) {
            merge();
        }
        assertTrue(store.list().isEmpty(), "every staged change merged");
    }

    private TableIdentifier tableId() {
        return TableIdentifier.of(settings.table().namespace(), settings.table().name());
    }

    private Table table() {
        return catalog.loadTable(tableId());
    }

    private void assertTableEquals(ExpectedTable model) {
        TableAssertions.assertHolds(table(), model);
    }

    /** The source's history: changes before the export (in the stream), during the load, and after it. */
    private record History(
            List<Change> before, List<Change> during, List<Change> after, List<Map<String, DdbValue>> exported) {}

    private static History history(long seed, int items) {
        KeyedWorkload w = new KeyedWorkload(seed, items);
        List<Change> older = new ArrayList<>(); // before the stream's 24 hours: only the export has them
        for (int i = 0; i < items; i++) {
            older.add(w.upsert(i, Operation.INSERT));
        }
        List<Change> before = w.next(items / 2);
        List<Change> during = new ArrayList<>(w.next(items / 3));
        for (int i = items; i < items + 30; i++) {
            during.add(w.upsert(i, Operation.INSERT)); // items created after the export
        }
        List<Change> after = w.next(items / 3); // updates and removes, some of keys the load brought
        ExpectedTable atExport = new ExpectedTable();
        atExport.apply(older);
        atExport.apply(before);
        return new History(
                before, during, after, new ArrayList<>(atExport.items().values()));
    }

    private static ExpectedTable source(History h) {
        ExpectedTable model = new ExpectedTable();
        h.exported()
                .forEach(item -> model.apply(List.of(new Change(
                        Map.of("pk", item.get("pk"), "sk", item.get("sk")), Operation.INSERT, item, "1", 0, false))));
        model.apply(h.before());
        model.apply(h.during());
        model.apply(h.after());
        return model;
    }

    /** Files of a load under the table that its current snapshot (or key index) does not reference. */
    private Set<String> loadFilesNotInTheTable() {
        Table t = table();
        Set<String> referenced = new HashSet<>();
        try (CloseableIterable<FileScanTask> tasks = t.newScan().planFiles()) {
            tasks.forEach(task -> referenced.add(task.file().location()));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Set<String> stray = new HashSet<>();
        for (FileInfo f : ((SupportsPrefixOperations) t.io()).listPrefix(t.location())) {
            if (f.location().contains("load-")
                    && !referenced.contains(f.location())
                    && !KeyIndex.filesOf(t, t.currentSnapshot()).contains(f.location())) {
                stray.add(f.location());
            }
        }
        return stray;
    }

    @Test
    void aParallelLoadWithTheStreamFlowingBeforeDuringAndAfterGivesTheSourceTable() {
        env.put("INITIAL_LOAD", "parallel-export");
        configure();
        History h = history(1, 900);
        stage(h.before());
        MergeResult early = merge();
        assertNotNull(early.heldBecause(), "INITIAL_LOAD=parallel-export: no merge before the load");
        assertFalse(catalog.tableExists(tableId()), "the merger created nothing");
        String location = exports.writeFull("01764000000000-p", Instant.now().minusSeconds(60), h.exported(), 7);

        ExportLoadHandler handler = handler();
        Function<ObjectNode, JsonNode> invoke = invoker(handler);
        AtomicBoolean duringStaged = new AtomicBoolean();
        JsonNode committed = load(
                input -> {
                    JsonNode out = invoke.apply(input);
                    if (input.path("step").asText().equals("load") && duringStaged.compareAndSet(false, true)) {
                        stage(h.during()); // the stream goes on while workers run
                        MergeResult held = merge();
                        assertNotNull(held.heldBecause(), "merges wait while the load is in progress");
                        assertTrue(held.heldBecause().contains("in progress"), held.heldBecause());
                        assertNull(held.snapshotId());
                    }
                    return out;
                },
                location,
                4);

        assertEquals(h.exported().size(), committed.path("rows").asLong(), committed.toString());
        assertNotNull(
                table().currentSnapshot().summary().get(PipelineProperties.KEY_INDEX), "the load names its key index");
        assertNull(LoadMark.read(table()), "the mark is gone with the commit");
        assertTrue(progress.stream().anyMatch(p -> p.startsWith("planned load")), progress.toString());
        assertEquals(Set.of(), loadFilesNotInTheTable(), "no file of the load is left outside the table");
        stage(h.after());
        mergeAll();
        assertTableEquals(source(h));
    }

    @Test
    void theLoadsKeyIndexFindsTheRowsSoTheFirstMergeNeedsNoRebuild() {
        History h = history(2, 600);
        stage(h.before());
        String location = exports.writeFull("01764000000000-i", Instant.now().minusSeconds(60), h.exported(), 5);
        env.put("INITIAL_LOAD", "parallel-export");
        configure();
        load(invoker(handler()), location, 3);
        mergeTheRestTrustingTheLoadsIndex(h);
    }

    /** Stages the stream's changes during and after the load, merges them all, and checks no merge rebuilt the index. */
    private void mergeTheRestTrustingTheLoadsIndex(History h) {
        stage(h.during());
        stage(h.after());
        List<String> messages = new ArrayList<>();
        try (LogCapture logs = LogCapture.json()) {
            mergeAll();
            logs.all().forEach(l -> messages.add(l.path("message").asText()));
        }
        assertTrue(
                messages.stream().noneMatch(m -> m.startsWith("Rebuilding the key index")),
                () -> "the merges found the loaded rows through the load's index: " + messages);
        assertTableEquals(source(h));
    }

    @Test
    void intoATableThatAlreadyHasRowsWorkersSkipWhatTheStreamChangedSince() {
        History h = history(3, 600);
        stage(h.before());
        stage(h.during());
        mergeAll(); // the stream first: the table holds newer changes of some exported items, and removals
        String location = exports.writeFull("01764000000000-r", Instant.now().minusSeconds(60), h.exported(), 5);

        JsonNode committed = load(invoker(handler()), location, 3);
        assertTrue(
                committed.path("skipped").asLong() > 0,
                "exported items the stream changed since are skipped: " + committed);
        assertTrue(progress.get(0).contains("workers skip the keys it holds"), progress.get(0));
        stage(h.after());
        mergeAll();
        assertTableEquals(source(h));
    }

    @Test
    void aWorkerThatFailsIsRetriedAndTheFailedAttemptsFilesNeverReachTheTable() {
        History h = history(4, 600);
        stage(h.before());
        String location = exports.writeFull("01764000000000-f", Instant.now().minusSeconds(60), h.exported(), 5);
        Function<ObjectNode, JsonNode> invoke = invoker(handler());
        AtomicBoolean failed = new AtomicBoolean();
        load(
                input -> {
                    JsonNode out = invoke.apply(input); // the attempt writes its files and its record ...
                    if (input.path("step").asText().equals("load")
                            && input.path("work").asInt() == 1
                            && failed.compareAndSet(false, true)) {
                        throw new IllegalStateException(
                                "worker 1 lost its connection"); // ... and then fails, as on a timeout
                    }
                    return out;
                },
                location,
                3);

        assertTrue(failed.get());
        assertTrue(progress.stream().anyMatch(p -> p.contains("retrying")), progress.toString());
        assertEquals(Set.of(), loadFilesNotInTheTable(), "the failed attempt's files were deleted");
        stage(h.during());
        stage(h.after());
        mergeAll();
        assertTableEquals(source(h));
    }

    @Test
    void theFinalCommitRacingAMaintenanceRunStillCommitsOnceAndLosesNothing() {
        History h = history(5, 600);
        for (int i = 0; i < 3; i++) { // several merges that do not fold small files: some for compaction to rewrite
            stage(h.before()
                    .subList(i * h.before().size() / 3, (i + 1) * h.before().size() / 3));
            new Merger(catalog, settings.table(), store, settings.options().withRewriteFilesBelow(0)).run();
        }
        String location = exports.writeFull("01764000000000-m", Instant.now().minusSeconds(60), h.exported(), 5);
        AtomicBoolean raced = new AtomicBoolean();
        ExportLoadHandler handler = handler(planned -> {
            if (raced.compareAndSet(false, true)) {
                var compaction = new Maintenance(
                                table(), MaintenanceOptions.DEFAULTS, "s3://unused/staging/", Clock.systemUTC())
                        .run(EnumSet.of(MaintenanceTask.COMPACT, MaintenanceTask.EXPIRE), false)
                        .compaction();
                assertTrue(
                        compaction.filesRewritten() > 0, "the race is real: compaction committed first: " + compaction);
            }
        });
        long before = table().currentSnapshot().snapshotId();
        load(invoker(handler), location, 2);

        assertTrue(raced.get());
        long loads = 0;
        for (var s : table().snapshots()) {
            loads += s.summary().getOrDefault("ddb2iceberg.merge-run-id", "").startsWith("load-") ? 1 : 0;
        }
        assertEquals(1, loads, "one commit of the load");
        assertTrue(table().currentSnapshot().snapshotId() != before);
        stage(h.during());
        stage(h.after());
        mergeAll();
        assertTableEquals(source(h));
    }

    @Test
    void attributesFirstSeenByAWorkerAfterTheSampleBecomeColumnsAndEarlierRowsKeepTheirValues() {
        List<Map<String, DdbValue>> items = new ArrayList<>();
        for (int i = 0; i < 12_000; i++) {
            Map<String, DdbValue> item = new LinkedHashMap<>();
            item.put("pk", new DdbValue.S("c" + (i / 4)));
            item.put("sk", new DdbValue.N(Integer.toString(i % 4)));
            item.put("amount", new DdbValue.N(Integer.toString(i)));
            if (i >= 11_000 && i % 2 == 1) {
                item.put("late", new DdbValue.S("seen only past the plan's sample, " + i)); // in data file 1's tail
            }
            items.add(item);
        }
        // Two data files (item i in file i % 2): the plan's 10,000-item sample is file 0 and the head of file 1.
        String location = exports.writeFull("01764000000000-s", Instant.now().minusSeconds(60), items, 2);
        stage(List.of(new KeyedWorkload(9, 10).upsert(0, Operation.INSERT))); // the stream covers the export
        load(invoker(handler()), location, 2);

        assertTrue(table().schema().findField("late") != null, "the worker added the column: " + table().schema());
        ExpectedTable model = new ExpectedTable();
        items.forEach(item -> model.apply(List.of(new Change(
                Map.of("pk", item.get("pk"), "sk", item.get("sk")), Operation.INSERT, item, "1", 0, false))));
        mergeAll();
        model.apply(List.of(new KeyedWorkload(9, 10).upsert(0, Operation.INSERT)));
        assertTableEquals(model);
    }

    /** Every work item of {@code plan}, one after another. */
    private static void runWorkers(Function<ObjectNode, JsonNode> invoke, JsonNode plan) {
        plan.path("work")
                .forEach(w -> invoke.apply(JSON.createObjectNode()
                        .put("step", "load")
                        .put("loadId", plan.path("loadId").asText())
                        .put("work", w.path("work").asInt())));
    }

    /** The steps after the plan, one after another (a map's order does not matter). */
    private static JsonNode loadIndexAndCommit(Function<ObjectNode, JsonNode> invoke, JsonNode plan) {
        String loadId = plan.path("loadId").asText();
        runWorkers(invoke, plan);
        invoke.apply(JSON.createObjectNode().put("step", "arrange").put("loadId", loadId))
                .path("groups")
                .forEach(g -> invoke.apply(JSON.createObjectNode()
                        .put("step", "gather")
                        .put("loadId", loadId)
                        .put("group", g.asInt())));
        plan.path("indexGroups")
                .forEach(g -> invoke.apply(JSON.createObjectNode()
                        .put("step", "index")
                        .put("loadId", loadId)
                        .put("group", g.asInt())));
        return invoke.apply(JSON.createObjectNode().put("step", "commit").put("loadId", loadId));
    }

    @Test
    void aMergeAlreadyRunningWhenTheLoadBeganMakesTheCommitRefuseInsteadOfAddingDuplicates() {
        History h = history(10, 300);
        stage(h.before());
        String location = exports.writeFull("01764000000000-x", Instant.now().minusSeconds(60), h.exported(), 3);
        Function<ObjectNode, JsonNode> invoke = invoker(handler());
        JsonNode[] plan = new JsonNode[1];
        // The merge checked for a mark before there was one; the load marks the table while it writes.
        Catalog hooked = CommitHookCatalog.beforeEachSnapshot(catalog, tableId(), t -> {
            if (plan[0] == null) {
                plan[0] = invoke.apply(input(location).put("step", "plan").put("workers", 2));
            }
        });
        MergeResult slipped = new Merger(hooked, settings.table(), store, settings.options()).run();
        assertNotNull(slipped.snapshotId(), "the merge committed after the mark");

        IllegalStateException e = assertThrows(IllegalStateException.class, () -> loadIndexAndCommit(invoke, plan[0]));
        assertTrue(
                e.getMessage().contains("rows were committed") && e.getMessage().contains("start the load again"),
                e.getMessage());
        invoke.apply(JSON.createObjectNode()
                .put("step", "abort")
                .put("loadId", plan[0].path("loadId").asText()));
        assertEquals(slipped.snapshotId(), table().currentSnapshot().snapshotId(), "nothing of the load committed");

        load(invoker(handler()), location, 2); // again, now that merges wait for it
        stage(h.during());
        stage(h.after());
        mergeAll();
        assertTableEquals(source(h));
    }

    @Test
    void twoAttemptsOfTheCommitAtOnceCommitTheLoadOnce() {
        History h = history(11, 300);
        stage(h.before());
        String location = exports.writeFull("01764000000000-y", Instant.now().minusSeconds(60), h.exported(), 3);
        Function<ObjectNode, JsonNode> other = invoker(handler());
        AtomicBoolean overlapped = new AtomicBoolean();
        String[] loadId = new String[1];
        ExportLoadHandler first = handler(t -> {
            if (overlapped.compareAndSet(false, true)) { // a retried step's attempt lands while this one commits
                JsonNode landed = other.apply(
                        JSON.createObjectNode().put("step", "commit").put("loadId", loadId[0]));
                assertFalse(landed.path("alreadyCommitted").asBoolean(), landed.toString());
            }
        });
        Function<ObjectNode, JsonNode> invoke = invoker(first);
        JsonNode plan = invoke.apply(input(location).put("step", "plan").put("workers", 2));
        loadId[0] = plan.path("loadId").asText();
        JsonNode commit = loadIndexAndCommit(invoke, plan);

        assertTrue(overlapped.get());
        assertTrue(commit.path("alreadyCommitted").asBoolean(), "the later attempt found the first: " + commit);
        long loads = 0;
        for (var snapshot : table().snapshots()) {
            loads += snapshot.summary()
                            .getOrDefault("ddb2iceberg.merge-run-id", "")
                            .startsWith("load-")
                    ? 1
                    : 0;
        }
        assertEquals(1, loads, "one commit of the load");
        assertEquals(h.exported().size(), TableItems.read(table()).size(), "each exported item once");
    }

    /** The live data files of the table, by partition. */
    private Map<String, List<DataFile>> filesByPartition() {
        Map<String, List<DataFile>> files = new TreeMap<>();
        try (CloseableIterable<FileScanTask> tasks = table().newScan().planFiles()) {
            tasks.forEach(task -> files.computeIfAbsent(
                            table().spec().partitionToPath(task.file().partition()), p -> new ArrayList<>())
                    .add(task.file()));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return files;
    }

    @Test
    void theLoadLeavesOneFilePerPartitionNotOnePerBatchAndTheIndexFindsTheMergedRows() {
        History h = history(14, 900);
        stage(h.before());
        String location = exports.writeFull("01764000000000-g", Instant.now().minusSeconds(60), h.exported(), 6);
        JsonNode committed = load(invoker(handler()), location, 3); // 3 workers, batches of 400: 3+ files a partition
        assertTrue(
                progress.stream().anyMatch(p -> p.startsWith("merging")), "the load gathered its files: " + progress);
        Map<String, List<DataFile>> files = filesByPartition();
        files.forEach((partition, inPartition) ->
                assertEquals(1, inPartition.size(), "one file in partition " + partition + ": " + inPartition));
        assertEquals(files.size(), committed.path("dataFiles").asInt(), committed.toString());
        assertEquals(Set.of(), loadFilesNotInTheTable(), "the workers' small files were deleted");
        mergeTheRestTrustingTheLoadsIndex(h);
    }

    @Test
    void aPartitionPastTheTargetSizeIsGatheredIntoSeveralFilesAndARetriedGatherCommitsItsLastAttempt() {
        History h = history(15, 900);
        stage(h.before());
        String location = exports.writeFull("01764000000000-z", Instant.now().minusSeconds(60), h.exported(), 6);
        Function<ObjectNode, JsonNode> invoke = invoker(handler());
        JsonNode plan = invoke.apply(input(location).put("step", "plan").put("workers", 3));
        String loadId = plan.path("loadId").asText();
        runWorkers(invoke, plan);
        long largest = 0;
        for (FileInfo f : ((SupportsPrefixOperations) table().io()).listPrefix(table().location() + "/data/")) {
            largest = Math.max(largest, f.size());
        }
        // A target of about two of the workers' files: a partition's files go into several groups.
        long target = largest * 5 / 2;
        table().updateProperties()
                .set("write.target-file-size-bytes", Long.toString(target))
                .commit();
        JsonNode arranged =
                invoke.apply(JSON.createObjectNode().put("step", "arrange").put("loadId", loadId));
        int groups = arranged.path("groups").size();
        assertTrue(groups > 16, "several groups a partition (16 partitions): " + arranged);
        assertEquals(target, arranged.path("targetBytes").asLong(), arranged.toString());
        for (JsonNode g : arranged.path("groups")) {
            ObjectNode step = JSON.createObjectNode()
                    .put("step", "gather")
                    .put("loadId", loadId)
                    .put("group", g.asInt());
            invoke.apply(step);
            if (g.asInt() == 0) {
                invoke.apply(step); // a retried gather: its second attempt is the one recorded
            }
        }
        String progress = ParallelExportLoad.progress(table());
        assertTrue(
                progress.contains(groups + " of " + groups + " groups of small files merged"),
                "status shows the gather: " + progress);
        plan.path("indexGroups")
                .forEach(g -> invoke.apply(JSON.createObjectNode()
                        .put("step", "index")
                        .put("loadId", loadId)
                        .put("group", g.asInt())));
        JsonNode committed =
                invoke.apply(JSON.createObjectNode().put("step", "commit").put("loadId", loadId));

        assertEquals(h.exported().size(), committed.path("rows").asLong(), committed.toString());
        assertEquals(h.exported().size(), TableItems.read(table()).size(), "each exported item once");
        assertEquals(Set.of(), loadFilesNotInTheTable(), "the first attempt's files and the merged ones were deleted");
        int filesNow = filesByPartition().values().stream().mapToInt(List::size).sum();
        assertTrue(
                filesNow < arranged.path("filesToMerge").asInt(),
                filesNow + " files, fewer than the " + arranged.path("filesToMerge") + " the workers wrote");
        for (List<DataFile> inPartition : filesByPartition().values()) {
            for (DataFile f : inPartition) {
                assertTrue(f.fileSizeInBytes() <= 2 * target, f.location() + " is " + f.fileSizeInBytes() + " bytes");
            }
        }
        stage(h.during());
        stage(h.after());
        mergeAll();
        assertTableEquals(source(h));
    }

    @Test
    void aWorkerRunAgainAfterTheArrangeStepMakesTheCommitRefuseInsteadOfLosingItsRows() {
        History h = history(16, 300);
        stage(h.before());
        String location = exports.writeFull("01764000000000-a", Instant.now().minusSeconds(60), h.exported(), 3);
        Function<ObjectNode, JsonNode> invoke = invoker(handler());
        JsonNode plan = invoke.apply(input(location).put("step", "plan").put("workers", 2));
        String loadId = plan.path("loadId").asText();
        runWorkers(invoke, plan);
        JsonNode arranged =
                invoke.apply(JSON.createObjectNode().put("step", "arrange").put("loadId", loadId));
        invoke.apply(JSON.createObjectNode()
                .put("step", "load")
                .put("loadId", loadId)
                .put("work", 0)); // again
        arranged.path("groups")
                .forEach(g -> invoke.apply(JSON.createObjectNode()
                        .put("step", "gather")
                        .put("loadId", loadId)
                        .put("group", g.asInt())));
        RuntimeException refused = assertThrows(
                RuntimeException.class,
                () -> invoke.apply(JSON.createObjectNode().put("step", "commit").put("loadId", loadId)));
        assertTrue(refused.getMessage().contains("a worker ran again after the arrange step"), refused.getMessage());
        assertTrue(
                table().currentSnapshot() == null || TableItems.read(table()).isEmpty(),
                "nothing of the load committed");
    }

    @Test
    void aRetriedPlanStepOfTheSameExecutionFindsItsPlanInsteadOfRefusing() {
        History h = history(12, 200);
        stage(h.before());
        String location = exports.writeFull("01764000000000-z", Instant.now().minusSeconds(60), h.exported(), 2);
        Function<ObjectNode, JsonNode> invoke = invoker(handler());
        ObjectNode step = JSON.createObjectNode().put("step", "plan").put("execution", "arn:aws:states:execution:x:1");
        step.set("input", input(location));
        JsonNode first = invoke.apply(step);
        JsonNode again = invoke.apply(step);
        assertEquals(first.path("loadId"), again.path("loadId"), "the same load");
        IllegalStateException other = assertThrows(
                IllegalStateException.class,
                () -> invoke.apply(step.deepCopy().put("execution", "arn:aws:states:execution:x:2")));
        assertTrue(other.getMessage().contains("one load at a time"), other.getMessage());
        invoke.apply(JSON.createObjectNode()
                .put("step", "abort")
                .put("loadId", first.path("loadId").asText()));
    }

    @Test
    void theSameExportLoadedTwiceIsRefused() {
        History h = history(6, 300);
        stage(h.before());
        String location = exports.writeFull("01764000000000-t", Instant.now().minusSeconds(60), h.exported(), 3);
        load(invoker(handler()), location, 2);
        long snapshot = table().currentSnapshot().snapshotId();

        IllegalStateException e =
                assertThrows(IllegalStateException.class, () -> load(invoker(handler()), location, 2));
        assertTrue(e.getMessage().contains("was loaded before"), e.getMessage());
        assertEquals(snapshot, table().currentSnapshot().snapshotId(), "nothing committed");
        assertNull(LoadMark.read(table()), "no mark left: merges go on");
    }

    @Test
    void aDamagedDataFileIsRefusedNamingItAndNothingIsLoaded() {
        History h = history(7, 600);
        stage(h.before());
        String location = exports.writeFull("01764000000000-d", Instant.now().minusSeconds(60), h.exported(), 4);
        String dataKey = ExportLocation.parse(location).folder() + "data/00002-01764000000000-d.json.gz";
        exports.put(
                dataKey,
                DynamoDbExportFiles.gzip(
                        "{\"Item\":{\"pk\":{\"S\":\"x\"},\"sk\":{\"N\":\"1\"}}}\n".getBytes(StandardCharsets.UTF_8)));

        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> load(invoker(handler()), location, 3));
        assertTrue(e.getMessage().contains(dataKey) && e.getMessage().contains("MD5"), e.getMessage());
        assertTrue(progress.stream().anyMatch(p -> p.contains("aborted")), progress.toString());
        assertTrue(TableItems.read(table()).isEmpty(), "nothing of the export is in the table");
        assertNull(LoadMark.read(table()), "the abort removed the mark");
        assertEquals(Set.of(), loadFilesNotInTheTable(), "the aborted load's files were deleted");
        MergeResult after = merge();
        assertNull(after.heldBecause(), "merges resume after an abort");
        assertTrue(after.changesApplied() > 0);
    }

    @Test
    void aChunkedLoadIsRefusedWhileAParallelLoadIsInProgress() {
        History h = history(8, 200);
        stage(h.before());
        String location = exports.writeFull("01764000000000-c", Instant.now().minusSeconds(60), h.exported(), 2);
        Function<ObjectNode, JsonNode> invoke = invoker(handler());
        JsonNode plan = invoke.apply(input(location).put("step", "plan").put("workers", 2));
        String loadId = plan.path("loadId").asText();

        var chunked = new dev.ddb2iceberg.load.ExportLoader(catalog, settings.table(), store, settings.options(), s3);
        IllegalStateException e = assertThrows(
                IllegalStateException.class,
                () -> chunked.run(
                        new dev.ddb2iceberg.load.ExportLoader.Request(
                                ExportLocation.parse(location), KEYS, Duration.ofMinutes(5), false),
                        Instant.now().plusSeconds(600)));
        assertTrue(e.getMessage().contains(loadId), e.getMessage());
        IllegalStateException second = assertThrows(
                IllegalStateException.class, () -> invoke.apply(input(location).put("step", "plan")));
        assertTrue(second.getMessage().contains("one load at a time"), second.getMessage());
        invoke.apply(JSON.createObjectNode()
                .put("step", "abort")
                .put("loadId", loadId)
                .put("error", "test"));
        assertNull(LoadMark.read(table()));
    }

    @Test
    void theSampleExecutionInputIsWhatThePlanStepTakes() throws Exception {
        JsonNode sample = JSON.readTree(
                Files.readAllBytes(dev.ddb2iceberg.embedded.ProjectFiles.event("export-load-execution.json")));
        ObjectNode step = JSON.createObjectNode().put("step", "plan").put("execution", "arn:x");
        step.set("input", sample);
        // Every field is known; the sample's bucket does not exist here, so the plan stops at the manifest.
        RuntimeException e =
                assertThrows(RuntimeException.class, () -> invoker(handler()).apply(step));
        assertFalse(e.getMessage().contains("unknown field"), e.getMessage());
        assertTrue(e.getMessage().contains("manifest-summary.json"), e.getMessage());
    }

    @Test
    void badStepInputIsRefusedNamingTheField() {
        Function<ObjectNode, JsonNode> invoke = invoker(handler());
        IllegalArgumentException step = assertThrows(
                IllegalArgumentException.class,
                () -> invoke.apply(JSON.createObjectNode().put("step", "merge")));
        assertTrue(step.getMessage().contains("step='merge'"), step.getMessage());
        IllegalArgumentException work = assertThrows(
                IllegalArgumentException.class,
                () -> invoke.apply(JSON.createObjectNode()
                        .put("step", "load")
                        .put("loadId", "x")
                        .put("work", "one")));
        assertTrue(work.getMessage().contains("work="), work.getMessage());
    }
}
