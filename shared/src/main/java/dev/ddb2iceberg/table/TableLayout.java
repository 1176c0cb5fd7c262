package dev.ddb2iceberg.table;

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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
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
  /** Table property naming the key attributes and their DynamoDB types, e.g. {@code pk:S,sk:N}. */
  public static final String KEYS_PROPERTY = "ddb2iceberg.keys";

  private final Schema schema;
  private final List<String> keyNames;
  private final Map<String, String> keyDdbTypes;
  /** Lower-cased names of all top-level columns: engines such as Athena ignore case. */
  private final Map<String, String> columnsByLowerName = new HashMap<>();

  private TableLayout(Schema schema, Map<String, String> keyDdbTypes) {
    this.schema = schema;
    this.keyDdbTypes = keyDdbTypes;
    this.keyNames = List.copyOf(keyDdbTypes.keySet());
    for (Types.NestedField f : schema.columns()) {
      columnsByLowerName.put(f.name().toLowerCase(Locale.ROOT), f.name());
    }
  }

  public static TableLayout of(Table table) {
    return of(table.schema(), table.properties().get(KEYS_PROPERTY));
  }

  public static TableLayout of(Schema schema, String keysProperty) {
    if (keysProperty == null || keysProperty.isBlank()) {
      throw new IllegalStateException("The table has no '" + KEYS_PROPERTY + "' property: it was not created by"
          + " this pipeline. Point TABLE_NAME at a new table, or at one the merger created.");
    }
    Map<String, String> keys = new LinkedHashMap<>();
    for (String part : keysProperty.split(",")) {
      int colon = part.lastIndexOf(':');
      keys.put(part.substring(0, colon), part.substring(colon + 1));
    }
    return new TableLayout(schema, keys);
  }

  public static String keysProperty(Map<String, String> keyDdbTypes) {
    List<String> parts = new ArrayList<>();
    keyDdbTypes.forEach((name, type) -> parts.add(name + ":" + type));
    return String.join(",", parts);
  }

  public Schema schema() {
    return schema;
  }

  public List<String> keyNames() {
    return keyNames;
  }

  /** The key of a change as column values, or null when a key value does not fit its column. */
  public List<Object> keyOf(Change c) {
    Object[] key = new Object[keyNames.size()];
    for (int i = 0; i < key.length; i++) {
      String name = keyNames.get(i);
      DdbValue v = c.keys().get(name);
      if (v == null) {
        return null;
      }
      Object col = TypeMapping.toColumn(schema.findField(name).type(), keyDdbTypes.get(name), v);
      if (col == TypeMapping.DOES_NOT_FIT) {
        return null;
      }
      key[i] = col;
    }
    return List.of(key);
  }

  /** Why {@link #keyOf} returned null, for the quarantine. */
  public String whyKeyDoesNotFit(Change c) {
    if (!c.keys().keySet().equals(keyDdbTypes.keySet())) {
      return "change has key attributes " + c.keys().keySet() + " but the table's keys are " + keyNames;
    }
    for (String name : keyNames) {
      DdbValue v = c.keys().get(name);
      if (TypeMapping.toColumn(schema.findField(name).type(), keyDdbTypes.get(name), v) == TypeMapping.DOES_NOT_FIT) {
        return "key attribute '" + name + "' = " + DdbJson.write(v) + " does not fit its column of type "
            + schema.findField(name).type() + " (DynamoDB type " + keyDdbTypes.get(name) + ")";
      }
    }
    return "key fits";
  }

  /** The key of a row read from the table (it must hold the key columns). */
  public List<Object> keyOf(Record row) {
    Object[] key = new Object[keyNames.size()];
    for (int i = 0; i < key.length; i++) {
      key[i] = row.getField(keyNames.get(i));
    }
    return List.of(key);
  }

  /** Rows in key order (the table's sort order). */
  @SuppressWarnings("unchecked")
  public Comparator<Record> keyOrder() {
    Comparator<Record> order = (a, b) -> 0;
    for (String key : keyNames) {
      Comparator<Object> c = (Comparator<Object>) (Comparator<?>) Comparators.forType(
          schema.findField(key).type().asPrimitiveType());
      order = order.thenComparing((a, b) -> c.compare(a.getField(key), b.getField(key)));
    }
    return order;
  }

  /** The DynamoDB type a typed column holds. */
  public String ddbType(Types.NestedField column) {
    String keyType = keyDdbTypes.get(column.name());
    return keyType != null ? keyType : TypeMapping.defaultDdbType(column.type());
  }

  /** Whether an attribute of this name may get a typed column of its own. */
  private boolean mayHaveColumn(String attribute) {
    return !attribute.startsWith("_ddb_") && !attribute.contains(".") && !attribute.isEmpty();
  }

  /**
   * Typed columns to add for attributes of these items that the schema lacks, in first-seen order.
   * An attribute whose name differs from an existing column only by case gets none (engines that
   * ignore case could not tell them apart); its values go to the overflow map.
   */
  public Map<String, Type> newColumns(Iterable<Map<String, DdbValue>> items) {
    Map<String, Type> added = new LinkedHashMap<>();
    Map<String, String> seenLower = new HashMap<>(columnsByLowerName);
    for (Map<String, DdbValue> item : items) {
      for (Map.Entry<String, DdbValue> e : item.entrySet()) {
        String name = e.getKey();
        if (schema.findField(name) != null || added.containsKey(name) || !mayHaveColumn(name)) {
          continue;
        }
        Type type = TypeMapping.columnTypeFor(e.getValue());
        String lower = name.toLowerCase(Locale.ROOT);
        if (type != null && !seenLower.containsKey(lower)) {
          added.put(name, type);
          seenLower.put(lower, name);
        }
      }
    }
    return added;
  }

  /** The row for an item written by change {@code c}. */
  public Record toRow(Change c) {
    GenericRecord row = GenericRecord.create(schema);
    Map<String, String> overflow = null;
    for (Map.Entry<String, DdbValue> e : c.newImage().entrySet()) {
      Types.NestedField column = mayHaveColumn(e.getKey()) ? schema.findField(e.getKey()) : null;
      Object value = column == null || !column.type().isPrimitiveType()
          ? TypeMapping.DOES_NOT_FIT
          : TypeMapping.toColumn(column.type(), ddbType(column), e.getValue());
      if (value == TypeMapping.DOES_NOT_FIT) {
        if (overflow == null) {
          overflow = new LinkedHashMap<>();
        }
        overflow.put(e.getKey(), DdbJson.write(e.getValue()));
      } else {
        row.setField(column.name(), value);
      }
    }
    row.setField(OVERFLOW, overflow);
    row.setField(SEQ, SequenceNumbers.pad(c.sequenceNumber()));
    row.setField(TIME, OffsetDateTime.ofInstant(Instant.ofEpochMilli(c.approximateCreationMillis()), ZoneOffset.UTC));
    return row;
  }

  /** The DynamoDB item a row holds: the inverse of {@link #toRow}. */
  public Map<String, DdbValue> toItem(Record row) {
    Map<String, DdbValue> item = new LinkedHashMap<>();
    for (Types.NestedField column : schema.columns()) {
      String name = column.name();
      if (name.equals(SEQ) || name.equals(TIME) || name.equals(OVERFLOW)) {
        continue;
      }
      Object value = row.getField(name);
      if (value != null) {
        item.put(name, TypeMapping.fromColumn(ddbType(column), value));
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
