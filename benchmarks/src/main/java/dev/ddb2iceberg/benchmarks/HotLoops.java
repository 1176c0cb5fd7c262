package dev.ddb2iceberg.benchmarks;

import com.amazonaws.services.lambda.runtime.events.DynamodbEvent;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.index.IndexKeys;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.SequenceNumbers;
import dev.ddb2iceberg.staging.StagedFormat;
import dev.ddb2iceberg.stream.StreamRecordDecoder;
import dev.ddb2iceberg.table.KeyOrder;
import dev.ddb2iceberg.table.TableCreator;
import dev.ddb2iceberg.table.TableLayout;
import dev.ddb2iceberg.table.TableSettings;
import dev.ddb2iceberg.testkit.StreamEvents;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.inmemory.InMemoryCatalog;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * JMH micro-benchmarks of the inner loops the macro figures are made of, per record of the
 * stager's realistic ~600-byte orders: decoding a stream record, encoding and reading back a staged
 * batch, finding a change's key among the live rows, and turning a change into an Iceberg row.
 * Run: {@code benchmarks/run --jmh}, or {@code java -cp … org.openjdk.jmh.Main HotLoops}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class HotLoops {
    private static final int RECORDS = 10_000;

    private List<DynamodbEvent.DynamodbStreamRecord> records;
    private List<Change> changes;
    private byte[] staged;
    private TableLayout layout;
    private Map<List<Object>, Integer> liveKeys;
    /** One partition's share of a merge's rows, in a shuffled order (see {@link #sortRowsByPrefix}). */
    private List<Record> shuffledRows;

    private List<String> paddedSequences;
    private int next;

    @Setup
    public void setUp() {
        changes = StagerThroughput.realisticBatch(new Random(1));
        records = StreamEvents.batch(changes).getRecords();
        staged = StagedFormat.write(changes);
        InMemoryCatalog catalog = new InMemoryCatalog();
        catalog.initialize("bench", Map.of());
        TableSettings settings =
                TableSettings.from(new Environment(Map.of("TABLE_NAMESPACE", "bench", "TABLE_NAME", "orders")));
        catalog.createNamespace(Namespace.of("bench"));
        layout = TableLayout.of(
                TableCreator.loadOrCreate(catalog, TableIdentifier.of("bench", "orders"), settings, changes));
        liveKeys = new HashMap<>();
        for (int i = 0; i < changes.size(); i++) {
            liveKeys.put(layout.keyOf(changes.get(i)), i);
        }
        shuffledRows = new ArrayList<>();
        paddedSequences = new ArrayList<>();
        for (Change c : changes) {
            paddedSequences.add(SequenceNumbers.pad(c.sequenceNumber()));
            if (c.newImage() != null && shuffledRows.size() < ROWS_TO_SORT) {
                shuffledRows.add(layout.toRow(c));
            }
        }
        Collections.shuffle(shuffledRows, new Random(2));
    }

    /** About one partition's rows in a merge of 100,000 changes over 16 buckets. */
    private static final int ROWS_TO_SORT = 5_000;

    private int nextIndex() {
        next = next + 1 == RECORDS ? 0 : next + 1;
        return next;
    }

    /** The stager, per record: Lambda's event object to our change model (records/s). */
    @Benchmark
    public Change decodeStreamRecord() throws Exception {
        return StreamRecordDecoder.decode(records.get(nextIndex()));
    }

    /** The stager, per batch of 10,000: encode and compress into one staged object (batches/s). */
    @Benchmark
    public byte[] encodeStagedBatch() {
        return StagedFormat.write(changes);
    }

    /** The merger, per batch of 10,000: decompress and decode a staged object (batches/s). */
    @Benchmark
    public int readStagedBatch() {
        return StagedFormat.read(staged, "bench").size();
    }

    /** The merger, per change: its key as the table's key columns, looked up among live rows (changes/s). */
    /**
     * The merger, per partition: 5,000 rows sorted by key as {@link KeyOrder#sort} sorts them (by a
     * prefix of the first key column, whole keys only between equal prefixes), a copy of the shuffled
     * list each time (sorts/s). Rows made one after another lie close in memory here, unlike a
     * merge's, so the gain over {@link #sortRowsByComparator} is smaller here than in a merge.
     */
    @Benchmark
    public List<Record> sortRowsByPrefix() {
        List<Record> rows = new ArrayList<>(shuffledRows);
        layout.keyOrder().sort(rows);
        return rows;
    }

    /** {@link #sortRowsByPrefix} with the comparator alone, as merges sorted before (sorts/s). */
    @Benchmark
    public List<Record> sortRowsByComparator() {
        List<Record> rows = new ArrayList<>(shuffledRows);
        rows.sort(layout.keyOrder());
        return rows;
    }

    /** The merger, per looked-up key and written row: a change's key in the key index's form (keys/s). */
    @Benchmark
    public byte[] encodeKey() {
        return IndexKeys.encode(layout.keyOf(changes.get(nextIndex())));
    }

    /** The merger, per written row: its padded sequence number read as a number (numbers/s). */
    @Benchmark
    public BigInteger readSequenceNumber() {
        return SequenceNumbers.toBigInteger(paddedSequences.get(nextIndex()));
    }

    /** {@link #readSequenceNumber} by BigInteger's own parser, as merges read them before (numbers/s). */
    @Benchmark
    public BigInteger parseSequenceNumber() {
        return new BigInteger(paddedSequences.get(nextIndex()));
    }

    @Benchmark
    public Integer keyLookup() {
        return liveKeys.get(layout.keyOf(changes.get(nextIndex())));
    }

    /**
     * The same orders with the attributes named as many teams name them ({@code customerId},
     * {@code createdAt}, {@code shippingAddress.Street}), in a table made under each
     * COLUMN_NAMES rule: what mapping names costs per row.
     */
    @State(Scope.Benchmark)
    public static class TeamNamed {
        @Param({"lower", "preserve"})
        String columnNames;

        List<Change> changes;
        TableLayout layout;
        int next;

        @Setup
        public void setUp() {
            changes = StagerThroughput.realisticBatch(new Random(1)).stream()
                    .map(TeamNamed::renamed)
                    .toList();
            InMemoryCatalog catalog = new InMemoryCatalog();
            catalog.initialize("bench", Map.of());
            catalog.createNamespace(Namespace.of("bench"));
            TableSettings settings = TableSettings.from(new Environment(Map.of(
                    "TABLE_NAMESPACE",
                    "bench",
                    "TABLE_NAME",
                    "orders",
                    "PARTITION_KEY",
                    "customerId",
                    "COLUMN_NAMES",
                    columnNames)));
            layout = TableLayout.of(
                    TableCreator.loadOrCreate(catalog, TableIdentifier.of("bench", "orders"), settings, changes));
        }

        private static Change renamed(Change c) {
            return new Change(
                    camel(c.keys(), false),
                    c.operation(),
                    c.newImage() == null ? null : camel(c.newImage(), false),
                    c.sequenceNumber(),
                    c.approximateCreationMillis(),
                    c.ttlExpiry());
        }

        /** snake_case to camelCase at the top, Capitalised in nested maps. */
        private static Map<String, DdbValue> camel(Map<String, DdbValue> item, boolean nested) {
            Map<String, DdbValue> out = new LinkedHashMap<>();
            item.forEach((name, v) -> {
                StringBuilder b = new StringBuilder();
                for (String part : name.split("_")) {
                    b.append(b.isEmpty() && !nested ? part : Character.toUpperCase(part.charAt(0)) + part.substring(1));
                }
                out.put(b.toString(), camelInside(v));
            });
            return out;
        }

        private static DdbValue camelInside(DdbValue v) {
            if (v instanceof DdbValue.M m) {
                return new DdbValue.M(camel(m.fields(), true));
            }
            if (v instanceof DdbValue.L l) {
                return new DdbValue.L(
                        l.elements().stream().map(TeamNamed::camelInside).toList());
            }
            return v;
        }
    }

    /** {@link #changeToRow} for team-named attributes, under each COLUMN_NAMES rule (rows/s). */
    @Benchmark
    public void teamNamedChangeToRow(TeamNamed s, Blackhole sink) {
        s.next = s.next + 1 == RECORDS ? 0 : s.next + 1;
        Change c = s.changes.get(s.next);
        if (c.newImage() != null) {
            sink.consume(s.layout.toRow(c));
        }
    }

    /** The merger, per upsert: a change to an Iceberg row of the table's schema (rows/s). */
    @Benchmark
    public void changeToRow(Blackhole sink) {
        Change c = changes.get(nextIndex());
        if (c.newImage() != null) {
            Record row = layout.toRow(c);
            sink.consume(row);
        }
    }
}
