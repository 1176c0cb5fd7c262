package dev.ddb2iceberg.load.parallel;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ddb2iceberg.commit.Checkpoint;
import dev.ddb2iceberg.commit.CommitProtocol;
import dev.ddb2iceberg.commit.ExportProgress;
import dev.ddb2iceberg.commit.FanOutMark;
import dev.ddb2iceberg.commit.LoadMark;
import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.export.ExportFileReader;
import dev.ddb2iceberg.export.ExportLines;
import dev.ddb2iceberg.export.ExportManifest;
import dev.ddb2iceberg.index.IndexEntries;
import dev.ddb2iceberg.index.IndexKeys;
import dev.ddb2iceberg.index.IndexManifest;
import dev.ddb2iceberg.index.KeyIndex;
import dev.ddb2iceberg.load.ExportLoader;
import dev.ddb2iceberg.maintenance.Compactor;
import dev.ddb2iceberg.maintenance.MaintenanceOptions;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.table.SchemaEvolution;
import dev.ddb2iceberg.table.StepFiles;
import dev.ddb2iceberg.table.TableCreator;
import dev.ddb2iceberg.table.TableSettings;
import dev.ddb2iceberg.util.Futures;
import java.io.Serializable;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.RowDelta;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotSummary;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.ValidationException;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.FileInfo;
import org.apache.iceberg.io.SupportsPrefixOperations;
import org.apache.iceberg.util.PropertyUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The initial load of a big table: a full DynamoDB export written into the table by many workers
 * at once, made visible by one commit. The steps are those of the template's state machine
 * (Step Functions' distributed map in AWS, a thread pool locally):
 *
 * <ol>
 *   <li>{@link #plan}: read and check the export (as {@link ExportLoader} does, with the same
 *       hand-off rules), create the table if needed, split the export's data files into work
 *       items of about equal item counts, and mark the table: while its property {@link PipelineProperties#PARALLEL_LOAD_IN_PROGRESS}
 *       names the load, the merger holds its merges (the stager keeps staging).
 *   <li>{@link #loadWork}, one per work item, in parallel: read the item's data files (each checked
 *       against its MD5 and item count in the same pass), write Parquet data files laid out like the
 *       table (partitioned, sorted by key within each batch) and the key index entries of their rows, and record what
 *       was written under the load's folder. A retry writes new files and replaces the record; the
 *       files of failed or repeated attempts are never committed, and {@link #commit} deletes them.
 *   <li>{@link #arrange}: once every worker is done, groups each partition's small files (a
 *       worker writes a file per partition per batch, ~9 MB each at 1B items) into groups of about
 *       the target file size, and {@link #gather}, one per group, in parallel: merges a group's
 *       files, each sorted by key, into one sorted file of about that size, as compaction would
 *       (columns copied, not rows decoded), with the key index entries of its rows. So the load
 *       leaves target-size files instead of thousands of small ones for maintenance to rewrite.
 *       Nothing is committed yet; a retried gather writes new files, and the commit takes the
 *       attempt recorded.
 *   <li>{@link #buildIndex}, one per group of index parts, in parallel: the key index of the loaded
 *       rows, from the workers' entries (and the gather's, for the files it merged), so the first
 *       merge after the load need not read a billion keys.
 *   <li>{@link #commit}: every worker's files added in one commit that refuses if anything else
 *       added rows since the plan, with the load recorded as done in its summary (as the chunked
 *       loader's cursor) and the index named, and the mark removed, in one metadata commit. Then
 *       the merger resumes from its checkpoint.
 * </ol>
 *
 * <p>Into an empty table the workers need no lookups. Into a table that already holds rows (the
 * stream was merged before the load), each worker skips items whose key the table holds or removed
 * since, found through the key index of the snapshot the plan saw; the merger is held, so nothing
 * changes those keys until the commit. The index is then rebuilt by the first merge after it.
 * {@link #abort} (the state machine's catch) removes the mark and the load's files.
 */
public final class ParallelExportLoad {
    private static final Logger LOG = LoggerFactory.getLogger(ParallelExportLoad.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    /** At most this many work items: the state machine passes them in its state (256 KB at most). */
    static final int MAX_WORK_ITEMS = 4_000;
    /** A distributed map runs at most this many children at once. */
    static final int MAX_WORKERS = 10_000;
    /**
     * Items a work item holds at most (when the export's files allow): a worker must finish within
     * Lambda's 15 minutes, and at the ~25,000 items/s projected for a 4 GB worker (BENCHMARKS.md, "The
     * parallel export load") 3M items take 2 minutes, leaving room for a slower one. More work items
     * than workers simply run in waves.
     */
    static final long MAX_ITEMS_PER_WORK = 3_000_000;
    /** Key index parts hold about this many entries at most after a load (55 bytes each in memory). */
    static final long ENTRIES_PER_INDEX_PART = 5_000_000;
    /** Parts are built in this many groups (a Step Functions inline map runs up to 40 at once) ... */
    static final int MAX_INDEX_GROUPS = 40;
    /** ... or more, so that a group holds at most this many entries (about 60 bytes each, packed, in memory). */
    static final long ENTRIES_PER_INDEX_GROUP = 10_000_000;
    /**
     * The gather merges a partition's files smaller than this share of the target size; bigger ones
     * are kept as they are (merging them would rewrite much for little).
     */
    static final double GATHER_BELOW_TARGET_SHARE = 0.75;
    /** A gather group merges at most this many files (each is open at once: a row group in memory apiece). */
    static final int MAX_GATHER_FILES = 200;
    /** Workers running in this JVM now (one in Lambda; several under the local runner). */
    private static final AtomicInteger ACTIVE_WORKERS = new AtomicInteger();

    /**
     * One work item: the export's data files {@code from} (inclusive) to {@code to} (exclusive), in
     * manifest-files.json order.
     */
    public record Work(int work, int from, int to, long items) {}

    /**
     * A load's plan, kept as {@code plan.json} in the load's folder for the later steps.
     *
     * @param lookups the table held rows or removals when the load began: workers skip keys it has
     * @param baseSnapshotId the snapshot the plan saw (null: no snapshot yet)
     * @param indexParts parts of the key index the load builds (0 when {@code lookups})
     * @param indexGroups how many index steps build them
     */
    public record Plan(
            String loadId,
            String export,
            String exportId,
            long exportMillis,
            long items,
            int files,
            List<String> keys,
            boolean lookups,
            Long baseSnapshotId,
            int indexParts,
            int indexGroups,
            List<Work> work,
            String started) {}

    /** What a worker wrote, kept as {@code done/w<i>.bin} (Java serialization: Iceberg's data files are Serializable). */
    record WorkDone(
            int work, String attempt, long items, long rows, long skipped, List<DataFile> files, List<String> fragments)
            implements Serializable {}

    /**
     * What an index step wrote, kept as {@code index/g<g>.json}.
     *
     * @param attempts the worker attempt each work item's entries came from (the commit checks they are the ones it commits)
     * @param gatherAttempts the same for each gather group's entries (empty when the load did not gather)
     */
    public record GroupDone(
            int group,
            Map<Integer, IndexManifest.Part> parts,
            long entries,
            long bytes,
            Map<Integer, String> attempts,
            Map<Integer, String> gatherAttempts) {}

    /**
     * The gather's groups, kept as {@code gather/plan.bin} (each group's files in {@code gather/p<g>.bin}).
     *
     * @param attempts the worker attempt whose files each work item's groups hold
     */
    record GatherPlan(int groups, Map<Integer, String> attempts) implements Serializable {}

    /** What a gather step wrote, kept as {@code gather/g<g>.bin}. */
    record GatherDone(
            int group, String attempt, List<String> inputs, List<DataFile> files, List<String> fragments, long rows)
            implements Serializable {}

    /** What the arrange step decided, for the state machine: it maps over {@code groups}. */
    public record Arranged(
            String loadId,
            List<Integer> groups,
            int filesToMerge,
            long bytesToMerge,
            int filesKept,
            long targetBytes) {}

    /** What a gather step did. */
    public record Gathered(int group, int filesIn, int filesOut, long rows, long bytesIn, long bytesOut, long millis) {}

    /** What a worker did, for the state machine (small: the map's results are kept in its state). */
    public record WorkResult(int work, long items, long rows, long skipped, int dataFiles, long millis) {}

    /** What the commit did. */
    public record CommitResult(
            String loadId,
            String exportId,
            Long snapshotId,
            long items,
            long rows,
            long skipped,
            int dataFiles,
            long indexEntries,
            int filesCleanedUp,
            boolean alreadyCommitted,
            String note,
            long millis) {}

    private final Catalog catalog;
    private final TableIdentifier id;
    private final TableSettings tableSettings;
    private final StagingStore store;
    private final MergeOptions options;
    private final S3Client exportS3;
    private final int batchItems;

    /**
     * @param batchItems a worker writes its rows in batches of this many items (each batch one data
     *     file per partition it touches, sorted by key), so its memory stays bounded
     */
    public ParallelExportLoad(
            Catalog catalog,
            TableSettings tableSettings,
            StagingStore store,
            MergeOptions options,
            S3Client exportS3,
            int batchItems) {
        this.catalog = catalog;
        this.id = TableIdentifier.of(tableSettings.namespace(), tableSettings.name());
        this.tableSettings = tableSettings;
        this.store = store;
        this.options = options;
        this.exportS3 = exportS3;
        this.batchItems = batchItems;
    }

    // ------------------------------------------------------------------------------------- plan

    /**
     * Checks the export and the table, creates the table if needed, marks it, and writes the plan.
     * Throws IllegalArgumentException or IllegalStateException, saying what to do, when the load
     * must not run.
     *
     * @param workers how many workers will run at once: the export is split into at least that many
     *     work items (when it has that many data files)
     */
    public Plan plan(ExportLoader.Request request, int workers, String execution) {
        if (workers < 1 || workers > MAX_WORKERS) {
            throw new IllegalArgumentException("workers=" + workers + ": give 1 to " + MAX_WORKERS + " (the most a"
                    + " distributed map runs at once).");
        }
        ExportManifest manifest = ExportManifest.read(exportS3, request.location());
        String exportId = manifest.exportId();
        Table marked = execution == null ? null : TableCreator.loadIfExists(catalog, id);
        LoadMark mark = marked == null ? null : LoadMark.read(marked);
        if (mark != null
                && execution.equals(mark.execution())
                && mark.exportId().equals(exportId)) {
            LOG.info(
                    "Load {} was planned by this execution before (a retried plan step): its plan stands",
                    mark.loadId());
            return LoadFiles.readPlan(marked, mark.loadId());
        }
        if (manifest.type() != ExportManifest.Type.FULL) {
            throw new IllegalArgumentException("Export " + exportId + " is incremental: its changes must be applied in"
                    + " order, which the parallel load does not do. Load it with the merger (load-export without --parallel,"
                    + " or {\"loadExport\": …} to the Merger function).");
        }
        Table table = TableCreator.loadIfExists(catalog, id);
        if (table != null) {
            TableCreator.adopt(table, tableSettings);
            refuseIfLoading(table);
            ExportProgress.Load earlier = ExportProgress.read(table).get(exportId);
            if (earlier != null) {
                throw new IllegalStateException("Export " + exportId
                        + (earlier.done()
                                ? " was loaded before"
                                : " is being" + " loaded by the merger in chunks (" + earlier.items()
                                        + " items so far)")
                        + ": the table records it."
                        + " Loading it again would change nothing; to reload, request a new export.");
            }
        }
        List<String> keys = ExportLoader.keyNames(table, request, id);
        ExportLoader.checkHandOff(table, manifest, request, store.list(), store);
        if (manifest.itemCount() == 0 && table == null) {
            throw new IllegalArgumentException("Export " + exportId + " holds no items and the table " + id
                    + " does not" + " exist yet: nothing to load.");
        }
        ExportLines decoder =
                new ExportLines(manifest.type(), keys, manifest.time().toEpochMilli());
        if (table == null) {
            table = createFromSample(manifest, decoder);
        }
        Snapshot base = table.currentSnapshot();
        boolean lookups = base != null
                && (totalRecords(base) > 0 || Checkpoint.readProperty(table, PipelineProperties.REMOVALS) != null);
        if (lookups && (!options.keyIndex() || KeyIndex.resolve(table, base).manifest() == null)) {
            // Each worker would otherwise read the key columns of the whole table, or rebuild the index.
            throw new IllegalStateException(
                    "Table " + id + " already has rows, and its current snapshot " + base.snapshotId()
                            + " names no key index for the workers to look their keys up in: "
                            + (options.keyIndex()
                                    ? KeyIndex.resolve(table, base).why()
                                            + ". Let one merge run (it writes the index), then start the load again;"
                                    : "KEY_INDEX is off. Turn it on and let one merge run, then start the load again;")
                            + " or load the export through the Merger ({\"loadExport\": …}).");
        }
        int parts = lookups
                ? 0
                : (int) Math.max(
                        options.keyIndexParts(),
                        (manifest.itemCount() + ENTRIES_PER_INDEX_PART - 1) / ENTRIES_PER_INDEX_PART);
        int groups = (int) Math.min(
                parts,
                Math.max(
                        MAX_INDEX_GROUPS,
                        (manifest.itemCount() + ENTRIES_PER_INDEX_GROUP - 1) / ENTRIES_PER_INDEX_GROUP));
        String loadId = exportId + "-" + UUID.randomUUID().toString().substring(0, 8);
        Plan plan = new Plan(
                loadId,
                request.location().toString(),
                exportId,
                manifest.time().toEpochMilli(),
                manifest.itemCount(),
                manifest.files().size(),
                keys,
                lookups,
                base == null ? null : base.snapshotId(),
                parts,
                groups,
                split(manifest.files(), workers),
                Instant.now().toString());
        StepFiles.writeJson(table, LoadFiles.folder(table, loadId) + "plan.json", plan);
        mark(table, new LoadMark(loadId, exportId, plan.started(), execution));
        LOG.atInfo()
                .addKeyValue("loadId", loadId)
                .addKeyValue("items", plan.items())
                .addKeyValue("files", plan.files())
                .addKeyValue("workItems", plan.work().size())
                .addKeyValue("lookups", lookups)
                .log(
                        "Parallel load of export {} planned: {} work items; merges wait until it commits",
                        exportId,
                        plan.work().size());
        return plan;
    }

    /** Refuses while another parallel load, or an unfinished chunked one, has the table. */
    private static void refuseIfLoading(Table table) {
        LoadMark mark = LoadMark.read(table);
        if (mark != null) {
            throw new IllegalStateException("Parallel load " + mark.loadId() + " of export " + mark.exportId()
                    + " has been in progress since " + mark.started()
                    + ": run one load at a time. If its execution failed or"
                    + " was stopped, abort it first: {\"step\": \"abort\", \"loadId\": \"" + mark.loadId() + "\"}.");
        }
        FanOutMark fanOut = FanOutMark.read(table);
        if (fanOut != null) {
            throw new IllegalStateException("Fanned-out merge " + fanOut.mergeId() + " has been in progress since "
                    + fanOut.started() + ": a load waits until it commits or aborts.");
        }
        for (Map.Entry<String, ExportProgress.Load> e :
                ExportProgress.read(table).entrySet()) {
            if (!e.getValue().done()) {
                throw new IllegalStateException(
                        "The merger is loading export " + e.getKey() + " in chunks (" + e.getValue()
                                + "): finish that load first (invoke the Merger with its loadExport input until it says done).");
            }
        }
    }

    /**
     * The parallel load in progress on the table, in words with its work items done so far (for
     * {@code ./ddb2iceberg status}), or null when none is.
     */
    public static String progress(Table table) {
        LoadMark mark = LoadMark.read(table);
        if (mark == null) {
            return null;
        }
        String done = "";
        try {
            Plan plan = LoadFiles.readPlan(table, mark.loadId());
            int finished = 0;
            if (table.io() instanceof SupportsPrefixOperations io) {
                for (FileInfo f : io.listPrefix(LoadFiles.folder(table, mark.loadId()) + "done/")) {
                    finished++;
                }
            }
            done = ", " + finished + " of " + plan.work().size() + " work items done (" + plan.items() + " items)";
            GatherPlan gathering = gatherPlan(table, mark.loadId());
            if (gathering != null && table.io() instanceof SupportsPrefixOperations io) {
                int gathered = 0;
                for (FileInfo f : io.listPrefix(LoadFiles.folder(table, mark.loadId()) + "gather/g")) {
                    gathered++;
                }
                done += ", " + gathered + " of " + gathering.groups() + " groups of small files merged";
            }
        } catch (RuntimeException e) {
            done = " (its plan is not readable: " + e.getMessage() + ")";
        }
        return "parallel load " + mark.loadId() + " of export " + mark.exportId() + " since " + mark.started() + done
                + "; merges wait until it commits";
    }

    private void mark(Table table, LoadMark mark) {
        table.updateProperties()
                .set(PipelineProperties.PARALLEL_LOAD_IN_PROGRESS, mark.encode())
                .commit();
        table.refresh();
        LoadMark now = LoadMark.read(table);
        if (now == null || !now.loadId().equals(mark.loadId())) {
            throw new IllegalStateException("Another load marked table " + id + " at the same moment (" + now + "): run"
                    + " one load at a time.");
        }
    }

    /** Creates the table from the first items of the export (the workers add columns for attributes seen later). */
    private Table createFromSample(ExportManifest manifest, ExportLines decoder) {
        List<Change> sample = new ArrayList<>();
        ExportFileReader reader =
                new ExportFileReader(exportS3, manifest.location().bucket());
        for (ExportManifest.DataFile f : manifest.files()) {
            if (sample.size() >= 10_000) {
                break;
            }
            if (f.itemCount() > 0) {
                sample.addAll(reader.read(f, 0, 10_000 - sample.size(), decoder).changes());
            }
        }
        Table table = TableCreator.loadOrCreate(catalog, id, tableSettings, sample);
        return SchemaEvolution.evolve(table, sample, tableSettings);
    }

    /**
     * Contiguous runs of data files with about equal item counts: at least {@code workers} work items,
     * and enough that none holds more than {@link #MAX_ITEMS_PER_WORK} (when there are that many
     * files), at most {@link #MAX_WORK_ITEMS}. A data file is never split:
     * gzip cannot be read from the middle.
     */
    static List<Work> split(List<ExportManifest.DataFile> files, int workers) {
        long total =
                files.stream().mapToLong(ExportManifest.DataFile::itemCount).sum();
        long wanted = Math.max(workers, (total + MAX_ITEMS_PER_WORK - 1) / MAX_ITEMS_PER_WORK);
        int items = (int) Math.max(1, Math.min(MAX_WORK_ITEMS, Math.min(files.size(), wanted)));
        long target = Math.max(1, (total + items - 1) / items);
        List<Work> work = new ArrayList<>();
        int from = 0;
        long sum = 0;
        for (int i = 0; i < files.size(); i++) {
            sum += files.get(i).itemCount();
            boolean last = i == files.size() - 1;
            if (last && sum == 0 && !work.isEmpty()) {
                Work previous = work.remove(work.size() - 1); // trailing empty files join the last work item
                work.add(new Work(previous.work(), previous.from(), i + 1, previous.items()));
            } else if (last || (sum >= target && work.size() < MAX_WORK_ITEMS - 1)) {
                work.add(new Work(work.size(), from, i + 1, sum));
                from = i + 1;
                sum = 0;
            }
        }
        return work;
    }

    // ------------------------------------------------------------------------------------- workers

    /** Loads one work item's data files into new data files and index entries; nothing is committed. */
    public WorkResult loadWork(String loadId, int workIndex) {
        long start = System.nanoTime();
        Table table = tableInLoad(loadId);
        Plan plan = LoadFiles.readPlan(table, loadId);
        if (workIndex < 0 || workIndex >= plan.work().size()) {
            throw new IllegalArgumentException(
                    "Load " + loadId + " has work items 0 to " + (plan.work().size() - 1) + ", not " + workIndex + ".");
        }
        Work work = plan.work().get(workIndex);
        ExportManifest manifest =
                ExportManifest.read(exportS3, dev.ddb2iceberg.export.ExportLocation.parse(plan.export()));
        ExportLines decoder = new ExportLines(manifest.type(), plan.keys(), plan.exportMillis());
        ExportFileReader reader =
                new ExportFileReader(exportS3, manifest.location().bucket());
        String attempt = UUID.randomUUID().toString().substring(0, 8);
        String runId = "load-" + loadId + "-w" + workIndex + "-" + attempt;
        ACTIVE_WORKERS.incrementAndGet();
        WorkerBatches state =
                new WorkerBatches(table, plan, runId, tableSettings, options, batchItems, ACTIVE_WORKERS.get());
        ExecutorService pool = Executors.newFixedThreadPool(options.ioThreads());
        try {
            for (int f = work.from(); f < work.to(); f++) {
                reader.readAll(manifest.files().get(f), decoder, (change, bytes) -> state.add(change, bytes, pool));
            }
            state.finish(pool);
            List<String> fragments = state.writeFragments(workIndex);
            WorkDone done =
                    new WorkDone(workIndex, attempt, state.items, state.written, state.skipped, state.files, fragments);
            StepFiles.writeBytes(
                    table, LoadFiles.folder(table, loadId) + "done/w" + workIndex + ".bin", StepFiles.serialize(done));
        } finally {
            pool.shutdownNow();
            ACTIVE_WORKERS.decrementAndGet();
        }
        long millis = (System.nanoTime() - start) / 1_000_000;
        LOG.atInfo()
                .addKeyValue("loadId", loadId)
                .addKeyValue("work", workIndex)
                .addKeyValue("items", state.items)
                .addKeyValue("rows", state.written)
                .addKeyValue("skipped", state.skipped)
                .addKeyValue("dataFiles", state.files.size())
                .addKeyValue("millis", millis)
                .log(
                        "Work item {} of load {}: {} items into {} data files",
                        workIndex,
                        loadId,
                        state.items,
                        state.files.size());
        return new WorkResult(workIndex, state.items, state.written, state.skipped, state.files.size(), millis);
    }

    // ------------------------------------------------------------------------------------ gather

    /**
     * Groups each partition's small files, as the workers wrote them, for {@link #gather}: the files
     * below {@link #GATHER_BELOW_TARGET_SHARE} of the target size, biggest first, each into the
     * first group it fits (groups hold at most the target size and {@link #MAX_GATHER_FILES}). A
     * file alone in its group is kept as it is. Running it again gives the same groups.
     */
    public Arranged arrange(String loadId) {
        Table table = tableInLoad(loadId);
        Plan plan = LoadFiles.readPlan(table, loadId);
        List<WorkDone> done = allDone(table, plan);
        long target = targetFileSize(table);
        Map<String, List<DataFile>> byPartition = new TreeMap<>();
        int kept = 0;
        for (WorkDone w : done) {
            for (DataFile f : w.files()) {
                if (f.fileSizeInBytes() < target * GATHER_BELOW_TARGET_SHARE) {
                    String partition =
                            f.specId() + "/" + table.specs().get(f.specId()).partitionToPath(f.partition());
                    byPartition
                            .computeIfAbsent(partition, p -> new ArrayList<>())
                            .add(f);
                } else {
                    kept++;
                }
            }
        }
        List<List<DataFile>> groups = new ArrayList<>();
        for (List<DataFile> files : byPartition.values()) {
            files.sort(Comparator.comparingLong(DataFile::fileSizeInBytes)
                    .reversed()
                    .thenComparing(DataFile::location));
            List<List<DataFile>> bins = new ArrayList<>();
            List<Long> binBytes = new ArrayList<>();
            for (DataFile f : files) {
                int bin = 0;
                while (bin < bins.size()
                        && (binBytes.get(bin) + f.fileSizeInBytes() > target
                                || bins.get(bin).size() >= MAX_GATHER_FILES)) {
                    bin++;
                }
                if (bin == bins.size()) {
                    bins.add(new ArrayList<>());
                    binBytes.add(0L);
                }
                bins.get(bin).add(f);
                binBytes.set(bin, binBytes.get(bin) + f.fileSizeInBytes());
            }
            for (List<DataFile> bin : bins) {
                if (bin.size() > 1) {
                    groups.add(bin);
                } else {
                    kept++;
                }
            }
        }
        String folder = LoadFiles.folder(table, loadId) + "gather/";
        int filesToMerge = 0;
        long bytesToMerge = 0;
        for (int g = 0; g < groups.size(); g++) {
            List<DataFile> files = groups.get(g);
            StepFiles.writeBytes(table, folder + "p" + g + ".bin", StepFiles.serialize(new ArrayList<>(files)));
            filesToMerge += files.size();
            bytesToMerge += files.stream().mapToLong(DataFile::fileSizeInBytes).sum();
        }
        Map<Integer, String> attempts = new HashMap<>();
        done.forEach(w -> attempts.put(w.work(), w.attempt()));
        StepFiles.writeBytes(table, folder + "plan.bin", StepFiles.serialize(new GatherPlan(groups.size(), attempts)));
        LOG.atInfo()
                .addKeyValue("loadId", loadId)
                .addKeyValue("groups", groups.size())
                .addKeyValue("filesToMerge", filesToMerge)
                .addKeyValue("bytesToMerge", bytesToMerge)
                .addKeyValue("filesKept", kept)
                .log(
                        "Load {}: {} small files in {} groups to merge into files of about {} bytes; {} files kept as written",
                        loadId,
                        filesToMerge,
                        groups.size(),
                        target,
                        kept);
        return new Arranged(
                loadId, IntStream.range(0, groups.size()).boxed().toList(), filesToMerge, bytesToMerge, kept, target);
    }

    /**
     * Merges one group of {@link #arrange}: its files, each sorted by key, into files of about the
     * target size sorted by key, and the key index entries of their rows, by index group.
     */
    public Gathered gather(String loadId, int group) {
        long start = System.nanoTime();
        Table table = tableInLoad(loadId);
        Plan plan = LoadFiles.readPlan(table, loadId);
        GatherPlan gathering = gatherPlan(table, loadId);
        if (gathering == null) {
            throw new IllegalStateException("Load " + loadId + " has not arranged its files for the gather yet: run"
                    + " its arrange step first ({\"step\": \"arrange\", \"loadId\": \"" + loadId + "\"}).");
        }
        if (group < 0 || group >= gathering.groups()) {
            throw new IllegalArgumentException(
                    "Load " + loadId + " has gather groups 0 to " + (gathering.groups() - 1) + ", not " + group + ".");
        }
        String folder = LoadFiles.folder(table, loadId) + "gather/";
        @SuppressWarnings("unchecked")
        List<DataFile> files = (List<DataFile>) StepFiles.deserialize(StepFiles.readBytes(
                table, folder + "p" + group + ".bin", "gather group " + group + " was not arranged"));
        String attempt = UUID.randomUUID().toString().substring(0, 8);
        String runId = LoadFiles.runIdOf(loadId) + "-gather" + group + "-" + attempt;
        Compactor.Merged merged =
                Compactor.mergeSorted(table, files, targetFileSize(table), runId, plan.indexGroups() > 0);
        long rowsIn = files.stream().mapToLong(DataFile::recordCount).sum();
        long rowsOut = merged.files().stream().mapToLong(DataFile::recordCount).sum();
        if (rowsIn != rowsOut) {
            throw new IllegalStateException("Gather group " + group + " of load " + loadId + " read " + rowsIn
                    + " rows but wrote " + rowsOut + ": nothing was committed.");
        }
        List<String> fragments = new ArrayList<>();
        if (plan.indexGroups() > 0) {
            IndexEntries.Builder[] byGroup = new IndexEntries.Builder[plan.indexGroups()];
            for (int g = 0; g < byGroup.length; g++) {
                byGroup[g] = new IndexEntries.Builder();
            }
            IndexEntries entries = merged.entries();
            for (int i = 0; i < entries.size(); i++) {
                IndexEntries.Entry e = entries.entry(i);
                byGroup[IndexKeys.part(e.key(), plan.indexParts()) % byGroup.length].add(e);
            }
            for (int g = 0; g < byGroup.length; g++) {
                String name = "load-" + loadId + "/" + runId + "-g" + g + ".bin";
                KeyIndex.writeFile(table, name, byGroup[g].build());
                byGroup[g] = null;
                fragments.add(KeyIndex.fileLocation(table, name));
            }
        }
        GatherDone done = new GatherDone(
                group, attempt, files.stream().map(DataFile::location).toList(), merged.files(), fragments, rowsOut);
        StepFiles.writeBytes(table, folder + "g" + group + ".bin", StepFiles.serialize(done));
        long bytesIn = files.stream().mapToLong(DataFile::fileSizeInBytes).sum();
        long bytesOut =
                merged.files().stream().mapToLong(DataFile::fileSizeInBytes).sum();
        long millis = (System.nanoTime() - start) / 1_000_000;
        LOG.atInfo()
                .addKeyValue("loadId", loadId)
                .addKeyValue("group", group)
                .addKeyValue("filesIn", files.size())
                .addKeyValue("filesOut", merged.files().size())
                .addKeyValue("rows", rowsOut)
                .addKeyValue("bytesIn", bytesIn)
                .addKeyValue("bytesOut", bytesOut)
                .addKeyValue("millis", millis)
                .log(
                        "Gather group {} of load {}: {} files into {}",
                        group,
                        loadId,
                        files.size(),
                        merged.files().size());
        return new Gathered(group, files.size(), merged.files().size(), rowsOut, bytesIn, bytesOut, millis);
    }

    /** The gather's plan, or null when the load did not arrange its files (a load driven without the gather). */
    private static GatherPlan gatherPlan(Table table, String loadId) {
        String path = LoadFiles.folder(table, loadId) + "gather/plan.bin";
        if (!table.io().newInputFile(path).exists()) {
            return null;
        }
        return (GatherPlan) StepFiles.deserialize(StepFiles.readBytes(table, path, "the gather's plan is missing"));
    }

    /** Every gather group's record, checked to come from the workers' attempts recorded now. */
    private List<GatherDone> allGathered(Table table, String loadId, GatherPlan gathering, List<WorkDone> done) {
        for (WorkDone w : done) {
            if (!w.attempt().equals(gathering.attempts().get(w.work()))) {
                throw new IllegalStateException("The gather of load " + loadId + " was arranged from attempt "
                        + gathering.attempts().get(w.work()) + " of work item " + w.work()
                        + ", but the attempt recorded"
                        + " now is " + w.attempt() + " (a worker ran again after the arrange step): nothing was"
                        + " committed. Start the load again.");
            }
        }
        String folder = LoadFiles.folder(table, loadId) + "gather/";
        ExecutorService pool = Executors.newFixedThreadPool(options.ioThreads());
        try {
            List<Future<GatherDone>> reads = new ArrayList<>();
            for (int g = 0; g < gathering.groups(); g++) {
                String path = folder + "g" + g + ".bin";
                String missing = "gather group " + g + " has not finished";
                reads.add(pool.submit(
                        () -> (GatherDone) StepFiles.deserialize(StepFiles.readBytes(table, path, missing))));
            }
            List<GatherDone> gathered = new ArrayList<>();
            reads.forEach(r -> gathered.add(Futures.join(r, "reading the gather's records")));
            return gathered;
        } finally {
            pool.shutdownNow();
        }
    }

    /** The size the gather's files aim at: the table's {@code write.target-file-size-bytes}, else compaction's default. */
    static long targetFileSize(Table table) {
        return PropertyUtil.propertyAsLong(
                table.properties(),
                TableProperties.WRITE_TARGET_FILE_SIZE_BYTES,
                MaintenanceOptions.DEFAULTS.targetFileSizeBytes());
    }

    // ------------------------------------------------------------------------------------- index

    /** Builds the index parts of one group from every worker's entries. */
    public GroupDone buildIndex(String loadId, int group) {
        long start = System.nanoTime();
        Table table = tableInLoad(loadId);
        Plan plan = LoadFiles.readPlan(table, loadId);
        if (group < 0 || group >= plan.indexGroups()) {
            throw new IllegalArgumentException(
                    "Load " + loadId + " has index groups 0 to " + (plan.indexGroups() - 1) + ", not " + group + ".");
        }
        List<WorkDone> done = allDone(table, plan);
        GatherPlan gathering = gatherPlan(table, loadId);
        List<GatherDone> gathered = gathering == null ? List.of() : allGathered(table, loadId, gathering, done);
        // The rows of files the gather merged are where the gather put them, not where the workers did.
        Set<String> merged = new HashSet<>();
        gathered.forEach(g -> merged.addAll(g.inputs()));
        List<String> fragments = new ArrayList<>();
        done.forEach(w -> fragments.add(w.fragments().get(group)));
        gathered.forEach(g -> fragments.add(g.fragments().get(group)));
        Map<Integer, IndexEntries.Builder> parts = new HashMap<>();
        for (int p = group; p < plan.indexParts(); p += plan.indexGroups()) {
            parts.put(p, new IndexEntries.Builder());
        }
        for (String location : fragments) {
            IndexEntries fragment = KeyIndex.readFile(table, location);
            for (int i = 0; i < fragment.size(); i++) {
                IndexEntries.Entry e = fragment.entry(i);
                if (!merged.contains(e.file())) {
                    parts.get(IndexKeys.part(e.key(), plan.indexParts())).add(e);
                }
            }
        }
        Map<Integer, IndexManifest.Part> written = new HashMap<>();
        long entries = 0;
        long bytes = 0;
        String attempt = UUID.randomUUID().toString().substring(0, 8);
        for (Map.Entry<Integer, IndexEntries.Builder> part : parts.entrySet()) {
            IndexEntries built = part.getValue().build();
            part.setValue(null);
            if (built.size() == 0) {
                continue;
            }
            String name = "load-" + loadId + "-" + attempt + "-part-" + part.getKey() + ".bin";
            IndexManifest.Part file = KeyIndex.writePart(table, name, built);
            bytes += file.length();
            written.put(part.getKey(), file);
            entries += built.size();
        }
        Map<Integer, String> attempts = new HashMap<>();
        done.forEach(w -> attempts.put(w.work(), w.attempt()));
        Map<Integer, String> gatherAttempts = new HashMap<>();
        gathered.forEach(g -> gatherAttempts.put(g.group(), g.attempt()));
        GroupDone result = new GroupDone(group, written, entries, bytes, attempts, gatherAttempts);
        StepFiles.writeJson(table, LoadFiles.folder(table, loadId) + "index/g" + group + ".json", result);
        LOG.info(
                "Key index group {} of load {}: {} parts, {} entries in {} ms",
                group,
                loadId,
                written.size(),
                entries,
                (System.nanoTime() - start) / 1_000_000);
        return result;
    }

    // ------------------------------------------------------------------------------------- commit

    /**
     * Appends every worker's data files in one commit that records the load as done, names the key
     * index, and removes the mark; then deletes the files of attempts that were not committed.
     * Committing again after a commit that landed returns its result without a second commit.
     */
    public CommitResult commit(String loadId) {
        long start = System.nanoTime();
        Table table = TableCreator.loadIfExists(catalog, id);
        if (table == null) {
            throw new IllegalStateException(
                    "Table " + id + " does not exist: load " + loadId + " was never planned here.");
        }
        Snapshot committed = CommitProtocol.snapshotOf(table, LoadFiles.runIdOf(loadId));
        if (committed != null) {
            return new CommitResult(
                    loadId,
                    null,
                    committed.snapshotId(),
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    true,
                    "Load " + loadId + " was committed before (snapshot " + committed.snapshotId()
                            + "); nothing to do.",
                    (System.nanoTime() - start) / 1_000_000);
        }
        table = tableInLoad(loadId);
        Plan plan = LoadFiles.readPlan(table, loadId);
        List<WorkDone> done = allDone(table, plan);
        GatherPlan gathering = gatherPlan(table, loadId);
        List<GatherDone> gathered = gathering == null ? List.of() : allGathered(table, loadId, gathering, done);
        Set<String> merged = new HashSet<>();
        gathered.forEach(g -> merged.addAll(g.inputs()));
        List<DataFile> files = new ArrayList<>();
        long items = 0;
        long rows = 0;
        long skipped = 0;
        for (WorkDone w : done) {
            w.files().stream().filter(f -> !merged.contains(f.location())).forEach(files::add);
            items += w.items();
            rows += w.rows();
            skipped += w.skipped();
        }
        gathered.forEach(g -> files.addAll(g.files()));
        if (items != plan.items()) {
            throw new IllegalStateException("The workers of load " + loadId + " read " + items + " items but the export"
                    + " holds " + plan.items() + ": nothing was committed.");
        }
        long rowsInFiles = files.stream().mapToLong(DataFile::recordCount).sum();
        if (rowsInFiles != rows) {
            throw new IllegalStateException("The files of load " + loadId + " hold " + rowsInFiles + " rows but the"
                    + " workers wrote " + rows + ": nothing was committed.");
        }
        Map<String, String> summary = Checkpoint.carried(table);
        Map<String, ExportProgress.Load> loads = ExportProgress.read(table);
        loads.put(
                plan.exportId(),
                new ExportProgress.Load(
                        ExportManifest.Type.FULL.name(), plan.exportMillis(), plan.files(), 0, plan.items(), true));
        summary.put(PipelineProperties.EXPORT_LOADS, ExportProgress.encode(loads));
        summary.put(PipelineProperties.RUN_ID, LoadFiles.runIdOf(loadId));
        long indexEntries = 0;
        if (plan.indexGroups() > 0) {
            Snapshot now = table.currentSnapshot();
            if (now == null || totalRecords(now) == 0) {
                List<IndexManifest.Part> base =
                        new ArrayList<>(Collections.nCopies(plan.indexParts(), KeyIndex.emptyPart()));
                for (int g = 0; g < plan.indexGroups(); g++) {
                    GroupDone group = StepFiles.readJson(
                            table,
                            LoadFiles.folder(table, loadId) + "index/g" + g + ".json",
                            GroupDone.class,
                            "index group " + g + " has not finished");
                    for (GatherDone gd : gathered) {
                        if (!gd.attempt().equals(group.gatherAttempts().get(gd.group()))) {
                            throw new IllegalStateException("Index group " + g + " of load " + loadId
                                    + " was built from attempt "
                                    + group.gatherAttempts().get(gd.group())
                                    + " of gather group " + gd.group() + ", but the attempt recorded now is "
                                    + gd.attempt() + " (two attempts ran at once): nothing was committed.");
                        }
                    }
                    for (WorkDone w : done) {
                        if (!w.attempt().equals(group.attempts().get(w.work()))) {
                            throw new IllegalStateException(
                                    "Index group " + g + " of load " + loadId + " was built from attempt "
                                            + group.attempts().get(w.work()) + " of work item " + w.work()
                                            + ", but the attempt recorded now is "
                                            + w.attempt() + " (two attempts ran at once): nothing was committed.");
                        }
                    }
                    group.parts().forEach(base::set);
                    indexEntries += group.entries();
                }
                if (indexEntries != rows) {
                    throw new IllegalStateException("The key index of load " + loadId + " holds " + indexEntries
                            + " entries but the workers wrote " + rows + " rows: nothing was committed.");
                }
                summary.put(PipelineProperties.KEY_INDEX, KeyIndex.writeManifest(table, base));
            }
        }
        // A row delta that only adds rows: unlike a plain append, it refuses (ValidationException) when
        // any other commit added rows since the plan's snapshot: a merge that was already running when
        // the table was marked, or another attempt of this very commit. Compactions do not count.
        Transaction txn = table.newTransaction();
        RowDelta append = txn.newRowDelta()
                .conflictDetectionFilter(Expressions.alwaysTrue())
                .validateNoConflictingDataFiles();
        if (plan.baseSnapshotId() != null) {
            append.validateFromSnapshot(plan.baseSnapshotId());
        }
        files.forEach(append::addRows);
        summary.forEach(append::set);
        try {
            append.commit();
            txn.updateProperties()
                    .remove(PipelineProperties.PARALLEL_LOAD_IN_PROGRESS)
                    .commit();
            txn.commitTransaction(); // retried by Iceberg on a lost race, validating again each time
        } catch (ValidationException conflict) {
            table.refresh();
            if (CommitProtocol.snapshotOf(table, LoadFiles.runIdOf(loadId)) != null) {
                return commit(loadId); // another attempt of this commit landed first: report it
            }
            throw new IllegalStateException(
                    "Load " + loadId + " cannot commit: rows were committed to table " + id
                            + " after the load began (a merge that was already running when the table was marked). Nothing of the"
                            + " load was committed; start the load again (merges are held from its plan on). "
                            + conflict.getMessage(),
                    conflict);
        }
        table.refresh();
        Snapshot ours = CommitProtocol.snapshotOf(table, LoadFiles.runIdOf(loadId));
        Set<String> keep = new HashSet<>();
        files.forEach(f -> keep.add(f.location()));
        if (summary.containsKey(PipelineProperties.KEY_INDEX)) {
            keep.addAll(KeyIndex.filesOf(table, ours));
        }
        int cleaned = LoadFiles.cleanUp(table, loadId, keep);
        long millis = (System.nanoTime() - start) / 1_000_000;
        String note = "Export " + plan.exportId() + " is loaded: " + rows + " rows in " + files.size() + " data files"
                + (skipped > 0 ? " (" + skipped + " items skipped: the table had newer changes of them)" : "")
                + ". Merges resume from the staged stream.";
        LOG.atInfo()
                .addKeyValue("loadId", loadId)
                .addKeyValue("snapshotId", ours == null ? null : ours.snapshotId())
                .addKeyValue("rows", rows)
                .addKeyValue("dataFiles", files.size())
                .addKeyValue("indexEntries", indexEntries)
                .addKeyValue("millis", millis)
                .log(note);
        return new CommitResult(
                loadId,
                plan.exportId(),
                ours == null ? null : ours.snapshotId(),
                items,
                rows,
                skipped,
                files.size(),
                indexEntries,
                cleaned,
                false,
                note,
                millis);
    }

    /**
     * Ends a load that will not commit (a worker gave up, a damaged data file): removes the mark, so
     * merges resume, and deletes the load's files. Returns the number of files deleted.
     */
    public int abort(String loadId, String why) {
        Table table = TableCreator.loadIfExists(catalog, id);
        if (table == null) {
            return 0;
        }
        if (CommitProtocol.snapshotOf(table, LoadFiles.runIdOf(loadId)) != null) {
            throw new IllegalStateException("Load " + loadId + " was committed; it cannot be aborted.");
        }
        LoadMark mark = LoadMark.read(table);
        if (mark != null && mark.loadId().equals(loadId)) {
            table.updateProperties()
                    .remove(PipelineProperties.PARALLEL_LOAD_IN_PROGRESS)
                    .commit();
            table.refresh();
        }
        int deleted = LoadFiles.cleanUp(table, loadId, Set.of());
        LOG.atWarn()
                .addKeyValue("loadId", loadId)
                .addKeyValue("filesDeleted", deleted)
                .log("Parallel load {} aborted, nothing of it committed; merges resume. Cause: {}", loadId, why);
        return deleted;
    }

    // ------------------------------------------------------------------------------------- files

    private static long totalRecords(Snapshot s) {
        String n = s.summary().get(SnapshotSummary.TOTAL_RECORDS_PROP);
        return n == null ? 1 : Long.parseLong(n); // unknown: assume rows
    }

    /** The table, checked to be marked by this load. */
    private Table tableInLoad(String loadId) {
        Table table = TableCreator.loadIfExists(catalog, id);
        LoadMark mark = table == null ? null : LoadMark.read(table);
        if (mark == null || !mark.loadId().equals(loadId)) {
            throw new IllegalStateException("Load " + loadId + " is not in progress on table " + id
                    + " (the table's mark: " + mark + "): it was committed or aborted. Start a new load.");
        }
        return table;
    }

    private List<WorkDone> allDone(Table table, Plan plan) {
        ExecutorService pool = Executors.newFixedThreadPool(options.ioThreads());
        try {
            List<Future<WorkDone>> reads = new ArrayList<>();
            for (Work w : plan.work()) {
                String path = LoadFiles.folder(table, plan.loadId()) + "done/w" + w.work() + ".bin";
                reads.add(pool.submit(() -> (WorkDone) StepFiles.deserialize(
                        StepFiles.readBytes(table, path, "work item " + w.work() + " has not finished"))));
            }
            List<WorkDone> done = new ArrayList<>();
            reads.forEach(r -> done.add(Futures.join(r, "reading the workers' records")));
            return done;
        } finally {
            pool.shutdownNow();
        }
    }
}
