package dev.ddb2iceberg.history;

import dev.ddb2iceberg.commit.Checkpoint;
import dev.ddb2iceberg.commit.CommitProtocol;
import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.config.RemovalPolicy;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.model.SequenceNumbers;
import dev.ddb2iceberg.table.ColumnNames;
import dev.ddb2iceberg.table.DerivedFiles;
import dev.ddb2iceberg.table.TableCreator;
import dev.ddb2iceberg.table.TableLayout;
import dev.ddb2iceberg.table.TableSettings;
import dev.ddb2iceberg.table.TaskRows;
import dev.ddb2iceberg.write.MergeWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.RowDelta;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SortOrder;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.TableUtil;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.exceptions.AlreadyExistsException;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.TypeUtil;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.ByteBuffers;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The change history (HISTORY_TABLE): an append-only Iceberg table beside the main one that holds
 * every change the stream delivered, not only each key's newest. One row per change: the
 * operation ({@value #OPERATION}), sequence number, time, whether TTL made it ({@value #TTL}), the
 * key, and the new image in the main table's columns (null for a removal). Partitioned by the
 * change's day, sorted by sequence number.
 *
 * <p>Exactly once, with no help from the main table: a merge appends its slice's changes to the
 * history before it commits the main table, and appends only those the history does not hold yet
 * (by sequence number and key, read from the few recent files whose sequence bounds overlap the
 * slice). The append validates that no other append landed since it read, and re-plans when one
 * did. So a change delivered twice, a merge that crashes between the two commits, a retry or two
 * mergers at once never duplicate a history row, and no staged object is deleted before the
 * history holds its changes. Each history snapshot names the staged objects it covered in its own
 * checkpoint property, as the main table's do.
 *
 * <p>The history's columns follow the main table's: before each append, columns the main table
 * gained (or widened) are added to the history by name.
 */
public final class ChangeHistory {
    private static final Logger LOG = LoggerFactory.getLogger(ChangeHistory.class);
    /** The change's operation: INSERT, MODIFY or REMOVE. */
    public static final String OPERATION = "_ddb_op";
    /** Whether DynamoDB's TTL process made the change (a removal). */
    public static final String TTL = "_ddb_ttl";

    private static final int COMMIT_ATTEMPTS = 10;

    private final Catalog catalog;
    private final TableIdentifier id;
    private final TableSettings settings;

    public ChangeHistory(Catalog catalog, TableSettings settings) {
        this.catalog = catalog;
        this.id = TableIdentifier.of(settings.namespace(), settings.historyTable());
        this.settings = settings;
    }

    public TableIdentifier tableId() {
        return id;
    }

    /**
     * Every row of a history as the change it records, in sequence order: for tests and the local
     * demo, never on the merge path.
     */
    public static List<Change> changes(Table history) {
        history.refresh();
        TableLayout layout = TableLayout.of(history);
        List<Change> out = new ArrayList<>();
        try (CloseableIterable<Record> rows = IcebergGenerics.read(history).build()) {
            for (Record r : rows) {
                Map<String, DdbValue> item = layout.toItem(r);
                Map<String, DdbValue> key = new LinkedHashMap<>();
                layout.keyAttributes().forEach(k -> key.put(k, item.get(k)));
                Operation op = Operation.valueOf((String) r.getField(OPERATION));
                out.add(new Change(
                        key,
                        op,
                        op.isUpsert() ? item : null,
                        SequenceNumbers.stripLeadingZeros((String) r.getField(TableLayout.SEQ)),
                        ((OffsetDateTime) r.getField(TableLayout.TIME))
                                .toInstant()
                                .toEpochMilli(),
                        (Boolean) r.getField(TTL)));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        out.sort((a, b) -> SequenceNumbers.compare(a.sequenceNumber(), b.sequenceNumber()));
        return out;
    }

    /** Whether {@code table} is a change history (maintenance orders its rows by sequence, not key). */
    public static boolean isHistory(Table table) {
        return table.properties().containsKey(PipelineProperties.HISTORY_OF);
    }

    /** What an append did. */
    public record Appended(Long snapshotId, int changesAppended, int alreadyHeld, int filesRead) {}

    /**
     * Appends the changes of {@code main}'s staged objects ({@code tokens}, their checkpoint tokens)
     * that the history does not hold yet. {@code main} must already have the columns these changes
     * need. Throws when it keeps losing races (the caller's run fails; nothing is lost, the objects
     * stay staged).
     */
    public Appended append(
            Table main, Collection<String> tokens, List<Change> changes, String runId, ExecutorService pool) {
        TableLayout mainLayout = TableLayout.of(main);
        List<Change> keyed = new ArrayList<>();
        for (Change c : changes) {
            if (mainLayout.keyOf(c) != null) { // a change whose key does not fit is quarantined by the merge
                keyed.add(c);
            }
        }
        if (keyed.isEmpty()) {
            return new Appended(null, 0, 0, 0);
        }
        Table history = loadOrCreate(main);
        long keptFrom = Long.parseLong(history.properties().getOrDefault(PipelineProperties.HISTORY_KEPT_FROM, "0"));
        if (keptFrom > 0) {
            int before = keyed.size();
            keyed = keyed.stream()
                    .filter(c -> c.approximateCreationMillis() >= keptFrom)
                    .toList();
            if (keyed.size() < before) {
                LOG.warn(
                        "Change history {}: {} changes are older than the days it keeps (from {}) and are not appended",
                        id,
                        before - keyed.size(),
                        Instant.ofEpochMilli(keptFrom));
            }
            if (keyed.isEmpty()) {
                return new Appended(null, 0, before, 0);
            }
        }
        Table target = history;
        List<Change> toAppend = keyed;
        CommitProtocol protocol = new CommitProtocol(
                "appending to the change history " + id,
                COMMIT_ATTEMPTS,
                "The staged changes are kept for a later run.");
        return protocol.run(history, attempt -> {
                    followSchema(target, main);
                    TableLayout layout = TableLayout.of(target);
                    Snapshot base = target.currentSnapshot();
                    // Planned from what the history holds now: after an unknown outcome that did land, or a
                    // concurrent append of the same objects, the changes already there are not added again.
                    Held held = held(target, layout, toAppend);
                    List<Record> rows = new ArrayList<>();
                    Set<String> seen = new HashSet<>(held.changes());
                    for (Change c : toAppend) {
                        if (seen.add(identity(c, layout.keyOf(c)))) {
                            rows.add(row(target, layout, c));
                        }
                    }
                    if (rows.isEmpty()) {
                        LOG.info("Change history {}: all {} changes already held", id, toAppend.size());
                        return new Appended(null, 0, toAppend.size(), held.filesRead());
                    }
                    List<DataFile> written = new MergeWriter(target, runId + "-history-" + attempt)
                            .writeFiles(rows, Comparator.comparing(r -> (String) r.getField(TableLayout.SEQ)), pool);
                    RowDelta delta = target.newRowDelta()
                            .conflictDetectionFilter(Expressions.alwaysTrue())
                            .validateNoConflictingDataFiles();
                    // The staged objects this append covers, in a file as the main table's checkpoint.
                    Map<String, String> covered = new HashMap<>();
                    Checkpoint.record(covered, target.io(), DerivedFiles.checkpointFile(target, runId), tokens);
                    covered.forEach(delta::set);
                    if (base != null) {
                        delta.validateFromSnapshot(base.snapshotId());
                    }
                    written.forEach(delta::addRows);
                    Snapshot committed = CommitProtocol.commit(
                            target,
                            delta,
                            runId,
                            written.stream().map(DataFile::location).toList());
                    LOG.info(
                            "Change history {}: appended {} changes ({} already held, {} files read to tell)",
                            id,
                            rows.size(),
                            toAppend.size() - rows.size(),
                            held.filesRead());
                    return new Appended(
                            committed.snapshotId(), rows.size(), toAppend.size() - rows.size(), held.filesRead());
                })
                .value();
    }

    /** Which of the changes the history already holds, as {@link #identity} strings. */
    private record Held(Set<String> changes, int filesRead) {}

    /**
     * Reads the sequence numbers and keys of the history rows in the changes' sequence and time
     * range. Only files whose bounds overlap are read (exact bounds on the sequence column, and the
     * day partitions), which in steady state are the last few appends' files.
     */
    private static Held held(Table history, TableLayout layout, List<Change> changes) {
        if (history.currentSnapshot() == null) {
            return new Held(Set.of(), 0);
        }
        String low = null;
        String high = null;
        long from = Long.MAX_VALUE;
        long to = Long.MIN_VALUE;
        for (Change c : changes) {
            String seq = SequenceNumbers.pad(c.sequenceNumber());
            low = low == null || seq.compareTo(low) < 0 ? seq : low;
            high = high == null || seq.compareTo(high) > 0 ? seq : high;
            from = Math.min(from, c.approximateCreationMillis());
            to = Math.max(to, c.approximateCreationMillis());
        }
        Expression range = Expressions.and(
                Expressions.and(
                        Expressions.greaterThanOrEqual(TableLayout.SEQ, low),
                        Expressions.lessThanOrEqual(TableLayout.SEQ, high)),
                Expressions.and(
                        Expressions.greaterThanOrEqual(TableLayout.TIME, from * 1000),
                        Expressions.lessThanOrEqual(TableLayout.TIME, to * 1000)));
        Set<String> held = new HashSet<>();
        List<String> columns = new ArrayList<>(layout.keyColumns());
        columns.add(TableLayout.SEQ);
        Schema projection = history.schema().select(columns);
        int files = 0;
        // One planning: each overlapping file is read (its key and sequence columns only) as planned.
        try (CloseableIterable<FileScanTask> tasks =
                history.newScan().filter(range).planFiles()) {
            for (FileScanTask task : tasks) {
                files++;
                try (CloseableIterable<Record> rows = TaskRows.read(history, task, projection)) {
                    for (Record r : rows) {
                        held.add(identity((String) r.getField(TableLayout.SEQ), layout.keyOf(r)));
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return new Held(held, files);
    }

    private static String identity(Change c, List<Object> key) {
        return identity(SequenceNumbers.pad(c.sequenceNumber()), key);
    }

    /** A change's identity in the history: its sequence number and key (values as the columns hold them). */
    private static String identity(String paddedSequence, List<Object> key) {
        StringBuilder b = new StringBuilder(paddedSequence);
        for (Object part : key) {
            b.append('\u0000')
                    .append(
                            part instanceof ByteBuffer bytes
                                    ? HexFormat.of().formatHex(ByteBuffers.toByteArray(bytes))
                                    : part);
        }
        return b.toString();
    }

    /** One change as a history row. */
    private static Record row(Table history, TableLayout layout, Change c) {
        Record row;
        if (c.operation().isUpsert()) {
            row = layout.toRow(c);
        } else {
            row = GenericRecord.create(history.schema());
            List<Object> key = layout.keyOf(c);
            for (int i = 0; i < key.size(); i++) {
                row.setField(layout.keyColumns().get(i), key.get(i));
            }
            row.setField(TableLayout.SEQ, SequenceNumbers.pad(c.sequenceNumber()));
            row.setField(
                    TableLayout.TIME,
                    OffsetDateTime.ofInstant(Instant.ofEpochMilli(c.approximateCreationMillis()), ZoneOffset.UTC));
        }
        row.setField(OPERATION, c.operation().name());
        row.setField(TTL, c.ttlExpiry());
        return row;
    }

    /** The history table, created from the main table's columns on first use (another merger may win the race). */
    private Table loadOrCreate(Table main) {
        Table existing = TableCreator.loadIfExists(catalog, id);
        if (existing != null) {
            if (!isHistory(existing)) {
                throw new IllegalStateException("HISTORY_TABLE names " + id
                        + ", which is not a change history (it has no '" + PipelineProperties.HISTORY_OF
                        + "' property): point HISTORY_TABLE at a new table name.");
            }
            return existing;
        }
        List<Types.NestedField> fields = new ArrayList<>();
        fields.addAll(historyColumns(main.schema()).columns()); // Iceberg gives the new table fresh field ids
        int next = main.schema().highestFieldId();
        fields.add(Types.NestedField.required(
                next + 1, OPERATION, Types.StringType.get(), "the change's operation: INSERT, MODIFY or REMOVE"));
        fields.add(Types.NestedField.required(
                next + 2,
                TTL,
                Types.BooleanType.get(),
                "true when DynamoDB's TTL process removed the item, not a user"));
        Schema schema = new Schema(fields); // no identifier fields: a key has many rows here
        PartitionSpec spec =
                PartitionSpec.builderFor(schema).day(TableLayout.TIME).build();
        SortOrder order = SortOrder.builderFor(schema).asc(TableLayout.SEQ).build();
        Map<String, String> props = new HashMap<>();
        props.put(TableProperties.FORMAT_VERSION, Integer.toString(TableUtil.formatVersion(main)));
        props.put(PipelineProperties.KEYS, main.properties().get(PipelineProperties.KEYS));
        // The history's columns are the main table's, named by its rule.
        props.put(
                PipelineProperties.COLUMN_NAMES,
                ColumnNames.of(main.properties()).setting());
        props.put(PipelineProperties.HISTORY_OF, settings.namespace() + "." + settings.name());
        props.put(TableProperties.DEFAULT_FILE_FORMAT, "parquet");
        props.put(TableProperties.PARQUET_COMPRESSION, "zstd");
        props.put(TableProperties.COMMIT_NUM_RETRIES, "10");
        props.put(TableProperties.METADATA_DELETE_AFTER_COMMIT_ENABLED, "true");
        props.put(TableProperties.METADATA_PREVIOUS_VERSIONS_MAX, "100");
        // Exact bounds on the sequence column: an append reads only the files its changes' range overlaps.
        props.put(TableProperties.METRICS_MODE_COLUMN_CONF_PREFIX + TableLayout.SEQ, "full");
        try {
            Catalog.TableBuilder builder = catalog.buildTable(id, schema)
                    .withPartitionSpec(spec)
                    .withSortOrder(order)
                    .withProperties(props);
            if (settings.location() != null) {
                builder.withLocation(
                        settings.location().replaceAll("/+$", "").replaceAll("[^/]+$", settings.historyTable()));
            }
            Table created = builder.create();
            LOG.info(
                    "Created the change history {} of {}.{}, partitioned by day",
                    id,
                    settings.namespace(),
                    settings.name());
            return created;
        } catch (AlreadyExistsException raced) {
            return catalog.loadTable(id);
        }
    }

    /** The main table's columns a history holds: all but the removal marks, which only describe current rows. */
    private static Schema historyColumns(Schema main) {
        List<Types.NestedField> columns = new ArrayList<>();
        for (Types.NestedField f : main.columns()) {
            if (!f.name().equals(RemovalPolicy.EXPIRED_AT) && !f.name().equals(RemovalPolicy.DELETED_AT)) {
                columns.add(f);
            }
        }
        return new Schema(columns);
    }

    /** Adds to the history the columns (and nested fields, and wider types) the main table has gained. */
    private void followSchema(Table history, Table main) {
        Schema wanted = historyColumns(main.schema());
        CommitProtocol protocol = new CommitProtocol(
                "changing the schema of the change history " + id,
                COMMIT_ATTEMPTS,
                "The staged changes are kept for a later run.");
        protocol.run(history, attempt -> {
            if (lacksAny(history.schema(), wanted)) {
                history.updateSchema().unionByNameWith(wanted).commit();
                history.refresh();
                LOG.info(
                        "Change history {}: columns now follow {}'s schema {}",
                        id,
                        main.name(),
                        main.schema().schemaId());
            }
            return null;
        });
    }

    /** Whether {@code have} lacks a column of {@code want}, or holds one in a narrower type. */
    private static boolean lacksAny(Schema have, Schema want) {
        for (Map.Entry<String, Integer> e :
                TypeUtil.indexByName(want.asStruct()).entrySet()) {
            Types.NestedField mine = have.findField(e.getKey());
            if (mine == null) {
                return true;
            }
            Type theirs = want.findType(e.getValue());
            if (theirs.isPrimitiveType() && !theirs.equals(mine.type())) {
                return true;
            }
        }
        return false;
    }
}
