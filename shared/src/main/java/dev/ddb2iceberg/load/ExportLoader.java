package dev.ddb2iceberg.load;

import dev.ddb2iceberg.commit.Checkpoint;
import dev.ddb2iceberg.commit.CommitProtocol;
import dev.ddb2iceberg.commit.ExportProgress;
import dev.ddb2iceberg.commit.LoadMark;
import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.export.ExportFileReader;
import dev.ddb2iceberg.export.ExportLines;
import dev.ddb2iceberg.export.ExportLocation;
import dev.ddb2iceberg.export.ExportManifest;
import dev.ddb2iceberg.merge.ChangeApplier;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.staging.StagedObject;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.table.TableCreator;
import dev.ddb2iceberg.table.TableLayout;
import dev.ddb2iceberg.table.TableSettings;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Loads a DynamoDB export into the table in bounded chunks, each committed with the load's cursor
 * (data file, line) in its snapshot summary, so a run stopped by its deadline or a crash resumes at
 * the last committed chunk, and a finished load is never applied twice. Chunks go through the
 * merger's own apply step, so an exported item never overwrites a newer stream change of the same
 * item, nor brings back an item the stream removed (see {@link ExportLines} for the ordering).
 *
 * <p>Before a full export's first chunk, the hand-off check: the stream changes staged or merged so
 * far must reach back to the export time minus a margin, else changes between the export and the
 * stream's start would be missing, and the load is refused saying so.
 */
public final class ExportLoader {
    private static final Logger LOG = LoggerFactory.getLogger(ExportLoader.class);
    /** Removals are remembered for 48 h; an export older than this could bring back an item removed since. */
    static final Duration MAX_EXPORT_AGE = Merger.REMOVALS_KEPT.minusHours(2);

    /**
     * What to load.
     *
     * @param keys the source table's key attributes; needed only when the Iceberg table does not exist
     *     yet (a full export's lines do not say which attributes are keys)
     * @param margin how far before the export time the staged stream must reach
     * @param skipHandOffCheck load even when nothing shows that the stream covers the export time
     */
    public record Request(ExportLocation location, List<String> keys, Duration margin, boolean skipHandOffCheck) {}

    private final Catalog catalog;
    private final TableIdentifier id;
    private final TableSettings tableSettings;
    private final StagingStore store;
    private final MergeOptions options;
    private final S3Client exportS3;
    private final ChangeApplier applier;

    public ExportLoader(
            Catalog catalog, TableSettings tableSettings, StagingStore store, MergeOptions options, S3Client exportS3) {
        this.catalog = catalog;
        this.id = TableIdentifier.of(tableSettings.namespace(), tableSettings.name());
        this.tableSettings = tableSettings;
        this.store = store;
        this.options = options;
        this.exportS3 = exportS3;
        this.applier = new ChangeApplier(tableSettings, store, options);
    }

    /** Loads chunks of up to {@code maxChanges} items until the export is in or the deadline is near. */
    public ExportLoadResult run(Request request, Instant deadline) {
        long start = System.nanoTime();
        ExportManifest manifest = ExportManifest.read(exportS3, request.location());
        String exportId = manifest.exportId();
        Table table = TableCreator.loadIfExists(catalog, id);
        if (table != null) {
            TableCreator.adopt(table, tableSettings);
            LoadMark parallel = LoadMark.read(table);
            if (parallel != null) {
                throw new IllegalStateException(
                        "Parallel load " + parallel.loadId() + " of export " + parallel.exportId()
                                + " has been in progress since " + parallel.started()
                                + ": run one load at a time; load this export once"
                                + " it has committed.");
            }
        }
        ExportProgress.Load load =
                table == null ? null : ExportProgress.read(table).get(exportId);
        if (load != null && load.done()) {
            return result(
                    manifest, load, 0, 0, 0, 0, start, "Export " + exportId + " was loaded before; nothing to do.");
        }
        List<String> keys = keyNames(table, request, id);
        List<StagedObject> waiting = store.list(); // for the hand-off check and the removals window, as in a merge
        if (load == null) {
            checkHandOff(table, manifest, request, waiting, store);
            load = new ExportProgress.Load(
                    manifest.type().name(), manifest.time().toEpochMilli(), 0, 0, 0, false);
            LOG.atInfo()
                    .addKeyValue("exportId", exportId)
                    .addKeyValue("items", manifest.itemCount())
                    .addKeyValue("files", manifest.files().size())
                    .log("Starting the load of export {}", request.location());
        }
        ExportLines decoder =
                new ExportLines(manifest.type(), keys, manifest.time().toEpochMilli());
        ExportFileReader reader =
                new ExportFileReader(exportS3, request.location().bucket());
        long items = 0;
        long itemsWritten = 0;
        long skipped = 0;
        int snapshots = 0;
        long slowestChunkMillis = 0;
        ExecutorService pool = Executors.newFixedThreadPool(options.ioThreads());
        try {
            while (!load.done()) {
                if (snapshots > 0
                        && Instant.now().plusMillis(2 * slowestChunkMillis).isAfter(deadline)) {
                    break; // the next chunk might not finish in time; the next run resumes here
                }
                long chunkStart = System.nanoTime();
                Chunk chunk = readChunk(manifest, load, reader, decoder);
                if (table == null) {
                    if (chunk.changes.isEmpty()) {
                        return result(
                                manifest,
                                load,
                                0,
                                0,
                                0,
                                0,
                                start,
                                "Export " + exportId + " holds no items and the table"
                                        + " does not exist yet: nothing to load.");
                    }
                    table = TableCreator.loadOrCreate(catalog, id, tableSettings, chunk.changes);
                }
                ChangeApplier.Applied applied = commit(table, exportId, load, chunk, waiting, pool);
                load = chunk.next;
                items += chunk.changes.size();
                itemsWritten += applied.itemsWritten();
                skipped += applied.stale();
                snapshots++;
                slowestChunkMillis = Math.max(slowestChunkMillis, (System.nanoTime() - chunkStart) / 1_000_000);
                LOG.atInfo()
                        .addKeyValue("exportId", exportId)
                        .addKeyValue("snapshotId", applied.snapshotId())
                        .addKeyValue("items", chunk.changes.size())
                        .addKeyValue("itemsLoaded", load.items())
                        .addKeyValue("itemsInExport", manifest.itemCount())
                        .addKeyValue("file", load.file())
                        .addKeyValue("line", load.line())
                        .addKeyValue("millis", slowestChunkMillis)
                        .log(
                                "Loaded a chunk of export {}: {} of {} items",
                                exportId,
                                load.items(),
                                manifest.itemCount());
            }
        } finally {
            pool.shutdownNow();
        }
        String note = load.done()
                ? "Export " + exportId + " is loaded. The merger goes on with the staged stream; nothing else to do."
                : "Stopped before the deadline with " + (manifest.itemCount() - load.items())
                        + " items to go: invoke again" + " with the same input to resume.";
        return result(manifest, load, items, itemsWritten, skipped, snapshots, start, note);
    }

    public static List<String> keyNames(Table table, Request request, TableIdentifier id) {
        if (table != null) {
            List<String> tableKeys = TableLayout.of(table).keyAttributes();
            if (!request.keys().isEmpty() && !request.keys().equals(tableKeys)) {
                throw new IllegalArgumentException("The input names keys " + request.keys() + " but the table " + id
                        + " has keys " + tableKeys + ". Leave \"keys\" out, or load into another table.");
            }
            return tableKeys;
        }
        if (request.keys().isEmpty()) {
            throw new IllegalArgumentException(
                    "Table " + id + " does not exist yet, and a full export does not say which"
                            + " attributes are the keys: add \"keys\": [\"<partition key>\", \"<sort key>\"] to the input (from"
                            + " aws dynamodb describe-table --query Table.KeySchema).");
        }
        return request.keys();
    }

    /** Refuses (IllegalStateException with the reason) a load that could leave a gap or bring items back. */
    public static void checkHandOff(
            Table table, ExportManifest manifest, Request request, List<StagedObject> staged, StagingStore store) {
        if (manifest.type() != ExportManifest.Type.FULL || request.skipHandOffCheck()) {
            return;
        }
        Instant exportTime = manifest.time();
        if (exportTime.isBefore(Instant.now().minus(MAX_EXPORT_AGE))) {
            throw new IllegalStateException("Export " + manifest.exportId() + " is of " + exportTime + ", more than "
                    + MAX_EXPORT_AGE.toHours() + " h ago: the merger remembers removals for "
                    + Merger.REMOVALS_KEPT.toHours()
                    + " h, so items removed since could come back. Request a new export (the stager keeps running).");
        }
        Instant needed = exportTime.minus(request.margin());
        Long since = streamReachesBackTo(table, staged, store);
        if (since == null) {
            throw new IllegalStateException(
                    "Nothing shows that the stream covers export " + manifest.exportId() + " of "
                            + exportTime
                            + ": no stream change has been staged or merged yet. Deploy the stager on the table's stream"
                            + " (from TRIM_HORIZON), wait for a change to be staged, then load; or, if the table has not changed since"
                            + " " + needed + ", add \"skipHandOffCheck\": true.");
        }
        if (Instant.ofEpochMilli(since).isAfter(needed)) {
            throw new IllegalStateException(
                    "The staged stream reaches back to " + Instant.ofEpochMilli(since) + ", after"
                            + " the export time " + exportTime + " minus the margin of "
                            + request.margin().toMinutes() + " min: changes"
                            + " between would be missing from the table. Keep the stager running and request a new export (the"
                            + " documented order is stream first, export second).");
        }
    }

    /** The oldest stream change merged so far or still staged (epoch ms), or null when there is none. */
    private static Long streamReachesBackTo(Table table, List<StagedObject> staged, StagingStore store) {
        String merged = table == null ? null : Checkpoint.readProperty(table, PipelineProperties.STREAM_SINCE);
        Long since = merged == null ? null : Long.valueOf(merged);
        if (!staged.isEmpty()) {
            long oldest = store.read(staged.get(0).name()).stream()
                    .mapToLong(Change::approximateCreationMillis)
                    .min()
                    .orElse(Long.MAX_VALUE);
            since = since == null ? oldest : Math.min(since, oldest);
        }
        return since;
    }

    /** The items of one chunk, and the cursor after them. */
    private record Chunk(List<Change> changes, ExportProgress.Load next) {}

    private Chunk readChunk(
            ExportManifest manifest, ExportProgress.Load at, ExportFileReader reader, ExportLines decoder) {
        List<Change> changes = new ArrayList<>();
        int file = at.file();
        long line = at.line();
        while (file < manifest.files().size() && changes.size() < options.maxChanges()) {
            ExportManifest.DataFile f = manifest.files().get(file);
            if (line == 0) {
                reader.verify(f); // before anything of the file is committed
            }
            ExportFileReader.Chunk part = reader.read(f, line, options.maxChanges() - changes.size(), decoder);
            changes.addAll(part.changes());
            if (part.endOfFile()) {
                file++;
                line = 0;
            } else {
                line = part.nextLine();
            }
        }
        boolean done = file == manifest.files().size();
        return new Chunk(
                changes,
                new ExportProgress.Load(at.type(), at.exportMillis(), file, line, at.items() + changes.size(), done));
    }

    /** Commits one chunk with the new cursor; re-plans on a lost race, refuses if another run moved the cursor. */
    private ChangeApplier.Applied commit(
            Table table,
            String exportId,
            ExportProgress.Load from,
            Chunk chunk,
            List<StagedObject> waiting,
            ExecutorService pool) {
        String runId = "load-" + exportId + "-" + UUID.randomUUID();
        CommitProtocol protocol = new CommitProtocol(
                "loading a chunk of export " + exportId,
                options.maxCommitAttempts(),
                "The chunk was not loaded; invoke again to resume.");
        return protocol.run(table, attempt -> {
                    Map<String, ExportProgress.Load> loads = ExportProgress.read(table);
                    ExportProgress.Load current = loads.get(exportId);
                    boolean fresh = from.file() == 0 && from.line() == 0 && from.items() == 0;
                    if (current == null ? !fresh : !current.equals(from)) {
                        throw new IllegalStateException("Another run is loading export " + exportId
                                + " (the table's cursor is " + current + ", this run's " + from
                                + "). Run one load at a time; this run stops without loading more.");
                    }
                    loads.put(exportId, chunk.next);
                    Map<String, String> properties = Checkpoint.carried(table);
                    properties.put(PipelineProperties.EXPORT_LOADS, ExportProgress.encode(loads));
                    return applier.apply(
                            table,
                            chunk.changes,
                            properties,
                            runId + "-" + attempt,
                            Merger.removalsCutoff(waiting, table),
                            pool);
                })
                .value();
    }

    private static ExportLoadResult result(
            ExportManifest m,
            ExportProgress.Load load,
            long items,
            long itemsWritten,
            long skipped,
            int snapshots,
            long start,
            String note) {
        return new ExportLoadResult(
                m.exportId(),
                m.type().name(),
                m.time().toString(),
                m.itemCount(),
                load.items(),
                items,
                itemsWritten,
                skipped,
                m.files().size(),
                load.file(),
                snapshots,
                load.done(),
                note,
                (System.nanoTime() - start) / 1_000_000);
    }
}
