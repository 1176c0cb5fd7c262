package dev.ddb2iceberg.table;

import com.fasterxml.jackson.core.io.JsonStringEncoder;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ddb2iceberg.commit.PipelineProperties;
import java.io.IOException;
import java.text.Normalizer;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.iceberg.types.Types;

/**
 * How an attribute's name (or a map key's) becomes a column's (or a struct field's) name
 * (COLUMN_NAMES), and where the attribute's own name is kept when they differ.
 *
 * <p>{@link #LOWER}: names every engine and catalog accepts unquoted. Athena and the Glue Data
 * Catalog want lower-case names of letters, digits and underscores, Glue and Lake Formation (the
 * S3 Tables integration) refuse mixed case, and Glue writes struct types as text
 * ({@code struct<name:type,...>}), where a field name with a colon or a comma breaks the type. The
 * rule: accents are dropped (é → e), letters are lower-cased, every other character that is not
 * an ASCII letter, a digit or {@code _} becomes {@code _}, and a name that would start with a digit
 * gets a {@code _} in front (Trino refuses a bare identifier that starts with a digit). So
 * {@code customerId} → {@code customerid}, {@code gift wrap} → {@code gift_wrap},
 * {@code ship.to} → {@code ship_to}, {@code 2fa} → {@code _2fa}, {@code Größe} → {@code gro_e}.
 *
 * <p>{@link #PRESERVE}: the attribute's name as it is (the names of tables made before the
 * setting); names with a dot get no column, since Iceberg reads a dot as a path.
 *
 * <p>Under either rule, a name the pipeline keeps for itself ({@code _ddb_...}) gets no column, and
 * the caller sends an attribute whose column name is taken (ignoring case) to the overflow map.
 * When a column's name differs from its attribute's, the column's doc keeps the attribute's name
 * after the shape, as a JSON string: {@code ddb:N name="orderTotal"} (one line, as a Glue column
 * comment must be), so a row turns back into the item exactly.
 */
public enum ColumnNames {
    LOWER,
    PRESERVE;

    /**
     * The longest attribute name (as the doc writes it, escaped) that gets a column under
     * {@link #LOWER}: a Glue column comment (the column's doc) holds at most 255 characters, and it
     * carries the name. Longer ones go to the overflow map.
     */
    static final int MAX_LOWER_NAME = 200;

    private static final String NAME_MARK = " name=";
    private static final ObjectMapper JSON = new ObjectMapper();
    /**
     * Column names of map keys met before: every row written looks its map keys' fields up by name.
     * Bounded (map keys may be ids, never seen twice): past the bound it starts again.
     */
    private static final Map<String, String> LOWER_NAMES = new ConcurrentHashMap<>();

    private static final int LOWER_NAMES_KEPT = 10_000;
    /** What {@link #LOWER_NAMES} keeps for a name that gets no column. */
    private static final String NO_COLUMN = new String("");
    /** Attribute names parsed from docs: every row read turns field docs back into names. */
    private static final Map<String, String> NAMES_BY_DOC = new ConcurrentHashMap<>();

    /** The setting's text, as COLUMN_NAMES and the table property write it. */
    public String setting() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * The rule a table's columns were named by. A table made before the rule was recorded took the
     * attribute names as they were: {@link #PRESERVE}.
     */
    public static ColumnNames of(Map<String, String> tableProperties) {
        String recorded = tableProperties.get(PipelineProperties.COLUMN_NAMES);
        if (recorded == null) {
            return PRESERVE;
        }
        for (ColumnNames names : values()) {
            if (names.setting().equals(recorded)) {
                return names;
            }
        }
        throw new IllegalStateException("The table property " + PipelineProperties.COLUMN_NAMES + " is '" + recorded
                + "', which is not one of lower, preserve: was it edited? Set it back to the rule the columns follow.");
    }

    /** The column (or struct field) name of an attribute (or map key), or null when it gets none. */
    public String columnFor(String attribute) {
        if (attribute.isEmpty() || attribute.startsWith(TableLayout.RESERVED_PREFIX)) {
            return null;
        }
        if (this == PRESERVE) {
            return attribute.contains(".") ? null : attribute;
        }
        if (attribute.length() > MAX_LOWER_NAME) {
            return null;
        }
        String column = LOWER_NAMES.get(attribute);
        if (column == null) {
            if (LOWER_NAMES.size() >= LOWER_NAMES_KEPT) {
                LOWER_NAMES.clear();
            }
            // The doc keeps the name escaped: control characters take six characters each there.
            boolean fitsDoc = JsonStringEncoder.getInstance().quoteAsString(attribute).length <= MAX_LOWER_NAME;
            column = fitsDoc ? lower(attribute) : NO_COLUMN;
            LOWER_NAMES.put(attribute, column);
        }
        return column == NO_COLUMN || column.startsWith(TableLayout.RESERVED_PREFIX) ? null : column;
    }

    /**
     * The column name of a key attribute, which must have one: as {@link #columnFor}, but a name the
     * pipeline keeps for itself gets a {@code _} in front, and a name already {@code taken} (two keys
     * that differ only by case) gets {@code _2}, {@code _3}...
     */
    public String keyColumnFor(String attribute, Set<String> taken) {
        String base = this == PRESERVE ? attribute : lower(attribute);
        if (base.toLowerCase(Locale.ROOT).startsWith(TableLayout.RESERVED_PREFIX)) {
            base = "_" + base;
        }
        String column = base;
        for (int n = 2; taken.contains(column.toLowerCase(Locale.ROOT)); n++) {
            column = base + "_" + n;
        }
        return column;
    }

    /** The {@link #LOWER} rule, for any name. */
    static String lower(String attribute) {
        // Runs for every map key of every row written: a name already safe is returned as it is,
        // and other ASCII names (nearly all the rest) skip the normalizer.
        boolean ascii = true;
        boolean safe = !attribute.isEmpty() && !isDigit(attribute.charAt(0));
        for (int i = 0; i < attribute.length() && ascii; i++) {
            char c = attribute.charAt(i);
            ascii = c < 128;
            safe &= isSafe(c);
        }
        if (safe) {
            return attribute;
        }
        String plain = ascii
                ? attribute.toLowerCase(Locale.ROOT)
                : Normalizer.normalize(attribute, Normalizer.Form.NFKD)
                        .replaceAll("\\p{M}", "")
                        .toLowerCase(Locale.ROOT);
        StringBuilder b = new StringBuilder(plain.length() + 1);
        plain.codePoints().forEach(c -> b.append(c < 128 && isSafe((char) c) ? (char) c : '_'));
        if (b.isEmpty() || isDigit(b.charAt(0))) {
            b.insert(0, '_');
        }
        return b.toString();
    }

    private static boolean isSafe(char c) {
        return (c >= 'a' && c <= 'z') || isDigit(c) || c == '_';
    }

    private static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }

    /** The doc of a column holding {@code shape} named {@code column} for {@code attribute}. */
    public static String doc(String shape, String attribute, String column) {
        String doc = TypeMapping.DOC_PREFIX + shape;
        return attribute.equals(column)
                ? doc
                : doc + NAME_MARK + "\""
                        + new String(JsonStringEncoder.getInstance().quoteAsString(attribute)) + "\"";
    }

    /** The attribute (or map key) a column (or struct field) holds: the name its doc keeps, else its own. */
    public static String attributeOf(Types.NestedField field) {
        String doc = field.doc();
        if (doc == null || !doc.startsWith(TypeMapping.DOC_PREFIX) || !doc.contains(NAME_MARK)) {
            return field.name();
        }
        return NAMES_BY_DOC.computeIfAbsent(doc, d -> {
            try {
                return JSON.readValue(d.substring(d.indexOf(NAME_MARK) + NAME_MARK.length()), String.class);
            } catch (IOException e) {
                throw new IllegalStateException(
                        "Column " + field.name() + " has a doc the pipeline cannot read (" + d + "): was it edited?",
                        e);
            }
        });
    }

    /** The shape part of a doc written by {@link #doc}: what follows {@code ddb:}, up to the name. */
    static String shapeOfDoc(String doc) {
        int mark = doc.indexOf(NAME_MARK);
        return doc.substring(TypeMapping.DOC_PREFIX.length(), mark < 0 ? doc.length() : mark);
    }
}
