package dev.ddb2iceberg.table;

import dev.ddb2iceberg.model.DdbValue;
import java.nio.ByteBuffer;
import java.util.regex.Pattern;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;

/**
 * The one place that decides how DynamoDB values become Iceberg column values and back.
 *
 * <p>Typed columns serve the common case: S → string, N → long (when the number is an integer
 * written canonically and within range), BOOL → boolean, B → binary. Every other value (maps,
 * lists, sets, NULL, fractions, huge numbers, a value whose type differs from its column's) is
 * not forced into a column: it is kept exactly, as DynamoDB JSON, in the row's overflow map.
 */
public final class TypeMapping {
  /** What {@link #toColumn} returns for a value its column cannot hold exactly. */
  public static final Object DOES_NOT_FIT = new Object();

  /** An integer exactly as Long.toString would write it: no sign on zero, no leading zeros, no exponent. */
  private static final Pattern CANONICAL_LONG = Pattern.compile("0|-?[1-9][0-9]{0,18}");

  private TypeMapping() {}

  /** The type of a new column for an attribute first seen with {@code v}; null if it gets none (overflow). */
  public static Type columnTypeFor(DdbValue v) {
    if (v instanceof DdbValue.S) {
      return Types.StringType.get();
    } else if (v instanceof DdbValue.N n) {
      return isCanonicalLong(n.text()) ? Types.LongType.get() : null;
    } else if (v instanceof DdbValue.Bool) {
      return Types.BooleanType.get();
    } else if (v instanceof DdbValue.B) {
      return Types.BinaryType.get();
    }
    return null;
  }

  /**
   * The type of a key column. Keys must always have a column, so an N key whose first value is
   * not a plain integer is kept as its exact decimal text.
   */
  public static Type keyColumnTypeFor(DdbValue v) {
    if (v instanceof DdbValue.N n) {
      return isCanonicalLong(n.text()) ? Types.LongType.get() : Types.StringType.get();
    } else if (v instanceof DdbValue.B) {
      return Types.BinaryType.get();
    } else if (v instanceof DdbValue.S) {
      return Types.StringType.get();
    }
    throw new IllegalArgumentException("a DynamoDB key attribute is S, N or B, not " + v.typeName());
  }

  /**
   * The column value of {@code v} in a column of {@code type} that holds DynamoDB type
   * {@code ddbType} ("S", "N", "B", "BOOL"), or {@link #DOES_NOT_FIT}.
   */
  public static Object toColumn(Type type, String ddbType, DdbValue v) {
    if (!ddbType.equals(v.typeName())) {
      return DOES_NOT_FIT;
    }
    switch (type.typeId()) {
      case STRING:
        return v instanceof DdbValue.S s ? s.value() : ((DdbValue.N) v).text();
      case LONG: {
        String text = ((DdbValue.N) v).text();
        return isCanonicalLong(text) ? (Object) Long.parseLong(text) : DOES_NOT_FIT;
      }
      case BOOLEAN:
        return ((DdbValue.Bool) v).value();
      case BINARY:
        return ByteBuffer.wrap(((DdbValue.B) v).bytes());
      default:
        return DOES_NOT_FIT;
    }
  }

  /** The DynamoDB value of a non-null column value; the inverse of {@link #toColumn}. */
  public static DdbValue fromColumn(String ddbType, Object value) {
    switch (ddbType) {
      case "S":
        return new DdbValue.S(value.toString());
      case "N":
        return new DdbValue.N(value.toString());
      case "BOOL":
        return new DdbValue.Bool((Boolean) value);
      case "B": {
        ByteBuffer b = ((ByteBuffer) value).duplicate();
        byte[] bytes = new byte[b.remaining()];
        b.get(bytes);
        return new DdbValue.B(bytes);
      }
      default:
        throw new IllegalArgumentException("no typed column holds DynamoDB type " + ddbType);
    }
  }

  /** The DynamoDB type a typed column of this Iceberg type holds, unless recorded otherwise. */
  public static String defaultDdbType(Type type) {
    switch (type.typeId()) {
      case LONG:
        return "N";
      case BOOLEAN:
        return "BOOL";
      case BINARY:
        return "B";
      default:
        return "S";
    }
  }

  public static boolean isCanonicalLong(String text) {
    if (!CANONICAL_LONG.matcher(text).matches()) {
      return false;
    }
    try {
      Long.parseLong(text);
      return true;
    } catch (NumberFormatException e) {
      return false; // 19 digits beyond Long's range
    }
  }
}
