package dev.ddb2iceberg.removals;

import dev.ddb2iceberg.config.RemovalPolicy;
import dev.ddb2iceberg.lookup.LiveRow;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.SequenceNumbers;
import dev.ddb2iceberg.table.TableLayout;
import dev.ddb2iceberg.table.TaskRows;
import dev.ddb2iceberg.util.Futures;
import java.math.BigInteger;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.Record;

/**
 * The rows that removals leave behind when the policy keeps them (TTL_EXPIRIES=mark,
 * DELETES=soft): the item as it was just before the removal, with the removal's time in the mark
 * column, and the removal's sequence number and time in the metadata columns (the removal is the
 * change that wrote the row, so a redelivered copy of it, or of anything older, is stale).
 *
 * <p>The item as it was comes from the newest upsert of the key in the same merge, when there is
 * one newer than the table's row; else from the table's row, read from its data file (one read
 * per touched file, side by side). A removal of an item the table does not hold leaves nothing.
 */
public final class KeptRows {
    private static final BigInteger NONE = BigInteger.valueOf(-1);
    private final Table table;
    private final TableLayout layout;
    /** Removals whose item comes from the table: the live row to copy, by removal. */
    private final Map<Change, LiveRow> fromTable = new LinkedHashMap<>();

    private final List<Record> rows = new ArrayList<>();

    public KeptRows(Table table, TableLayout layout) {
        this.table = table;
        this.layout = layout;
    }

    /**
     * Notes that {@code removal} keeps its item's row: the item is {@code upsert}'s image (the key's
     * newest in this merge) when that is newer than the table's {@code live} rows, else the newest
     * live row; either only if newer than {@code deleting}, a removal in this merge that deleted the
     * row (the workload tests make such removals of removed items; DynamoDB does not), and only if
     * no removal on record came after the upsert ({@code upsertRemovedSince}: a copy of
     * an old upsert delivered again). Returns false when there is no item to keep.
     */
    public boolean keep(
            Change removal, Change upsert, Change deleting, List<LiveRow> live, boolean upsertRemovedSince) {
        if (upsertRemovedSince) {
            upsert = null; // a removal an earlier merge applied came after it: that item is gone
        }
        // Sequence numbers are positive: -1 is below them all, for a change that is not there.
        BigInteger deletedAt = deleting == null ? NONE : SequenceNumbers.toBigInteger(deleting.sequenceNumber());
        LiveRow newest = null;
        for (LiveRow r : live) {
            if (r.sequence().compareTo(deletedAt) > 0
                    && (newest == null || r.sequence().compareTo(newest.sequence()) > 0)) {
                newest = r;
            }
        }
        BigInteger upserted = upsert == null ? NONE : SequenceNumbers.toBigInteger(upsert.sequenceNumber());
        if (upsert != null
                && upserted.compareTo(deletedAt) > 0
                && (newest == null || upserted.compareTo(newest.sequence()) > 0)) {
            rows.add(mark(layout.toRow(upsert), removal));
            return true;
        }
        if (newest == null) {
            return false;
        }
        fromTable.put(removal, newest);
        return true;
    }

    /** Every kept row, the table's rows read from their files now (side by side on {@code pool}). */
    public List<Record> rows(ExecutorService pool) {
        Map<String, List<Map.Entry<Change, LiveRow>>> byFile = new LinkedHashMap<>();
        fromTable
                .entrySet()
                .forEach(e -> byFile.computeIfAbsent(e.getValue().task().file().location(), f -> new ArrayList<>())
                        .add(e));
        List<Future<List<Record>>> reads = new ArrayList<>();
        for (List<Map.Entry<Change, LiveRow>> inFile : byFile.values()) {
            reads.add(pool.submit(() -> read(inFile)));
        }
        List<Record> out = new ArrayList<>(rows);
        for (Future<List<Record>> read : reads) {
            out.addAll(Futures.join(read, "reading the rows of removed items to keep"));
        }
        return out;
    }

    /** How many removals keep a row. */
    public int size() {
        return rows.size() + fromTable.size();
    }

    private List<Record> read(List<Map.Entry<Change, LiveRow>> inFile) {
        Map<Long, Change> byPosition = new HashMap<>();
        inFile.forEach(e -> byPosition.put(e.getValue().position(), e.getKey()));
        FileScanTask task = inFile.get(0).getValue().task();
        List<Record> out = new ArrayList<>();
        TaskRows.withPositions(table, task, (position, row) -> {
            Change removal = byPosition.get(position);
            if (removal != null) {
                out.add(mark(row, removal));
            }
        });
        if (out.size() != inFile.size()) {
            throw new IllegalStateException(
                    "Found " + out.size() + " of the " + inFile.size() + " live rows of removed items" + " in "
                            + task.file().location() + ": the lookup named rows the file does not hold");
        }
        return out;
    }

    private Record mark(Record row, Change removal) {
        OffsetDateTime at =
                OffsetDateTime.ofInstant(Instant.ofEpochMilli(removal.approximateCreationMillis()), ZoneOffset.UTC);
        row.setField(TableLayout.SEQ, SequenceNumbers.pad(removal.sequenceNumber()));
        row.setField(TableLayout.TIME, at);
        // The row carries the newest removal's mark only (a row copied from the table may hold an
        // older one, which only a removal of a removed item could have left).
        String column = removal.ttlExpiry() ? RemovalPolicy.EXPIRED_AT : RemovalPolicy.DELETED_AT;
        String other = removal.ttlExpiry() ? RemovalPolicy.DELETED_AT : RemovalPolicy.EXPIRED_AT;
        if (row.struct().field(column) != null) {
            row.setField(column, at);
        }
        if (row.struct().field(other) != null) {
            row.setField(other, null);
        }
        return row;
    }
}
