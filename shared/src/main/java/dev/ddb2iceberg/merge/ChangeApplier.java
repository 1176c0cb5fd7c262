package dev.ddb2iceberg.merge;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ddb2iceberg.config.RemovalPolicy;
import dev.ddb2iceberg.config.TableSettings;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbJson;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.SequenceNumbers;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.table.TableLayout;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.function.Consumer;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.PartitionKey;
import org.apache.iceberg.RowDelta;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.UpdateSchema;
import org.apache.iceberg.data.InternalRecordWrapper;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.apache.iceberg.exceptions.ValidationException;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.DeleteWriteResult;
import org.apache.iceberg.util.StructLikeSet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The apply step of a merge, shared by staged changes and export loads: one commit of a list of
 * changes. Reduce them to each key's newest, find the keys' live rows through the lookup, skip
 * changes the table already holds (or removed since), write the new rows and the deletes of the
 * rows they replace or remove, and commit it all in one RowDelta whose summary carries the
 * caller's checkpoint properties.
 */
final class ChangeApplier {
  private static final Logger LOG = LoggerFactory.getLogger(ChangeApplier.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  /** Schema commits a writer tries before giving up (each loses only to another schema change). */
  private static final int SCHEMA_COMMIT_ATTEMPTS = 20;

  private final TableSettings tableSettings;
  private final StagingStore store;
  private final MergeOptions options;
  private final Consumer<Table> beforeCommit;

  ChangeApplier(TableSettings tableSettings, StagingStore store, MergeOptions options, Consumer<Table> beforeCommit) {
    this.tableSettings = tableSettings;
    this.options = options;
    this.store = store;
    this.beforeCommit = beforeCommit;
  }

  /** What one commit of changes did; the counts are those of {@link MergeResult}. */
  record Applied(Long snapshotId, List<Change> applied, long stale, long itemsWritten, long rowsReplaced,
      long itemsRemoved, int quarantined, int filesRead, int filesInTable) {}

  /**
   * Commits {@code changes} with {@code properties} (the caller's record of what it applied,
   * carried with the other checkpoint properties) in the snapshot summary. Throws
   * ValidationException or CommitFailedException when a race is lost; the caller re-plans.
   */
  Applied apply(Table table, List<Change> changes, Map<String, String> properties, String runId, long removalsCutoff,
      ExecutorService pool) {
    table = evolveSchema(table, changes);
    TableLayout layout = TableLayout.of(table);
    RemovalPolicy policy = tableSettings.removals();
    // TTL_EXPIRIES=keep: an expiry leaves the row as the item's last change wrote it, so it is
    // not applied at all (nor remembered: the row itself makes any older copy stale).
    long expiriesKept = 0;
    if (policy.ttlExpiries() == RemovalPolicy.TtlExpiries.KEEP) {
      List<Change> kept = new ArrayList<>(changes.size());
      for (Change c : changes) {
        if (!c.ttlExpiry()) {
          kept.add(c);
        }
      }
      expiriesKept = changes.size() - kept.size();
      changes = kept;
    }

    // Each key's change with the highest sequence number (compared as numbers); and, when removals
    // may keep rows, each key's newest upsert (the item as it was before a removal) and newest
    // removal that deletes the row (an item it deleted is not there for a later removal to keep).
    boolean removalsKeepRows = policy.keepsRow(true) || policy.keepsRow(false);
    Map<List<Object>, Change> latest = new HashMap<>();
    Map<List<Object>, Change> latestUpsert = new HashMap<>();
    Map<List<Object>, Change> latestDeleting = new HashMap<>();
    int quarantined = 0;
    for (Change c : changes) {
      List<Object> key = layout.keyOf(c);
      if (key == null) {
        quarantineChange(c, layout.whyKeyDoesNotFit(c));
        quarantined++;
        continue;
      }
      latest.merge(key, c, ChangeApplier::newer);
      if (removalsKeepRows && c.operation().isUpsert()) {
        latestUpsert.merge(key, c, ChangeApplier::newer);
      } else if (removalsKeepRows && !policy.keepsRow(c.ttlExpiry())) {
        latestDeleting.merge(key, c, ChangeApplier::newer);
      }
    }

    long tFind = System.nanoTime();
    Snapshot base = table.currentSnapshot();
    Tombstones removals = Tombstones.read(table, layout);
    LiveRowLookup lookup = options.lookup(pool);
    LiveRowLookup.Found found = lookup.find(table, layout, base == null ? null : base.snapshotId(), latest.keySet());

    List<Record> rows = new ArrayList<>();
    List<LiveRow> toDelete = new ArrayList<>();
    List<Change> applied = new ArrayList<>();
    List<Change> removalsSeen = new ArrayList<>(); // every change the removals file must know of
    RemovedRows removedButKept = new RemovedRows(table, layout); // TTL_EXPIRIES=mark, DELETES=soft
    long stale = 0;
    // Every live row of a changed key is deleted; it counts as replaced when the key gets a new
    // row, else its item counts as removed (once, however many rows it had).
    long rowsReplaced = 0;
    long itemsRemoved = 0;
    List<List<Object>> removedKeys = new ArrayList<>(); // keys left without a row

    for (Map.Entry<List<Object>, Change> e : latest.entrySet()) {
      Change c = e.getValue();
      List<LiveRow> live = found.rows().getOrDefault(e.getKey(), List.of());
      String padded = SequenceNumbers.pad(c.sequenceNumber());
      if (live.stream().anyMatch(r -> r.paddedSequence().compareTo(padded) >= 0)
          || (live.isEmpty() && removals.removedAfter(e.getKey(), c.sequenceNumber()))) {
        stale++; // the table already holds this change or a newer one, or removed the item since
        continue;
      }
      removalsSeen.add(c);
      if (c.operation().isUpsert()) {
        rows.add(layout.toRow(c));
        rowsReplaced += live.size();
      } else if (policy.keepsRow(c.ttlExpiry()) && keepsRow(removedButKept, removals, e.getKey(), c,
          latestUpsert.get(e.getKey()), latestDeleting.get(e.getKey()), live)) {
        rowsReplaced += live.size(); // the item's row is written again, marked
      } else if (live.isEmpty()) {
        continue; // removing an item the table does not have: only the removals file notes it
      } else {
        itemsRemoved++;
        removedKeys.add(e.getKey());
      }
      toDelete.addAll(live);
      applied.add(c);
    }
    rows.addAll(removedButKept.rows(pool));
    String removalsFile = removals.update(table, layout, removalsSeen, System.currentTimeMillis(), removalsCutoff, runId);

    // Each touched file is dropped (all its live rows go), folded with the partition's other small
    // files into the merge's new file, or given deletes; see SmallFileRewrite.
    SmallFileRewrite.Plan files = new SmallFileRewrite(table, options)
        .plan(toDelete, found.liveRowsByFile(), found.files(), partitionsOf(table, rows));
    List<LiveRow> positional = files.positional();
    List<Record> moved = SmallFileRewrite.liveRowsBut(table, files.folded(), pool);

    long tWrite = System.nanoTime();
    MergeWriter writer = new MergeWriter(table, runId);
    List<Record> toWrite = rows;
    if (!moved.isEmpty()) {
      toWrite = new ArrayList<>(rows);
      toWrite.addAll(moved);
    }
    MergeWriter.Written written = writer.writeRows(toWrite, layout.keyOrder(), pool);
    List<DataFile> dataFiles = written.files();
    long tDeletes = System.nanoTime();
    DeleteWriteResult deletes = writer.writeDeletes(positional, pool);
    LiveRowLookup.Recorded recorded = lookup.record(table, layout, written.rows(), removedKeys);
    long tCommit = System.nanoTime();

    RowDelta delta = table.newRowDelta()
        .set(Checkpoint.RUN_ID, runId)
        .conflictDetectionFilter(Expressions.alwaysTrue())
        .validateNoConflictingDataFiles()
        .validateNoConflictingDeleteFiles()
        .validateDeletedFiles();
    if (base != null) {
      delta.validateFromSnapshot(base.snapshotId());
      // Files given deletes must still exist at commit; dropped files are checked by
      // validateDeletedFiles (Iceberg refuses a file in both lists).
      delta.validateDataFilesExist(positional.stream().map(r -> (CharSequence) r.task().file().location()).toList());
    }
    if (removalsFile == null) {
      properties.remove(Tombstones.PROPERTY); // nothing removed is remembered any more
    } else {
      properties.put(Tombstones.PROPERTY, removalsFile);
    }
    properties.putAll(recorded.properties());
    properties.forEach(delta::set);
    dataFiles.forEach(delta::addRows);
    deletes.deleteFiles().forEach(delta::addDeletes);
    deletes.rewrittenDeleteFiles().forEach(delta::removeDeletes);
    files.dropped().forEach(delta::removeRows);
    files.droppedDeletes().forEach(delta::removeDeletes);
    beforeCommit.accept(table);
    Long snapshotId;
    try {
      delta.commit();
      snapshotId = table.currentSnapshot().snapshotId(); // a successful commit leaves the table at its snapshot
    } catch (CommitStateUnknownException unknown) {
      table.refresh();
      Snapshot ours = Checkpoint.snapshotOf(table, runId);
      if (ours == null) {
        LOG.warn("Commit outcome unknown and run {} is not in the table history: re-planning", runId);
        throw new CommitFailedException(unknown, "commit state unknown and not committed");
      }
      LOG.warn("Commit outcome was unknown, but run {} is in the table history: it committed", runId);
      snapshotId = ours.snapshotId();
    } catch (ValidationException | CommitFailedException lost) {
      cleanUp(table, dataFiles, deletes.deleteFiles(), recorded.files());
      throw lost;
    }
    long tDone = System.nanoTime();
    if (removedButKept.size() > 0 || expiriesKept > 0) {
      LOG.info("Removals kept as rows ({}): {} marked, {} TTL expiries left their rows as they were",
          policy, removedButKept.size(), expiriesKept);
    }
    LOG.info("Committed snapshot {}: {} changes, {} items written ({} replaced a row), {} items removed, {} stale"
        + " changes skipped, {} data files dropped ({} small ones folded, {} of them untouched, {} bytes, {} rows"
        + " moved), {} delete files written ({} replaced), read {} of {} data files; ms finding rows {}, writing rows"
        + " {}, writing deletes {}, committing {}",
        snapshotId, changes.size(), rows.size(), rowsReplaced, itemsRemoved, stale, files.dropped().size(),
        files.folded().size(), files.untouchedFolded(), files.foldedBytes(), moved.size(),
        deletes.deleteFiles().size(), deletes.rewrittenDeleteFiles().size(), found.filesRead(), found.filesInTable(),
        (tWrite - tFind) / 1_000_000, (tDeletes - tWrite) / 1_000_000, (tCommit - tDeletes) / 1_000_000,
        (tDone - tCommit) / 1_000_000);
    return new Applied(snapshotId, applied, stale, rows.size(), rowsReplaced, itemsRemoved, quarantined,
        found.filesRead(), found.filesInTable());
  }

  /** Whether removal {@code c} keeps its item's row (noted in {@code kept}); see {@link RemovedRows#keep}. */
  private static boolean keepsRow(RemovedRows kept, Tombstones removals, List<Object> key, Change c, Change upsert,
      Change deleting, List<LiveRow> live) {
    return kept.keep(c, upsert, deleting, live,
        upsert != null && removals.removedAfter(key, upsert.sequenceNumber()));
  }

  private static Change newer(Change a, Change b) {
    return SequenceNumbers.compare(a.sequenceNumber(), b.sequenceNumber()) >= 0 ? a : b;
  }

  /** The partitions (of the current spec) that {@code rows} go to. */
  private static StructLikeSet partitionsOf(Table table, List<Record> rows) {
    PartitionKey partition = new PartitionKey(table.spec(), table.schema());
    InternalRecordWrapper wrapper = new InternalRecordWrapper(table.schema().asStruct());
    StructLikeSet partitions = StructLikeSet.create(table.spec().partitionType());
    for (Record row : rows) {
      partition.partition(wrapper.wrap(row));
      if (!partitions.contains(partition)) {
        partitions.add(partition.copy());
      }
    }
    return partitions;
  }

  /** Adds typed columns for attributes never seen before (a separate, harmless commit). */
  private Table evolveSchema(Table table, List<Change> changes) {
    return evolveSchema(table, changes, tableSettings);
  }

  /** Whether the table's columns already hold every attribute of these changes (no schema change needed). */
  static boolean schemaCovers(Table table, List<Change> changes, TableSettings tableSettings) {
    return schemaChanges(table, newImages(changes), tableSettings).isEmpty();
  }

  /**
   * Adds typed columns for attributes never seen before, in a commit of its own. Concurrent writers
   * (the parallel load's workers) may add columns at the same moment: a lost race is re-planned
   * from the new schema, where the other writer's columns may already be what this one needs.
   */
  static Table evolveSchema(Table table, List<Change> changes, TableSettings tableSettings) {
    List<Map<String, DdbValue>> images = newImages(changes);
    for (int attempt = 1; ; attempt++) {
      TableLayout.SchemaChanges needed = schemaChanges(table, images, tableSettings);
      if (needed.isEmpty()) {
        return table;
      }
      UpdateSchema update = table.updateSchema();
      needed.applyTo(update);
      try {
        update.commit();
      } catch (CommitFailedException lost) {
        if (attempt >= SCHEMA_COMMIT_ATTEMPTS) {
          throw lost;
        }
        LOG.info("Schema change attempt {} lost a race ({}); re-planning it", attempt, lost.getMessage());
        // Jittered: hundreds of load workers meeting the same new attribute must not retry in step.
        try {
          Thread.sleep(java.util.concurrent.ThreadLocalRandom.current().nextLong(50L << Math.min(attempt, 5)));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw lost;
        }
        table.refresh();
        continue;
      }
      table.refresh();
      LOG.info("Schema: {}", needed);
      return table;
    }
  }

  private static List<Map<String, DdbValue>> newImages(List<Change> changes) {
    List<Map<String, DdbValue>> images = new ArrayList<>();
    for (Change c : changes) {
      if (c.newImage() != null) {
        images.add(c.newImage());
      }
    }
    return images;
  }

  /** The columns these images need that the table lacks (new field ids follow the schema's highest). */
  private static TableLayout.SchemaChanges schemaChanges(Table table, List<Map<String, DdbValue>> images,
      TableSettings tableSettings) {
    int[] placeholderIds = {table.schema().highestFieldId()};
    TableLayout.SchemaChanges changes =
        TableLayout.of(table).schemaChanges(images, tableSettings.columnTypes(), () -> ++placeholderIds[0]);
    // The removal policy's mark columns exist from the first merge under it, so queries that
    // filter on them work before any removal comes.
    List<TableLayout.Addition> marks = new ArrayList<>();
    RemovalPolicy policy = tableSettings.removals();
    for (boolean ttl : new boolean[] {true, false}) {
      String column = policy.markColumn(ttl);
      if (column != null && table.schema().findField(column) == null) {
        marks.add(new TableLayout.Addition(null, column, org.apache.iceberg.types.Types.TimestampType.withZone(),
            ttl ? "when DynamoDB's TTL expired the item (TTL_EXPIRIES=mark); null while it lives"
                : "when a user deleted the item (DELETES=soft); null while it lives"));
      }
    }
    if (marks.isEmpty()) {
      return changes;
    }
    marks.addAll(0, changes.additions());
    return new TableLayout.SchemaChanges(marks, changes.promotions());
  }

  private void quarantineChange(Change c, String reason) {
    ObjectNode doc = JSON.createObjectNode();
    doc.put("reason", reason);
    doc.put("sequenceNumber", c.sequenceNumber());
    doc.put("operation", c.operation().name());
    doc.put("keys", DdbJson.writeItem(c.keys()));
    if (c.newImage() != null) {
      doc.put("newImage", DdbJson.writeItem(c.newImage()));
    }
    try {
      store.putQuarantined("merger/" + SequenceNumbers.pad(c.sequenceNumber()) + ".json",
          JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(doc));
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
    LOG.error("Change {} cannot be merged and is kept in the quarantine: {}", c.sequenceNumber(), reason);
  }

  /** Best effort: files of a commit that lost are unreferenced; orphan cleanup catches any left. */
  private static void cleanUp(Table table, List<DataFile> data, List<DeleteFile> deletes, List<String> other) {
    try {
      data.forEach(f -> table.io().deleteFile(f.location()));
      deletes.forEach(f -> table.io().deleteFile(f.location()));
      other.forEach(table.io()::deleteFile);
    } catch (RuntimeException e) {
      LOG.warn("Could not delete the files of a failed commit attempt: {}", e.toString());
    }
  }
}
