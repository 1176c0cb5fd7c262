package dev.ddb2iceberg.status;

import dev.ddb2iceberg.commit.Checkpoint;
import dev.ddb2iceberg.commit.ExportProgress;
import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.index.DamagedIndexException;
import dev.ddb2iceberg.index.IndexCache;
import dev.ddb2iceberg.index.IndexManifest;
import dev.ddb2iceberg.index.KeyIndex;
import dev.ddb2iceberg.load.parallel.ParallelExportLoad;
import dev.ddb2iceberg.removals.RemovalsIndex;
import dev.ddb2iceberg.staging.StagedObject;
import dev.ddb2iceberg.staging.StagingStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.DataOperations;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.io.CloseableIterable;

/**
 * The pipeline at a glance, for a person (text) or a tool (JSON): is the table there, how fresh is
 * it, what waits in staging, how many files and delete files it has, when it was last compacted.
 *
 * @param table {@code namespace.name}
 * @param exists whether the table exists yet (the merger creates it on its first run)
 * @param currentSnapshotId the table's current snapshot, or null
 * @param currentSnapshotAt when it was committed (ISO-8601), or null
 * @param snapshots snapshots kept (expiry removes old ones)
 * @param oldestSnapshotAgeHours age of the oldest kept snapshot, in hours
 * @param appliedObjectsInCheckpoint staged objects the checkpoint names as applied
 * @param lastMergeAt when the newest merger commit was made, or null
 * @param pendingObjects staged objects waiting to be merged
 * @param pendingBytes their size
 * @param oldestPendingAgeSeconds age of the oldest one: how far behind the table is (0 if none)
 * @param dataFiles live data files
 * @param dataBytes their size
 * @param records rows in them, before deletes
 * @param deleteFiles live delete files (position deletes or deletion vectors)
 * @param deleteBytes their size
 * @param smallDataFiles data files below 75% of the compaction target
 * @param smallFileRatio small data files over all data files (0 when there are none)
 * @param lastCompactionAt when maintenance last rewrote files, or null
 * @param scan what a full scan opens now, and about what it would once compacted
 * @param exportLoads DynamoDB exports loaded or being loaded, by export id
 * @param keyIndex the key index of the current snapshot, or null when the snapshot names none
 *     (the merger then rebuilds it, when KEY_INDEX is on)
 * @param removalsIndex the removals the table remembers, or null when it has recorded none
 * @param mergesHeldBecause why the merger merges nothing for now (it waits for the initial export
 *     load), or null; set by whoever knows the merger's settings ({@link #withMergesHeld})
 */
public record TableStatus(
        String table,
        boolean exists,
        Long currentSnapshotId,
        String currentSnapshotAt,
        int snapshots,
        long oldestSnapshotAgeHours,
        int appliedObjectsInCheckpoint,
        String lastMergeAt,
        int pendingObjects,
        long pendingBytes,
        long oldestPendingAgeSeconds,
        int dataFiles,
        long dataBytes,
        long records,
        int deleteFiles,
        long deleteBytes,
        int smallDataFiles,
        double smallFileRatio,
        String lastCompactionAt,
        ScanShape scan,
        Map<String, ExportProgress.Load> exportLoads,
        KeyIndexStatus keyIndex,
        RemovalsIndexStatus removalsIndex,
        String parallelLoad,
        String removals,
        HistoryStatus history,
        String mergesHeldBecause) {

    /**
     * The change history (HISTORY_TABLE) at a glance.
     *
     * @param table its name, {@code namespace.name}
     * @param exists false until the first merge with changes creates it
     * @param changes rows it holds (one per change)
     * @param dataFiles its data files
     * @param lastAppendAt when a merge last appended to it, or null
     * @param keptFrom the first day it keeps (HISTORY_RETENTION_DAYS), or null when it keeps every change
     */
    public record HistoryStatus(
            String table, boolean exists, long changes, long dataFiles, String lastAppendAt, String keptFrom) {
        public static HistoryStatus of(String name, Table history) {
            if (history == null || history.currentSnapshot() == null) {
                return new HistoryStatus(name, history != null, 0, 0, null, null);
            }
            Map<String, String> summary = history.currentSnapshot().summary();
            Snapshot append = Checkpoint.newestMergerSnapshot(history);
            String keptFrom = history.properties().get(PipelineProperties.HISTORY_KEPT_FROM);
            return new HistoryStatus(
                    name,
                    true,
                    Long.parseLong(summary.getOrDefault("total-records", "0")),
                    Long.parseLong(summary.getOrDefault("total-data-files", "0")),
                    append == null
                            ? null
                            : Instant.ofEpochMilli(append.timestampMillis()).toString(),
                    keptFrom == null
                            ? null
                            : Instant.ofEpochMilli(Long.parseLong(keptFrom)).toString());
        }
    }

    /** This status with the change history's. */
    public TableStatus withHistory(HistoryStatus h) {
        return copy(h, mergesHeldBecause);
    }

    /** This status, saying why merges are held ({@code why}: the merger's reason, or null). */
    public TableStatus withMergesHeld(String why) {
        return copy(history, why);
    }

    /** This status with the two parts set afterwards by who knows them: the history's, and why merges are held. */
    private TableStatus copy(HistoryStatus h, String why) {
        return new TableStatus(
                table,
                exists,
                currentSnapshotId,
                currentSnapshotAt,
                snapshots,
                oldestSnapshotAgeHours,
                appliedObjectsInCheckpoint,
                lastMergeAt,
                pendingObjects,
                pendingBytes,
                oldestPendingAgeSeconds,
                dataFiles,
                dataBytes,
                records,
                deleteFiles,
                deleteBytes,
                smallDataFiles,
                smallFileRatio,
                lastCompactionAt,
                scan,
                exportLoads,
                keyIndex,
                removalsIndex,
                parallelLoad,
                removals,
                h,
                why);
    }

    /** The removal policy the table's last merge applied (its properties), or null for a table without one. */
    private static String removals(Table table) {
        String ttl = table.properties().get(PipelineProperties.TTL_EXPIRIES);
        String deletes = table.properties().get(PipelineProperties.DELETES);
        return ttl == null && deletes == null
                ? null
                : "TTL_EXPIRIES=" + (ttl == null ? "delete" : ttl) + ", DELETES="
                        + (deletes == null ? "hard" : deletes);
    }

    /**
     * The key index at a glance.
     *
     * @param manifest its manifest's location
     * @param parts parts the keys are spread over
     * @param entries entries in the parts' base files (one per live row when no deltas are pending
     *     and no part has an overlay)
     * @param overlayEntries entries in the parts' overlays (newer entries and removals laid over a
     *     large part, until a fold rewrites it)
     * @param deltas delta files written since the parts were last folded
     * @param deltaEntries entries in them
     * @param bytes size of all its files in storage
     * @param damaged why the index cannot be read, or null (the next merge rebuilds a damaged one)
     */
    public record KeyIndexStatus(
            String manifest,
            int parts,
            long entries,
            long overlayEntries,
            int deltas,
            long deltaEntries,
            long bytes,
            String damaged) {
        static KeyIndexStatus of(Table table, Snapshot snapshot) {
            String manifest = KeyIndex.manifestOf(snapshot);
            if (manifest == null) {
                return null;
            }
            try {
                IndexManifest m =
                        KeyIndex.open(table, manifest, new IndexCache(0)).manifest();
                return new KeyIndexStatus(
                        manifest,
                        m.parts(),
                        m.baseEntries(),
                        m.overlayEntries(),
                        m.deltas().size(),
                        m.deltaEntries(),
                        m.bytes(),
                        null);
            } catch (DamagedIndexException e) {
                return new KeyIndexStatus(manifest, 0, 0, 0, 0, 0, 0, e.getMessage());
            }
        }
    }

    /**
     * The removals index at a glance: the removals the table remembers (for 48 hours, so that a late
     * copy of an older change cannot bring a removed item back).
     *
     * @param manifest its manifest's location, or the earlier format's list of files
     * @param entries removals in its parts (some may be past 48 hours, until their part is folded)
     * @param deltas delta files not yet folded into every part
     * @param deltaEntries entries in them (removals, and items put back)
     * @param bytes size of all its files in storage
     * @param earlierFormat the table still names the files of an earlier version (the next merge
     *     that commits moves them into an index)
     * @param damaged why it cannot be read, or null (merges stop until the file is restored)
     */
    public record RemovalsIndexStatus(
            String manifest,
            long entries,
            int deltas,
            long deltaEntries,
            long bytes,
            boolean earlierFormat,
            String damaged) {
        static RemovalsIndexStatus of(Table table) {
            String property = Checkpoint.readProperty(table, PipelineProperties.REMOVALS);
            if (property == null) {
                return null;
            }
            if (!RemovalsIndex.namesAnIndex(property)) {
                return new RemovalsIndexStatus(property, 0, 0, 0, 0, true, null);
            }
            try {
                IndexManifest m =
                        KeyIndex.open(table, property, new IndexCache(0)).manifest();
                return new RemovalsIndexStatus(
                        property, m.baseEntries(), m.deltas().size(), m.deltaEntries(), m.bytes(), false, null);
            } catch (DamagedIndexException e) {
                return new RemovalsIndexStatus(property, 0, 0, 0, 0, false, e.getMessage());
            }
        }

        String text() {
            if (damaged != null) {
                return "damaged: " + damaged + " (merges stop until it is restored: see Troubleshooting,"
                        + " \"The removals index\")";
            }
            if (earlierFormat) {
                return "files of an earlier version (" + manifest + "); the next merge moves them into an index";
            }
            return entries + " removals on record + " + deltas + " deltas (" + deltaEntries + " entries), " + bytes
                    + " bytes";
        }
    }

    /** The status of {@code table} (null if it does not exist yet) and of its staging prefix. */
    public static TableStatus of(String name, Table table, StagingStore store, long targetFileSizeBytes, Clock clock) {
        Instant now = clock.instant();
        Set<String> applied = table == null ? Set.of() : Checkpoint.read(table);
        List<StagedObject> pending = store.list().stream()
                .filter(o -> !applied.contains(Checkpoint.token(o.name())))
                .toList();
        long pendingBytes = pending.stream().mapToLong(StagedObject::size).sum();
        long oldestPending = pending.stream()
                .map(StagedObject::lastModified)
                .min(Instant::compareTo)
                .map(t -> Math.max(0, Duration.between(t, now).toSeconds()))
                .orElse(0L);
        if (table == null || table.currentSnapshot() == null) {
            return new TableStatus(
                    name,
                    table != null,
                    null,
                    null,
                    0,
                    0,
                    0,
                    null,
                    pending.size(),
                    pendingBytes,
                    oldestPending,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    null,
                    null,
                    Map.of(),
                    null,
                    null,
                    table == null ? null : ParallelExportLoad.progress(table),
                    table == null ? null : removals(table),
                    null,
                    null);
        }
        Snapshot current = table.currentSnapshot();
        int snapshots = 0;
        long oldestSnapshot = current.timestampMillis();
        Instant lastCompaction = null;
        for (Snapshot s : table.snapshots()) {
            snapshots++;
            oldestSnapshot = Math.min(oldestSnapshot, s.timestampMillis());
            if (DataOperations.REPLACE.equals(s.operation())
                    && (lastCompaction == null || s.timestampMillis() > lastCompaction.toEpochMilli())) {
                lastCompaction = Instant.ofEpochMilli(s.timestampMillis());
            }
        }
        Snapshot lastMerge = Checkpoint.newestMergerSnapshot(table);
        int dataFiles = 0;
        int small = 0;
        long dataBytes = 0;
        long records = 0;
        Map<String, DeleteFile> deletes = new HashMap<>();
        ScanShape.Counter shape = new ScanShape.Counter();
        try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
            for (FileScanTask task : tasks) {
                shape.add(task);
                dataFiles++;
                dataBytes += task.file().fileSizeInBytes();
                records += task.file().recordCount();
                if (task.file().fileSizeInBytes() < targetFileSizeBytes * 3 / 4) {
                    small++;
                }
                task.deletes().forEach(d -> deletes.put(d.location() + "#" + d.contentOffset(), d));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        long deleteBytes = deletes.values().stream()
                .mapToLong(d -> d.contentSizeInBytes() != null ? d.contentSizeInBytes() : d.fileSizeInBytes())
                .sum();
        return new TableStatus(
                name,
                true,
                current.snapshotId(),
                Instant.ofEpochMilli(current.timestampMillis()).toString(),
                snapshots,
                Duration.between(Instant.ofEpochMilli(oldestSnapshot), now).toHours(),
                applied.size(),
                lastMerge == null
                        ? null
                        : Instant.ofEpochMilli(lastMerge.timestampMillis()).toString(),
                pending.size(),
                pendingBytes,
                oldestPending,
                dataFiles,
                dataBytes,
                records,
                deletes.size(),
                deleteBytes,
                small,
                dataFiles == 0 ? 0 : (double) small / dataFiles,
                lastCompaction == null ? null : lastCompaction.toString(),
                shape.shape(targetFileSizeBytes),
                ExportProgress.read(table),
                KeyIndexStatus.of(table, current),
                RemovalsIndexStatus.of(table),
                ParallelExportLoad.progress(table),
                removals(table),
                null,
                null);
    }

    /** The report for a person. */
    public String text() {
        StringBuilder sb = new StringBuilder();
        sb.append("table        ")
                .append(table)
                .append(
                        exists
                                ? ""
                                : mergesHeldBecause == null
                                        ? " (does not exist yet: the merger creates it)"
                                        : " (does not exist yet: the export load creates it)")
                .append('\n');
        if (mergesHeldBecause != null) {
            sb.append("merges held  ").append(mergesHeldBecause).append('\n');
        }
        if (currentSnapshotId != null) {
            sb.append("snapshot     ")
                    .append(currentSnapshotId)
                    .append(" at ")
                    .append(currentSnapshotAt)
                    .append(" (")
                    .append(snapshots)
                    .append(" kept, oldest ")
                    .append(oldestSnapshotAgeHours)
                    .append(" h old)\n");
            sb.append("last merge   ")
                    .append(lastMergeAt == null ? "-" : lastMergeAt)
                    .append(" (checkpoint names ")
                    .append(appliedObjectsInCheckpoint)
                    .append(" staged objects)\n");
        }
        sb.append("waiting      ")
                .append(pendingObjects)
                .append(" staged objects, ")
                .append(pendingBytes)
                .append(" bytes")
                .append(pendingObjects == 0 ? "" : ", oldest " + oldestPendingAgeSeconds + " s old")
                .append('\n');
        if (currentSnapshotId != null) {
            sb.append("data files   ")
                    .append(dataFiles)
                    .append(" (")
                    .append(dataBytes)
                    .append(" bytes, ")
                    .append(records)
                    .append(" rows before deletes); ")
                    .append(smallDataFiles)
                    .append(" small (")
                    .append(String.format("%.0f%%", smallFileRatio * 100))
                    .append(")\n");
            sb.append("delete files ")
                    .append(deleteFiles)
                    .append(" (")
                    .append(deleteBytes)
                    .append(" bytes)\n");
            sb.append("full scan    ").append(scan.text()).append('\n');
            sb.append("compacted    ")
                    .append(lastCompactionAt == null ? "never" : lastCompactionAt.toString())
                    .append('\n');
        }
        if (currentSnapshotId != null) {
            sb.append("key index    ")
                    .append(
                            keyIndex == null
                                    ? "none for this snapshot (with KEY_INDEX=on the next merge builds it from the table)"
                                    : keyIndex.damaged() != null
                                            ? "damaged: " + keyIndex.damaged() + " (the next merge rebuilds it)"
                                            : keyIndex.entries() + " entries in " + keyIndex.parts() + " parts"
                                                    + (keyIndex.overlayEntries() == 0
                                                            ? ""
                                                            : " (and " + keyIndex.overlayEntries()
                                                                    + " in their overlays)")
                                                    + " + " + keyIndex.deltas() + " deltas (" + keyIndex.deltaEntries()
                                                    + " entries), " + keyIndex.bytes() + " bytes; covers this snapshot")
                    .append('\n');
        }
        if (removalsIndex != null) {
            sb.append("removed      ").append(removalsIndex.text()).append('\n');
        }
        exportLoads.forEach((id, load) -> sb.append("export       ")
                .append(id)
                .append(": ")
                .append(load.done() ? "loaded, " : "loading, ")
                .append(load.items())
                .append(" items")
                .append(load.done() ? "" : " so far (invoke the Merger with {\"loadExport\": ...} again to go on)")
                .append('\n'));
        if (parallelLoad != null) {
            sb.append("loading      ").append(parallelLoad).append('\n');
        }
        if (removals != null) {
            sb.append("removals     ").append(removals).append('\n');
        }
        if (history != null) {
            sb.append("history      ")
                    .append(history.table())
                    .append(": ")
                    .append(
                            !history.exists()
                                    ? "not created yet (the next merge with changes creates it)"
                                    : history.changes() + " changes in " + history.dataFiles()
                                            + " files, last appended "
                                            + (history.lastAppendAt() == null ? "-" : history.lastAppendAt())
                                            + (history.keptFrom() == null
                                                    ? ""
                                                    : ", keeps changes from " + history.keptFrom()))
                    .append('\n');
        }
        return sb.toString();
    }
}
