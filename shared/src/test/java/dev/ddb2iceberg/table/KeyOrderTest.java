package dev.ddb2iceberg.table;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.function.Function;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;

/**
 * {@link KeyOrder#sort} (prefixes first, whole keys between equal prefixes) must put rows in exactly
 * the order Iceberg's comparators give, which is what a plain sort with the comparator gives: the
 * order readers and later merges rely on for each file's key bounds.
 */
class KeyOrderTest {
    private static final Random RANDOM = new Random(20261205);

    /** A schema of the two key columns of these types, then a payload column. */
    private static Schema schema(Type first, Type second) {
        return new Schema(
                Types.NestedField.required(1, "pk", first),
                Types.NestedField.required(2, "sk", second),
                Types.NestedField.optional(3, "note", Types.StringType.get()));
    }

    private static List<Record> rows(Schema schema, int n, Function<Integer, Object> pk, Function<Integer, Object> sk) {
        List<Record> rows = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Record r = GenericRecord.create(schema);
            r.set(0, pk.apply(i));
            r.set(1, sk.apply(i));
            r.set(2, "row " + i);
            rows.add(r);
        }
        Collections.shuffle(rows, RANDOM);
        return rows;
    }

    /** Sorts a copy both ways and asserts the same keys in the same order, naming the first difference. */
    private static void assertSortsAsTheComparator(Schema schema, List<Record> rows) {
        KeyOrder order = KeyOrder.of(schema, List.of("pk", "sk"));
        List<Record> expected = new ArrayList<>(rows);
        expected.sort(order);
        List<Record> actual = new ArrayList<>(rows);
        order.sort(actual);
        assertEquals(expected.size(), actual.size());
        for (int i = 0; i < expected.size(); i++) {
            assertEquals(
                    0,
                    order.compare(expected.get(i), actual.get(i)),
                    "row " + i + ": the comparator puts " + keyOf(expected.get(i)) + " there, the sort "
                            + keyOf(actual.get(i)));
        }
    }

    private static String keyOf(Record r) {
        return "(" + r.get(0) + ", " + r.get(1) + ")";
    }

    private static String randomString(String alphabet, int maxLength) {
        int length = RANDOM.nextInt(maxLength + 1);
        StringBuilder s = new StringBuilder();
        while (s.length() < length) {
            s.appendCodePoint(alphabet.codePointAt(
                    alphabet.offsetByCodePoints(0, RANDOM.nextInt(alphabet.codePointCount(0, alphabet.length())))));
        }
        return s.toString();
    }

    @Test
    void stringKeysWithASharedStartSortAsTheComparatorSortsThem() {
        Schema schema = schema(Types.StringType.get(), Types.LongType.get());
        // As the merge benchmark's items: ten items a partition key, all keys starting "cust-000".
        List<Record> rows = rows(
                schema, 20_000, i -> String.format("cust-%09d", RANDOM.nextInt(3_000)), i -> (long) RANDOM.nextInt());
        assertSortsAsTheComparator(schema, rows);
    }

    @Test
    void stringsOfEveryKindOfCharacterSortAsTheComparatorSortsThem() {
        Schema schema = schema(Types.StringType.get(), Types.LongType.get());
        // Short strings over an alphabet with ASCII, a character past U+E000 and two past U+FFFF
        // (surrogate pairs, which Iceberg orders after every other character), and the empty string.
        String alphabet = "ab\u00e9\u4e2d\uff21\ud83d\ude00\ud800\udc00";
        List<Record> rows = rows(schema, 10_000, i -> randomString(alphabet, 6), i -> (long) i);
        assertSortsAsTheComparator(schema, rows);
    }

    @Test
    void stringsThatAreAllTheSameAreOrderedByTheSecondKeyColumn() {
        Schema schema = schema(Types.StringType.get(), Types.LongType.get());
        List<Record> rows = rows(schema, 1_000, i -> "same", i -> (long) RANDOM.nextInt(100) - 50);
        assertSortsAsTheComparator(schema, rows);
    }

    @Test
    void numberKeysSortAsTheComparatorSortsThemNegativesFirst() {
        Schema schema = schema(Types.LongType.get(), Types.StringType.get());
        List<Record> rows = rows(
                schema,
                10_000,
                i -> switch (i % 5) {
                    case 0 -> Long.MIN_VALUE + RANDOM.nextInt(3);
                    case 1 -> Long.MAX_VALUE - RANDOM.nextInt(3);
                    default -> (long) RANDOM.nextInt(2_000) - 1_000;
                },
                i -> Integer.toString(RANDOM.nextInt(50)));
        assertSortsAsTheComparator(schema, rows);
        long[] prefixes = KeyOrder.of(schema, List.of("pk", "sk")).prefixes(rows);
        assertNotNull(prefixes, "a long key column gives prefixes");
    }

    @Test
    void decimalAndBinaryKeysFallBackToTheWholeComparison() {
        Schema decimals = schema(Types.DecimalType.of(38, 2), Types.LongType.get());
        List<Record> rows =
                rows(decimals, 2_000, i -> BigDecimal.valueOf(RANDOM.nextInt(1_000) - 500, 2), i -> (long) i);
        assertNull(KeyOrder.of(decimals, List.of("pk", "sk")).prefixes(rows), "no prefix for a decimal column");
        assertSortsAsTheComparator(decimals, rows);

        Schema bytes = schema(Types.BinaryType.get(), Types.LongType.get());
        List<Record> binary = rows(
                bytes,
                2_000,
                i -> {
                    byte[] b = new byte[RANDOM.nextInt(4)];
                    RANDOM.nextBytes(b);
                    return ByteBuffer.wrap(b);
                },
                i -> (long) i);
        assertSortsAsTheComparator(bytes, binary);
    }

    @Test
    void aRowBeforeAnotherNeverHasAGreaterPrefix() {
        Schema schema = schema(Types.StringType.get(), Types.LongType.get());
        String alphabet = "09az\u00ff\u0800\uffff\ud83d\ude00";
        List<Record> rows = rows(schema, 5_000, i -> "k-" + randomString(alphabet, 12), i -> (long) i);
        KeyOrder order = KeyOrder.of(schema, List.of("pk", "sk"));
        long[] prefixes = order.prefixes(rows);
        for (int i = 0; i < rows.size(); i++) {
            for (int j = i + 1; j < Math.min(rows.size(), i + 50); j++) {
                int byKey = order.compare(rows.get(i), rows.get(j));
                int byPrefix = Long.compareUnsigned(prefixes[i], prefixes[j]);
                assertTrue(
                        byKey == 0 || byPrefix == 0 || Integer.signum(byKey) == Integer.signum(byPrefix),
                        "keys " + keyOf(rows.get(i)) + " and " + keyOf(rows.get(j)) + " compare " + byKey
                                + " but their prefixes " + byPrefix);
            }
        }
    }
}
