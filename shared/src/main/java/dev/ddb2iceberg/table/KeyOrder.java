package dev.ddb2iceberg.table;

import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Comparators;
import org.apache.iceberg.types.Types;

/**
 * Rows compared key column by key column, in the order Iceberg's comparators give each column's
 * type (the table's sort order). One small class, not a chain of {@code Comparator.thenComparing}:
 * that chain's lambda is one class shared by every chain in the process, so the JIT cannot inline
 * the comparisons it makes.
 *
 * <p>{@link #sort} is how a merge orders the rows it writes. Comparing two rows follows each row to
 * its record, its values array and its key values, scattered over the heap since the changes were
 * decoded: a cache miss or more per row per comparison, which made sorting an eighth of writing
 * the rows. So each row's first key column is first turned into a 64-bit prefix that orders as the
 * column does (a number exactly; a string by its first characters after those every row shares),
 * and the rows are sorted by prefix, the full comparison deciding only between equal prefixes.
 */
public final class KeyOrder implements Comparator<Record> {
    /** Characters of a string key past the shared start that a prefix may hold (8 ASCII ones fit). */
    private static final int PREFIX_CHARS = 8;

    private final int[] positions;
    private final Comparator<Object>[] orders;

    private KeyOrder(int[] positions, Comparator<Object>[] orders) {
        this.positions = positions;
        this.orders = orders;
    }

    /** Rows of {@code rows} (the table's schema, or a projection holding the key columns) by {@code keyColumns}. */
    @SuppressWarnings("unchecked")
    static KeyOrder of(Schema rows, List<String> keyColumns) {
        int n = keyColumns.size();
        int[] positions = new int[n];
        Comparator<Object>[] orders = new Comparator[n];
        for (int k = 0; k < n; k++) {
            Types.NestedField field = rows.findField(keyColumns.get(k));
            positions[k] = rows.columns().indexOf(field); // by position: no name lookup per compare
            orders[k] = (Comparator<Object>)
                    (Comparator<?>) Comparators.forType(field.type().asPrimitiveType());
        }
        return new KeyOrder(positions, orders);
    }

    @Override
    public int compare(Record a, Record b) {
        for (int k = 0; k < positions.length; k++) {
            int c = orders[k].compare(a.get(positions[k], Object.class), b.get(positions[k], Object.class));
            if (c != 0) {
                return c;
            }
        }
        return 0;
    }

    /** Sorts {@code rows} (in place) with {@code order}: by prefix first when it is a key order. */
    public static void sort(List<Record> rows, Comparator<Record> order) {
        if (order instanceof KeyOrder keys) {
            keys.sort(rows);
        } else {
            rows.sort(order);
        }
    }

    /** Sorts {@code rows} (in place) in this order. */
    public void sort(List<Record> rows) {
        if (rows.size() < 2) {
            return;
        }
        long[] prefixes = prefixes(rows);
        if (prefixes == null) {
            rows.sort(this);
            return;
        }
        // A row and its prefix side by side, allocated one after another: the sort reads them in
        // order, and follows a row to its values only when two prefixes are equal.
        Keyed[] keyed = new Keyed[rows.size()];
        for (int i = 0; i < keyed.length; i++) {
            keyed[i] = new Keyed(prefixes[i], rows.get(i));
        }
        Arrays.sort(keyed, (a, b) -> {
            int c = Long.compareUnsigned(a.prefix, b.prefix);
            return c != 0 ? c : compare(a.row, b.row);
        });
        for (int i = 0; i < keyed.length; i++) {
            rows.set(i, keyed[i].row);
        }
    }

    private record Keyed(long prefix, Record row) {}

    /**
     * Each row's prefix, such that a row before another in this order never has a greater prefix
     * (unsigned): the first key column's number with its sign bit flipped, or its string's
     * characters past the start all rows share. Null when the first key column is of another type
     * (a decimal, bytes) or not the same type in every row: then rows are compared whole.
     */
    long[] prefixes(List<Record> rows) {
        int first = positions[0];
        Object sample = rows.get(0).get(first, Object.class);
        long[] out = new long[rows.size()];
        if (sample instanceof Long || sample instanceof Integer) {
            for (int i = 0; i < out.length; i++) {
                Object v = rows.get(i).get(first, Object.class);
                if (!(v instanceof Long || v instanceof Integer)) {
                    return null;
                }
                out[i] = ((Number) v).longValue() ^ Long.MIN_VALUE; // signed order as unsigned
            }
            return out;
        }
        if (!(sample instanceof CharSequence)) {
            return null;
        }
        CharSequence[] values = new CharSequence[rows.size()];
        for (int i = 0; i < values.length; i++) {
            Object v = rows.get(i).get(first, Object.class);
            if (!(v instanceof CharSequence)) {
                return null;
            }
            values[i] = (CharSequence) v;
        }
        int shared = sharedStart(values);
        // The fewest bits that hold every character's rank past the shared start (0 is the end of
        // the string, below every character), so ASCII keys put 8 characters in a prefix.
        int maxRank = 0;
        for (CharSequence s : values) {
            for (int i = shared; i < Math.min(s.length(), shared + PREFIX_CHARS); i++) {
                maxRank = Math.max(maxRank, rank(s.charAt(i)));
            }
        }
        int bits = Math.max(1, 32 - Integer.numberOfLeadingZeros(maxRank)); // 0: every string is the shared start
        int chars = Math.min(PREFIX_CHARS, Long.SIZE / bits);
        for (int i = 0; i < values.length; i++) {
            CharSequence s = values[i];
            long prefix = 0;
            for (int c = 0; c < chars; c++) {
                int at = shared + c;
                prefix = (prefix << bits) | (at < s.length() ? rank(s.charAt(at)) : 0);
            }
            out[i] = prefix << (Long.SIZE - bits * chars);
        }
        return out;
    }

    /** How many characters every string starts with. */
    private static int sharedStart(CharSequence[] values) {
        CharSequence base = values[0];
        int shared = base.length();
        for (int i = 1; i < values.length && shared > 0; i++) {
            CharSequence s = values[i];
            int n = Math.min(shared, s.length());
            int k = 0;
            while (k < n && s.charAt(k) == base.charAt(k)) {
                k++;
            }
            shared = k;
        }
        return shared;
    }

    /**
     * A character's place in Iceberg's string order, from 1: Iceberg puts a high surrogate (the first
     * half of a character past U+FFFF) after every other character, and orders the rest by value.
     */
    static int rank(char c) {
        return (Character.isHighSurrogate(c) ? 0x10000 + c : c) + 1;
    }
}
