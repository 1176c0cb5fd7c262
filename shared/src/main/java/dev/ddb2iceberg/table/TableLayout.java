package dev.ddb2iceberg.table;

import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbJson;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.SequenceNumbers;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.IntSupplier;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.UpdateSchema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Comparators;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;

/**
 * How DynamoDB items are laid out as rows of one Iceberg table: the key columns (the table's
 * identifier fields), one typed column per attribute seen, an overflow map for values no typed
 * column holds exactly, and the metadata columns.
 *
 * <p>Metadata columns: {@value #SEQ} is the sequence number of the change that wrote the row,
 * zero-padded to 40 digits so text order is numeric order; {@value #TIME} is that change's
 * approximate creation time, so a reader sees how fresh each row is.
 */
public final class TableLayout {
    public static final String SEQ = "_ddb_seq";
    public static final String TIME = "_ddb_time";
    public static final String OVERFLOW = "_ddb_overflow";
    /** Optional column (ITEM_JSON_COLUMN): the whole item as DynamoDB JSON. */
    public static final String ITEM = "_ddb_item";
    /** Optional column on format v3 (ITEM_VARIANT_COLUMN): the whole item as a variant. */
    public static final String VARIANT = "_ddb_variant";

    /** Names the pipeline keeps for its own columns: no attribute gets a column of such a name. */
    public static final String RESERVED_PREFIX = "_ddb_";

    private final Schema schema;
    private final ColumnNames names;
    /** The key attributes' DynamoDB types (S, N or B), partition key first. */
    private final Map<String, String> keyDdbTypes;

    private final List<String> keyAttributes;
    private final List<String> keyColumns;
    /** Where the key columns are in the table's rows (see {@link #keyOf(Record)}). */
    private final int[] rowKeyPositions;
    /** The key columns in the order of the table's columns, and where each key column is among them. */
    private final List<String> keyColumnsInTableOrder;

    private final int[] keyPositionsInProjection;
    /** Each key attribute's column type, in {@code keyAttributes}' order (keyOf reads them for every change). */
    private final Type[] keyTypes;
    /** Each key attribute's DynamoDB type (S, N or B), in the same order. */
    private final String[] keyAttributeTypes;
    /** The top-level column of each attribute that has one (the key columns included). */
    private final Map<String, Types.NestedField> columnsByAttribute = new HashMap<>();
    /** Lower-cased names of all top-level columns: engines such as Athena ignore case. */
    private final Map<String, String> columnsByLowerName = new HashMap<>();
    /** Where {@link #toRow} puts each attribute that has a column, worked out once, not per value. */
    private final Map<String, Slot> slotsByAttribute = new HashMap<>();
    /** A row of nulls that {@link #toRow} copies (GenericRecord.create looks the schema up in a shared cache). */
    private final GenericRecord emptyRow;
    /** Positions of the metadata columns in a row; -1 for ITEM and VARIANT when the table has none. */
    private final int overflowAt;

    private final int seqAt;
    private final int timeAt;
    private final int itemAt;
    private final int variantAt;

    /**
     * The last change time {@link #toRow} turned into a timestamp. DynamoDB Streams gives change
     * times in whole seconds, so a run's rows mostly share a few: sharing the value saves four
     * objects a row while a merge holds its rows. Threads may race to replace it; any stamp they
     * read is whole (its fields are final).
     */
    private volatile Stamp lastStamp = new Stamp(0L, OffsetDateTime.ofInstant(Instant.EPOCH, ZoneOffset.UTC));

    private record Stamp(long millis, OffsetDateTime time) {}

    /** An attribute's column position in a row, its type, and the shape its values are projected by. */
    private record Slot(int position, Type type, String shape) {}

    private TableLayout(Schema schema, Map<String, String> keyDdbTypes, ColumnNames names) {
        this.schema = schema;
        this.names = names;
        this.keyDdbTypes = keyDdbTypes;
        for (Types.NestedField f : schema.columns()) {
            columnsByLowerName.put(f.name().toLowerCase(Locale.ROOT), f.name());
            if (!f.name().startsWith(RESERVED_PREFIX)) {
                columnsByAttribute.putIfAbsent(ColumnNames.attributeOf(f), f);
            }
        }
        this.keyAttributes = List.copyOf(keyDdbTypes.keySet());
        List<String> columns = new ArrayList<>();
        for (String key : keyAttributes) {
            Types.NestedField column = columnsByAttribute.get(key);
            if (column == null) {
                throw new IllegalStateException("The table's key attribute '" + key + "' (" + PipelineProperties.KEYS
                        + ") has no column: was the table's schema changed by hand?");
            }
            columns.add(column.name());
        }
        this.keyColumns = List.copyOf(columns);
        this.rowKeyPositions = new int[keyColumns.size()];
        for (int i = 0; i < keyColumns.size(); i++) {
            rowKeyPositions[i] = positionOf(schema, keyColumns.get(i));
        }
        this.keyColumnsInTableOrder = schema.columns().stream()
                .map(Types.NestedField::name)
                .filter(keyColumns::contains)
                .toList();
        this.keyPositionsInProjection = new int[keyColumns.size()];
        for (int i = 0; i < keyColumns.size(); i++) {
            keyPositionsInProjection[i] = keyColumnsInTableOrder.indexOf(keyColumns.get(i));
        }
        this.keyTypes = new Type[keyAttributes.size()];
        this.keyAttributeTypes = new String[keyAttributes.size()];
        for (int i = 0; i < keyTypes.length; i++) {
            keyTypes[i] = columnsByAttribute.get(keyAttributes.get(i)).type();
            keyAttributeTypes[i] = keyDdbTypes.get(keyAttributes.get(i));
        }
        columnsByAttribute.forEach((attribute, column) -> slotsByAttribute.put(
                attribute,
                new Slot(
                        schema.columns().indexOf(column),
                        column.type(),
                        keyDdbTypes.getOrDefault(attribute, TypeMapping.shapeOf(column)))));
        this.emptyRow = GenericRecord.create(schema);
        this.overflowAt = positionOf(schema, OVERFLOW);
        this.seqAt = positionOf(schema, SEQ);
        this.timeAt = positionOf(schema, TIME);
        this.itemAt = positionOf(schema, ITEM);
        this.variantAt = positionOf(schema, VARIANT);
    }

    /** The position of top-level column {@code name} in a row, or -1. */
    private static int positionOf(Schema schema, String name) {
        Types.NestedField field = schema.findField(name);
        return field == null ? -1 : schema.columns().indexOf(field);
    }

    public static TableLayout of(Table table) {
        return of(table.schema(), table.properties().get(PipelineProperties.KEYS), ColumnNames.of(table.properties()));
    }

    public static TableLayout of(Schema schema, String keysProperty, ColumnNames names) {
        if (keysProperty == null || keysProperty.isBlank()) {
            throw new IllegalStateException(
                    "The table has no '" + PipelineProperties.KEYS + "' property: it was not created by"
                            + " this pipeline. Point TABLE_NAME at a new table, or at one the merger created.");
        }
        Map<String, String> keys = new LinkedHashMap<>();
        for (String part : keysProperty.split(",")) {
            int colon = part.lastIndexOf(':');
            keys.put(part.substring(0, colon), part.substring(colon + 1));
        }
        return new TableLayout(schema, keys, names);
    }

    /** The {@link PipelineProperties#KEYS} property: key attribute names (not columns) and their types. */
    public static String keysProperty(Map<String, String> keyDdbTypes) {
        List<String> parts = new ArrayList<>();
        keyDdbTypes.forEach((name, type) -> parts.add(name + ":" + type));
        return String.join(",", parts);
    }

    public Schema schema() {
        return schema;
    }

    /** The rule the table's columns are named by. */
    public ColumnNames columnNames() {
        return names;
    }

    /** The key attributes' names as DynamoDB has them, partition key first: the keys of an item. */
    public List<String> keyAttributes() {
        return keyAttributes;
    }

    /** The key columns' names, in the order of {@link #keyAttributes}. */
    public List<String> keyColumns() {
        return keyColumns;
    }

    /** The top-level column that holds {@code attribute}, or null when none does (its values are in the overflow map). */
    public Types.NestedField columnOf(String attribute) {
        return columnsByAttribute.get(attribute);
    }

    /** The DynamoDB type of key attribute {@code attribute}: S, N or B. */
    public String keyDdbType(String attribute) {
        return keyDdbTypes.get(attribute);
    }

    /** The key of a change as column values ({@link ItemKey}), or null when a key value does not fit its column. */
    public List<Object> keyOf(Change c) {
        Object[] key = new Object[keyAttributes.size()];
        for (int i = 0; i < key.length; i++) {
            DdbValue v = c.keys().get(keyAttributes.get(i));
            if (v == null) {
                return null;
            }
            Object col = TypeMapping.keyToColumn(keyTypes[i], keyAttributeTypes[i], v);
            if (col == TypeMapping.DOES_NOT_FIT) {
                return null;
            }
            key[i] = col;
        }
        return new ItemKey(key);
    }

    /** Why {@link #keyOf} returned null, for the quarantine. */
    public String whyKeyDoesNotFit(Change c) {
        if (!c.keys().keySet().equals(keyDdbTypes.keySet())) {
            return "change has key attributes " + c.keys().keySet() + " but the table's keys are " + keyAttributes;
        }
        for (String name : keyAttributes) {
            DdbValue v = c.keys().get(name);
            Type type = columnOf(name).type();
            if (TypeMapping.keyToColumn(type, keyDdbTypes.get(name), v) == TypeMapping.DOES_NOT_FIT) {
                return "key attribute '" + name + "' = " + DdbJson.write(v) + " does not fit its column of type " + type
                        + " (DynamoDB type " + keyDdbTypes.get(name) + ")";
            }
        }
        return "key fits";
    }

    /** The key of a row read from the table (it must hold the key columns), as an {@link ItemKey}. */
    public List<Object> keyOf(Record row) {
        Object[] key = new Object[keyColumns.size()];
        int[] at = keyPositionsIn(row.struct());
        for (int i = 0; i < key.length; i++) {
            Object value = at == null ? row.getField(keyColumns.get(i)) : row.get(at[i]);
            key[i] = Objects.requireNonNull(value, keyColumns.get(i));
        }
        return new ItemKey(key);
    }

    /**
     * Where the key columns are in rows of {@code struct}, or null to look them up by name. A merge
     * takes the keys of every row it writes several times (sorting, merging with moved rows,
     * recording them in the key index), and a lookup by name hashes the column's name and probes a
     * map each time (2.3 % of a steady merge's CPU: BENCHMARKS.md, fourteenth session). The table's
     * own rows ({@link #toRow}) and the moved rows' key projections ({@code MovedRows.projection}:
     * the key columns first, in the table's order, as {@code Schema.select} keeps it) are answered
     * without a lookup.
     */
    private int[] keyPositionsIn(Types.StructType struct) {
        if (struct == schema.asStruct()) {
            return rowKeyPositions;
        }
        List<Types.NestedField> fields = struct.fields();
        if (fields.size() < keyColumnsInTableOrder.size()) {
            return null;
        }
        for (int i = 0; i < keyColumnsInTableOrder.size(); i++) {
            if (!fields.get(i).name().equals(keyColumnsInTableOrder.get(i))) {
                return null;
            }
        }
        return keyPositionsInProjection;
    }

    /** Rows in key order (the table's sort order); {@link KeyOrder#sort} sorts by it fastest. */
    public KeyOrder keyOrder() {
        return keyOrder(schema);
    }

    /** Rows of {@code rows} (a projection holding the key columns) in key order. */
    public KeyOrder keyOrder(Schema rows) {
        return KeyOrder.of(rows, keyColumns);
    }

    /** Keys ({@link #keyOf(Record)}) in key order: rows of different projections compared by key. */
    @SuppressWarnings("unchecked")
    public Comparator<List<Object>> keyListOrder() {
        int n = keyColumns.size();
        Comparator<Object>[] orders = new Comparator[n];
        for (int k = 0; k < n; k++) {
            orders[k] = (Comparator<Object>) (Comparator<?>) Comparators.forType(
                    schema.findField(keyColumns.get(k)).type().asPrimitiveType());
        }
        return (a, b) -> {
            for (int k = 0; k < n; k++) {
                int c = orders[k].compare(a.get(k), b.get(k));
                if (c != 0) {
                    return c;
                }
            }
            return 0;
        };
    }

    /**
     * A column to add: {@code parent} is null for a top-level column, else the dotted path of the
     * struct (or list of structs) that gets a new field.
     */
    public record Addition(String parent, String name, Type type, String doc) {
        @Override
        public String toString() {
            return (parent == null ? "" : parent + ".") + name + " " + type;
        }
    }

    /** A number column (or struct field) to widen, by a promotion Iceberg allows, so values fit it. */
    public record Promotion(String path, Type.PrimitiveType to) {
        @Override
        public String toString() {
            return path + " -> " + to;
        }
    }

    /** What the schema needs before a run's items are written: columns to add, number columns to widen. */
    public record SchemaChanges(List<Addition> additions, List<Promotion> promotions) {
        public boolean isEmpty() {
            return additions.isEmpty() && promotions.isEmpty();
        }

        public void applyTo(UpdateSchema update) {
            additions.forEach(a -> update.addColumn(a.parent(), a.name(), a.type(), a.doc()));
            promotions.forEach(p -> update.updateColumn(p.path(), p.to()));
        }

        @Override
        public String toString() {
            return "added " + additions + ", widened " + promotions;
        }
    }

    /**
     * The schema changes these items call for. Columns to add: new attributes (typed by the user's
     * hint, else inferred from this run's values) and new keys of maps held in struct columns, named
     * by the table's {@link ColumnNames} rule; an attribute whose column name is taken, ignoring
     * case, by a column of another attribute gets none (engines that ignore case could not tell them
     * apart; the first attribute keeps the column), and its values go to the overflow map. Columns to
     * widen: number columns and struct fields whose new values need a wider type (int → long, float
     * → double, decimal precision). Nested types carry placeholder field ids from {@code ids};
     * Iceberg assigns the real ones.
     */
    public SchemaChanges schemaChanges(
            Iterable<Map<String, DdbValue>> items, Map<String, TypeMapping.Column> hints, IntSupplier ids) {
        Map<String, List<DdbValue>> byAttribute = new LinkedHashMap<>();
        for (Map<String, DdbValue> item : items) {
            item.forEach((name, v) ->
                    byAttribute.computeIfAbsent(name, n -> new ArrayList<>()).add(v));
        }
        List<Addition> added = new ArrayList<>();
        List<Promotion> widened = new ArrayList<>();
        Map<String, String> seenLower = new HashMap<>(columnsByLowerName);
        for (Map.Entry<String, List<DdbValue>> e : byAttribute.entrySet()) {
            String attribute = e.getKey();
            Types.NestedField existing = columnOf(attribute);
            if (existing != null) {
                if (!keyDdbTypes.containsKey(attribute)) {
                    addNestedFields(
                            existing.name(), existing.type(), TypeMapping.shapeOf(existing), e.getValue(), ids, added);
                    promotions(existing.name(), existing, e.getValue(), widened);
                }
                continue;
            }
            String name = names.columnFor(attribute);
            if (name == null || seenLower.containsKey(name.toLowerCase(Locale.ROOT))) {
                continue;
            }
            TypeMapping.Column column =
                    hints.containsKey(attribute) ? hints.get(attribute) : TypeMapping.infer(e.getValue(), names, ids);
            if (column != null) {
                added.add(new Addition(null, name, column.type(), column.doc(attribute, name)));
                seenLower.put(name.toLowerCase(Locale.ROOT), name);
            }
        }
        return new SchemaChanges(added, widened);
    }

    private void promotions(String path, Types.NestedField field, List<DdbValue> values, List<Promotion> out) {
        String shape = TypeMapping.shapeOf(field);
        if (shape.equals("N")) {
            Type.PrimitiveType wider = TypeMapping.promotionFor(field.type(), values);
            if (wider != null) {
                out.add(new Promotion(path, wider));
            }
        } else if (shape.equals("M") && field.type().isStructType()) {
            Map<String, List<DdbValue>> byKey = new LinkedHashMap<>();
            for (DdbValue v : values) {
                if (v instanceof DdbValue.M m) {
                    m.fields()
                            .forEach((k, x) -> byKey.computeIfAbsent(k, n -> new ArrayList<>())
                                    .add(x));
                }
            }
            byKey.forEach((k, vs) -> {
                Types.NestedField f = TypeMapping.fieldFor(field.type().asStructType(), k, names);
                if (f != null) {
                    promotions(path + "." + f.name(), f, vs, out);
                }
            });
        }
    }

    /** New fields for map keys a struct column (or a list of structs) has not seen before. */
    private void addNestedFields(
            String path, Type type, String shape, List<DdbValue> values, IntSupplier ids, List<Addition> added) {
        if (shape.equals("M") && type.isStructType()) {
            Types.StructType struct = type.asStructType();
            Map<String, List<DdbValue>> byKey = new LinkedHashMap<>();
            for (DdbValue v : values) {
                if (v instanceof DdbValue.M m) {
                    m.fields()
                            .forEach((k, x) -> byKey.computeIfAbsent(k, n -> new ArrayList<>())
                                    .add(x));
                }
            }
            Map<String, List<DdbValue>> newKeys = new LinkedHashMap<>();
            Set<String> lowerNames = new HashSet<>();
            for (Types.NestedField f : struct.fields()) {
                lowerNames.add(f.name().toLowerCase(Locale.ROOT));
            }
            byKey.forEach((k, vs) -> {
                Types.NestedField f = TypeMapping.fieldFor(struct, k, names);
                if (f == null) {
                    newKeys.put(k, vs);
                } else {
                    addNestedFields(path + "." + f.name(), f.type(), TypeMapping.shapeOf(f), vs, ids, added);
                }
            });
            for (Types.NestedField f : TypeMapping.structFields(
                    newKeys, names, lowerNames, struct.fields().size(), ids)) {
                added.add(new Addition(path, f.name(), f.type(), f.doc()));
            }
        } else if (shape.startsWith("L<") && type.isListType()) {
            List<DdbValue> elements = new ArrayList<>();
            for (DdbValue v : values) {
                if (v instanceof DdbValue.L l) {
                    elements.addAll(l.elements());
                }
            }
            Types.NestedField element = type.asListType().fields().get(0);
            String elementShape = shape.substring(2, shape.length() - 1);
            addNestedFields(path + "." + element.name(), element.type(), elementShape, elements, ids, added);
        }
    }

    /** The row for an item written by change {@code c}. */
    public Record toRow(Change c) {
        GenericRecord row = emptyRow.copy();
        Map<String, String> overflow = null;
        for (Map.Entry<String, DdbValue> e : c.newImage().entrySet()) {
            String name = e.getKey();
            Slot slot = slotsByAttribute.get(name);
            boolean exact = false;
            if (slot != null) {
                TypeMapping.Projection p = TypeMapping.project(e.getValue(), slot.type(), slot.shape(), names);
                row.set(slot.position(), p.value());
                exact = p.exact();
            }
            if (!exact) {
                if (overflow == null) {
                    overflow = new LinkedHashMap<>();
                }
                overflow.put(name, DdbJson.write(e.getValue()));
            }
        }
        row.set(overflowAt, overflow);
        row.set(seqAt, SequenceNumbers.pad(c.sequenceNumber()));
        row.set(timeAt, changeTime(c.approximateCreationMillis()));
        if (itemAt >= 0) {
            row.set(itemAt, DdbJson.writeItem(c.newImage()));
        }
        if (variantAt >= 0) {
            row.set(variantAt, VariantItem.of(c.newImage()));
        }
        return row;
    }

    private OffsetDateTime changeTime(long millis) {
        Stamp stamp = lastStamp;
        if (stamp.millis() != millis) {
            stamp = new Stamp(millis, OffsetDateTime.ofInstant(Instant.ofEpochMilli(millis), ZoneOffset.UTC));
            lastStamp = stamp;
        }
        return stamp.time();
    }

    /** The DynamoDB item a row holds: the inverse of {@link #toRow}. */
    public Map<String, DdbValue> toItem(Record row) {
        Map<String, DdbValue> item = new LinkedHashMap<>();
        for (Types.NestedField column : schema.columns()) {
            if (column.name().startsWith(RESERVED_PREFIX)) {
                continue;
            }
            Object value = row.getField(column.name());
            if (value != null) {
                String attribute = ColumnNames.attributeOf(column);
                String shape = keyDdbTypes.getOrDefault(attribute, TypeMapping.shapeOf(column));
                item.put(attribute, TypeMapping.reconstruct(value, column.type(), shape));
            }
        }
        @SuppressWarnings("unchecked")
        Map<String, String> overflow = (Map<String, String>) row.getField(OVERFLOW);
        if (overflow != null) {
            overflow.forEach((name, json) -> item.put(name, DdbJson.parse(json)));
        }
        return item;
    }
}
