package dev.ddb2iceberg.table;

import dev.ddb2iceberg.model.DdbValue;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.RoundingMode;
import java.nio.ByteBuffer;
import java.time.DateTimeException;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.IntSupplier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;

/**
 * The one place that decides how DynamoDB values become Iceberg column values and back.
 *
 * <p>Every attribute column records the DynamoDB <em>shape</em> it holds in its doc
 * ({@code ddb:<shape>}), so a row can be turned back into the exact item:
 *
 * <table>
 *   <tr><th>shape</th><th>DynamoDB</th><th>Iceberg type</th></tr>
 *   <tr><td>S, BOOL, B</td><td>S, BOOL, B</td><td>string, boolean, binary</td></tr>
 *   <tr><td>N</td><td>N</td><td>long when every value seen is an integer in range, else
 *       decimal(38, s) with room for the decimals seen (at least 9), else string (exact text);
 *       or double / decimal(p, s) by hint</td></tr>
 *   <tr><td>SS, NS, BS</td><td>sets</td><td>list of string, number, binary</td></tr>
 *   <tr><td>M</td><td>M</td><td>struct, one field per key seen, fields added as keys appear</td></tr>
 *   <tr><td>L&lt;e&gt;</td><td>L whose elements share shape e</td><td>list of e's type</td></tr>
 *   <tr><td>JSON</td><td>L of mixed elements (or M/L by hint)</td><td>string: the value as plain JSON</td></tr>
 *   <tr><td>N@epoch_seconds, N@epoch_millis, S@iso8601</td><td>N or S, by hint</td><td>timestamptz</td></tr>
 * </table>
 *
 * <p>{@link #project} gives a value's column value and whether the column holds it exactly; when it
 * does not (a NULL, a value of another type, more decimals than the column has, a map key with no
 * field), the caller keeps the exact value in the row's overflow map as well. Nothing is lost and
 * nothing is silently rounded.
 */
public final class TypeMapping {
    public static final String DOC_PREFIX = "ddb:";
    /** Fields a struct column may grow to; keys beyond it stay in the overflow map. */
    public static final int MAX_STRUCT_FIELDS = 100;
    /** Decimal columns get at least this many decimals, so later values with more still fit. */
    static final int MIN_DECIMAL_SCALE = 9;

    /** What {@link #keyToColumn} returns for a key value its column cannot hold. */
    public static final Object DOES_NOT_FIT = new Object();

    /** A column value and whether turning it back gives the DynamoDB value exactly. */
    public record Projection(Object value, boolean exact) {
        static final Projection MISFIT = new Projection(null, false);
    }

    /** A column to create: its Iceberg type and the DynamoDB shape it holds. */
    public record Column(Type type, String shape) {
        /** The doc of this column named {@code column} for {@code attribute} (see {@link ColumnNames#doc}). */
        public String doc(String attribute, String column) {
            return ColumnNames.doc(shape, attribute, column);
        }
    }

    private TypeMapping() {}

    // ------------------------------------------------------------------ shapes

    /** The shape a field holds: from its doc, or (for columns without one, made by someone else) from its type. */
    public static String shapeOf(Types.NestedField field) {
        String doc = field.doc();
        if (doc != null && doc.startsWith(DOC_PREFIX)) {
            return ColumnNames.shapeOfDoc(doc);
        }
        switch (field.type().typeId()) {
            case INTEGER:
            case LONG:
            case DECIMAL:
            case FLOAT:
            case DOUBLE:
                return "N";
            case BOOLEAN:
                return "BOOL";
            case BINARY:
                return "B";
            case STRUCT:
                return "M"; // a struct someone else added: its fields are map keys
            case LIST:
                return "L<" + shapeOf(field.type().asListType().fields().get(0)) + ">";
            default:
                return "S";
        }
    }

    private static String elementShape(String listShape) {
        return listShape.substring(2, listShape.length() - 1);
    }

    // ------------------------------------------------------------------ inference

    /**
     * The column for an attribute (or map key) first seen with these values in one run: its type is
     * that of the first non-NULL value; values of other types will go to the overflow map. Null when
     * nothing can be inferred yet (only NULLs, empty lists or maps): the values wait in the overflow
     * map until a later run sees one that tells.
     */
    public static Column infer(List<DdbValue> values, ColumnNames names, IntSupplier ids) {
        String type = null;
        List<DdbValue> same = new ArrayList<>();
        for (DdbValue v : values) {
            if (v instanceof DdbValue.Null) {
                continue;
            }
            if (type == null) {
                type = v.typeName();
            }
            if (type.equals(v.typeName())) {
                same.add(v);
            }
        }
        if (type == null) {
            return null;
        }
        switch (type) {
            case "S":
                return new Column(Types.StringType.get(), "S");
            case "BOOL":
                return new Column(Types.BooleanType.get(), "BOOL");
            case "B":
                return new Column(Types.BinaryType.get(), "B");
            case "N":
                return new Column(numberType(texts(same)), "N");
            case "SS":
                return new Column(Types.ListType.ofOptional(ids.getAsInt(), Types.StringType.get()), "SS");
            case "BS":
                return new Column(Types.ListType.ofOptional(ids.getAsInt(), Types.BinaryType.get()), "BS");
            case "NS": {
                List<String> all = new ArrayList<>();
                same.forEach(v -> all.addAll(((DdbValue.NS) v).elements()));
                return new Column(Types.ListType.ofOptional(ids.getAsInt(), numberType(all)), "NS");
            }
            case "M": {
                Map<String, List<DdbValue>> byKey = new LinkedHashMap<>();
                same.forEach(v -> ((DdbValue.M) v)
                        .fields()
                        .forEach((k, x) ->
                                byKey.computeIfAbsent(k, n -> new ArrayList<>()).add(x)));
                List<Types.NestedField> fields = structFields(byKey, names, Set.of(), 0, ids);
                return fields.isEmpty() ? null : new Column(Types.StructType.of(fields), "M");
            }
            case "L": {
                List<DdbValue> elements = new ArrayList<>();
                same.forEach(v -> elements.addAll(((DdbValue.L) v).elements()));
                Set<String> types = new HashSet<>();
                elements.stream().filter(e -> !(e instanceof DdbValue.Null)).forEach(e -> types.add(e.typeName()));
                if (types.size() > 1) {
                    return new Column(Types.StringType.get(), "JSON");
                }
                Column element = infer(elements, names, ids);
                return element == null
                        ? null
                        : new Column(
                                Types.ListType.ofOptional(ids.getAsInt(), element.type()),
                                "L<" + element.shape() + ">");
            }
            default:
                return null;
        }
    }

    /**
     * Fields for the map keys of one run, named by {@code names}, skipping keys that get no field
     * name, keys whose field name is taken (ignoring case) and keys beyond {@link #MAX_STRUCT_FIELDS}.
     */
    static List<Types.NestedField> structFields(
            Map<String, List<DdbValue>> byKey,
            ColumnNames names,
            Set<String> existingLowerNames,
            int existingCount,
            IntSupplier ids) {
        List<Types.NestedField> fields = new ArrayList<>();
        Set<String> lower = new HashSet<>(existingLowerNames);
        for (Map.Entry<String, List<DdbValue>> e : byKey.entrySet()) {
            String key = e.getKey();
            String name = names.columnFor(key);
            if (name == null
                    || lower.contains(name.toLowerCase(Locale.ROOT))
                    || existingCount + fields.size() >= MAX_STRUCT_FIELDS) {
                continue;
            }
            Column c = infer(e.getValue(), names, ids);
            if (c != null) {
                lower.add(name.toLowerCase(Locale.ROOT));
                fields.add(Types.NestedField.optional(ids.getAsInt(), name, c.type(), c.doc(key, name)));
            }
        }
        return fields;
    }

    /** The field of {@code struct} that holds map key {@code key}, or null when none does. */
    public static Types.NestedField fieldFor(Types.StructType struct, String key, ColumnNames names) {
        String name = names.columnFor(key);
        Types.NestedField field = name == null ? null : struct.field(name);
        return field != null && ColumnNames.attributeOf(field).equals(key) ? field : null;
    }

    /**
     * long when every number is an integer in range; else decimal(38, s) holding the decimals seen
     * (at least {@value #MIN_DECIMAL_SCALE}, as far as the integer digits allow); else string.
     */
    static Type numberType(List<String> texts) {
        if (texts.stream().allMatch(TypeMapping::isCanonicalLong)) {
            return Types.LongType.get();
        }
        int maxScale = -1;
        int maxIntegerDigits = 0;
        for (String t : texts) {
            BigDecimal d = new BigDecimal(t).stripTrailingZeros();
            int scale = Math.max(0, d.scale());
            int integerDigits = Math.max(0, d.precision() - d.scale());
            if (scale + integerDigits <= 38) {
                maxScale = Math.max(maxScale, scale);
                maxIntegerDigits = Math.max(maxIntegerDigits, integerDigits);
            }
        }
        if (maxScale < 0) {
            return Types.StringType.get(); // no value fits any decimal: keep the exact text
        }
        int scale = Math.min(Math.max(maxScale, MIN_DECIMAL_SCALE), 38 - maxIntegerDigits);
        return Types.DecimalType.of(38, Math.max(scale, 0));
    }

    private static List<String> texts(List<DdbValue> numbers) {
        List<String> texts = new ArrayList<>();
        numbers.forEach(v -> texts.add(((DdbValue.N) v).text()));
        return texts;
    }

    /**
     * The wider type a number column needs so that these values fit it exactly, by the promotions
     * Iceberg allows (int → long, float → double, a decimal's precision up to 38 at the same scale);
     * null when none is needed or none would help (the values then go to the overflow map).
     */
    public static Type.PrimitiveType promotionFor(Type current, List<DdbValue> values) {
        switch (current.typeId()) {
            case INTEGER: {
                boolean needed = false;
                for (DdbValue v : values) {
                    if (v instanceof DdbValue.N n
                            && !number(n.text(), current).exact()
                            && number(n.text(), Types.LongType.get()).exact()) {
                        needed = true;
                    }
                }
                return needed ? Types.LongType.get() : null;
            }
            case FLOAT: {
                boolean needed = false;
                for (DdbValue v : values) {
                    if (v instanceof DdbValue.N n
                            && !number(n.text(), current).exact()
                            && number(n.text(), Types.DoubleType.get()).exact()) {
                        needed = true;
                    }
                }
                return needed ? Types.DoubleType.get() : null;
            }
            case DECIMAL: {
                Types.DecimalType decimal = (Types.DecimalType) current;
                int precision = decimal.precision();
                for (DdbValue v : values) {
                    if (v instanceof DdbValue.N n) {
                        try {
                            BigDecimal d = new BigDecimal(n.text()).setScale(decimal.scale(), RoundingMode.UNNECESSARY);
                            if (d.precision() <= 38) {
                                precision = Math.max(precision, d.precision());
                            }
                        } catch (ArithmeticException tooManyDecimals) {
                            // a scale cannot grow: this value stays in the overflow map
                        }
                    }
                }
                return precision > decimal.precision() ? Types.DecimalType.of(precision, decimal.scale()) : null;
            }
            default:
                return null;
        }
    }

    // ------------------------------------------------------------------ DynamoDB → column

    /** The column value of {@code v} in a column of {@code type} holding {@code shape}. */
    public static Projection project(DdbValue v, Type type, String shape, ColumnNames names) {
        if (v instanceof DdbValue.Null) {
            return Projection.MISFIT;
        }
        switch (shape) {
            case "S":
                return v instanceof DdbValue.S s && type.typeId() == Type.TypeID.STRING
                        ? exact(s.value())
                        : Projection.MISFIT;
            case "BOOL":
                return v instanceof DdbValue.Bool b ? exact(b.value()) : Projection.MISFIT;
            case "B":
                return v instanceof DdbValue.B b ? exact(ByteBuffer.wrap(b.bytes())) : Projection.MISFIT;
            case "N":
                return v instanceof DdbValue.N n ? number(n.text(), type) : Projection.MISFIT;
            case "SS":
                return v instanceof DdbValue.SS s ? exact(new ArrayList<>(s.elements())) : Projection.MISFIT;
            case "BS": {
                if (!(v instanceof DdbValue.BS s)) {
                    return Projection.MISFIT;
                }
                List<Object> list = new ArrayList<>();
                s.elements().forEach(b -> list.add(ByteBuffer.wrap(b)));
                return exact(list);
            }
            case "NS": {
                if (!(v instanceof DdbValue.NS s)) {
                    return Projection.MISFIT;
                }
                Type element = type.asListType().elementType();
                List<Object> list = new ArrayList<>();
                for (String text : s.elements()) {
                    Projection p = number(text, element);
                    if (!p.exact()) {
                        return Projection.MISFIT; // a set with a hole would be another set
                    }
                    list.add(p.value());
                }
                return exact(list);
            }
            case "M":
                return v instanceof DdbValue.M m ? struct(m, type.asStructType(), names) : Projection.MISFIT;
            case "JSON":
                if (v instanceof DdbValue.L || v instanceof DdbValue.M) {
                    String json = PlainJson.write(v);
                    return new Projection(json, PlainJson.parse(json).equals(v));
                }
                return Projection.MISFIT;
            case "N@epoch_millis":
                return v instanceof DdbValue.N n && isCanonicalLong(n.text())
                        ? timestamp(Instant.ofEpochMilli(Long.parseLong(n.text())), true)
                        : Projection.MISFIT;
            case "N@epoch_seconds":
                return v instanceof DdbValue.N n ? epochSeconds(n.text()) : Projection.MISFIT;
            case "S@iso8601":
                return v instanceof DdbValue.S s ? iso8601(s.value()) : Projection.MISFIT;
            default:
                if (shape.startsWith("L<") && v instanceof DdbValue.L l) {
                    String elementShape = elementShape(shape);
                    Type element = type.asListType().elementType();
                    List<Object> list = new ArrayList<>();
                    boolean exact = true;
                    for (DdbValue e : l.elements()) {
                        Projection p = project(e, element, elementShape, names);
                        list.add(p.value());
                        exact &= p.exact();
                    }
                    return new Projection(list, exact);
                }
                return Projection.MISFIT;
        }
    }

    private static Projection exact(Object value) {
        return new Projection(value, true);
    }

    private static Projection struct(DdbValue.M m, Types.StructType type, ColumnNames names) {
        Record record = GenericRecord.create(type);
        boolean exact = true;
        for (Map.Entry<String, DdbValue> e : m.fields().entrySet()) {
            Types.NestedField field = fieldFor(type, e.getKey(), names);
            if (field == null) {
                exact = false;
                continue;
            }
            Projection p = project(e.getValue(), field.type(), shapeOf(field), names);
            record.setField(field.name(), p.value());
            exact &= p.exact();
        }
        return new Projection(record, exact);
    }

    private static Projection number(String text, Type type) {
        switch (type.typeId()) {
            case LONG:
                return isCanonicalLong(text) ? exact(Long.parseLong(text)) : Projection.MISFIT;
            case INTEGER: { // a column someone else made; ours are long
                if (!isCanonicalLong(text)) {
                    return Projection.MISFIT;
                }
                long l = Long.parseLong(text);
                return l == (int) l ? exact((int) l) : Projection.MISFIT;
            }
            case FLOAT: {
                float f = Float.parseFloat(text);
                return Float.isInfinite(f)
                        ? Projection.MISFIT
                        : new Projection(
                                f, numberText(new BigDecimal(Float.toString(f))).equals(text));
            }
            case STRING:
                return exact(text);
            case DOUBLE: {
                double d = Double.parseDouble(text);
                if (Double.isInfinite(d)) {
                    return Projection.MISFIT;
                }
                return new Projection(
                        d, numberText(new BigDecimal(Double.toString(d))).equals(text));
            }
            case DECIMAL: {
                Types.DecimalType decimal = (Types.DecimalType) type;
                BigDecimal d = new BigDecimal(text);
                try {
                    d = d.setScale(decimal.scale(), RoundingMode.UNNECESSARY);
                } catch (ArithmeticException tooManyDecimals) {
                    return Projection.MISFIT;
                }
                if (d.precision() > decimal.precision()) {
                    return Projection.MISFIT;
                }
                return new Projection(d, numberText(d).equals(text));
            }
            default:
                return Projection.MISFIT;
        }
    }

    private static Projection timestamp(Instant instant, boolean exact) {
        return new Projection(OffsetDateTime.ofInstant(instant, ZoneOffset.UTC), exact);
    }

    private static Projection epochSeconds(String text) {
        BigDecimal micros = new BigDecimal(text).movePointRight(6);
        try {
            long m = micros.longValueExact();
            Instant t = Instant.EPOCH.plus(m, ChronoUnit.MICROS);
            return timestamp(t, epochSecondsText(t).equals(text));
        } catch (ArithmeticException | DateTimeException notWholeMicrosOrOutOfRange) {
            return Projection.MISFIT;
        }
    }

    private static Projection iso8601(String text) {
        Instant t;
        try {
            t = OffsetDateTime.parse(text).toInstant();
        } catch (DateTimeParseException e1) {
            try {
                t = LocalDateTime.parse(text).toInstant(ZoneOffset.UTC);
            } catch (DateTimeParseException e2) {
                try {
                    t = LocalDate.parse(text).atStartOfDay().toInstant(ZoneOffset.UTC);
                } catch (DateTimeParseException e3) {
                    return Projection.MISFIT;
                }
            }
        }
        return timestamp(t, t.toString().equals(text));
    }

    // ------------------------------------------------------------------ column → DynamoDB

    /** The DynamoDB value of a non-null column value: the inverse of an exact {@link #project}. */
    public static DdbValue reconstruct(Object value, Type type, String shape) {
        switch (shape) {
            case "S":
                return new DdbValue.S(value.toString());
            case "BOOL":
                return DdbValue.Bool.of((Boolean) value);
            case "B":
                return new DdbValue.B(bytes((ByteBuffer) value));
            case "N":
                return new DdbValue.N(numberText(value));
            case "SS": {
                List<String> s = new ArrayList<>();
                ((List<?>) value).forEach(e -> s.add(e.toString()));
                return new DdbValue.SS(s);
            }
            case "NS": {
                List<String> s = new ArrayList<>();
                ((List<?>) value).forEach(e -> s.add(numberText(e)));
                return new DdbValue.NS(s);
            }
            case "BS": {
                List<byte[]> s = new ArrayList<>();
                ((List<?>) value).forEach(e -> s.add(bytes((ByteBuffer) e)));
                return new DdbValue.BS(s);
            }
            case "M": {
                Record record = (Record) value;
                Map<String, DdbValue> m = new LinkedHashMap<>();
                for (Types.NestedField f : type.asStructType().fields()) {
                    Object x = record.getField(f.name());
                    if (x != null) {
                        m.put(ColumnNames.attributeOf(f), reconstruct(x, f.type(), shapeOf(f)));
                    }
                }
                return new DdbValue.M(m);
            }
            case "JSON":
                return PlainJson.parse(value.toString());
            case "N@epoch_millis":
                return new DdbValue.N(
                        Long.toString(((OffsetDateTime) value).toInstant().toEpochMilli()));
            case "N@epoch_seconds":
                return new DdbValue.N(epochSecondsText(((OffsetDateTime) value).toInstant()));
            case "S@iso8601":
                return new DdbValue.S(((OffsetDateTime) value).toInstant().toString());
            default: {
                String elementShape = elementShape(shape);
                Type element = type.asListType().elementType();
                List<DdbValue> l = new ArrayList<>();
                for (Object e : (List<?>) value) {
                    l.add(e == null ? DdbValue.Null.INSTANCE : reconstruct(e, element, elementShape));
                }
                return new DdbValue.L(l);
            }
        }
    }

    /** A number as DynamoDB writes it: plain, no trailing zeros after the point. */
    private static String numberText(Object value) {
        if (value instanceof Long || value instanceof Integer) {
            return value.toString();
        }
        if (value instanceof Float f) {
            return numberText(new BigDecimal(Float.toString(f)));
        }
        if (value instanceof Double d) {
            return numberText(new BigDecimal(Double.toString(d)));
        }
        if (value instanceof BigDecimal d) {
            return d.signum() == 0 ? "0" : d.stripTrailingZeros().toPlainString();
        }
        return value.toString(); // exact text in a string column
    }

    private static String epochSecondsText(Instant t) {
        BigDecimal seconds = new BigDecimal(
                BigInteger.valueOf(t.getEpochSecond())
                        .multiply(BigInteger.valueOf(1_000_000))
                        .add(BigInteger.valueOf(t.getNano() / 1000)),
                6);
        return numberText(seconds);
    }

    private static byte[] bytes(ByteBuffer buffer) {
        ByteBuffer b = buffer.duplicate();
        byte[] bytes = new byte[b.remaining()];
        b.get(bytes);
        return bytes;
    }

    // ------------------------------------------------------------------ keys

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

    /** The column value of key value {@code v} of DynamoDB type {@code ddbType}, or {@link #DOES_NOT_FIT}. */
    public static Object keyToColumn(Type type, String ddbType, DdbValue v) {
        if (!ddbType.equals(v.typeName())) {
            return DOES_NOT_FIT;
        }
        Projection p = project(v, type, ddbType, ColumnNames.PRESERVE); // a key is S, N or B: no fields
        return p.exact() ? p.value() : DOES_NOT_FIT;
    }

    /** The DynamoDB value of a key column's value. */
    public static DdbValue keyFromColumn(String ddbType, Object value) {
        return reconstruct(value, null, ddbType);
    }

    /** An integer exactly as Long.toString would write it: no sign on zero, no leading zeros, no exponent. */
    public static boolean isCanonicalLong(String text) {
        // By hand, not by regular expression: the merge asks this of every number it writes.
        int n = text.length();
        int first = n > 0 && text.charAt(0) == '-' ? 1 : 0;
        int digits = n - first;
        if (digits < 1 || digits > 19) {
            return false;
        }
        if (text.charAt(first) == '0') {
            return n == 1; // "0" alone: no leading zeros, no "-0"
        }
        for (int i = first; i < n; i++) {
            char ch = text.charAt(i);
            if (ch < '0' || ch > '9') {
                return false;
            }
        }
        if (digits < 19) {
            return true;
        }
        try {
            Long.parseLong(text);
            return true;
        } catch (NumberFormatException e) {
            return false; // 19 digits beyond Long's range
        }
    }
}
