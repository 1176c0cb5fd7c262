package dev.ddb2iceberg.table;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.config.ConfigurationException;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbJson;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.testkit.RandomValues;
import java.math.BigDecimal;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.UpdateSchema;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.inmemory.InMemoryCatalog;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The type mapping on its own: generated items of every type and nesting depth turned into rows
 * and back, and each conflict, hint and conversion. Schema changes are applied by Iceberg itself
 * (an in-memory catalog); writing the rows to Parquet on S3 is the merge tests' part.
 */
class TypeMappingTest {
    private InMemoryCatalog catalog;
    private Table table;

    private TableIdentifier id = TableIdentifier.of("db", "t");

    @BeforeEach
    void setUp() {
        catalog = new InMemoryCatalog();
        catalog.initialize("test", Map.of());
        catalog.createNamespace(Namespace.of("db"));
        newTable("t");
    }

    private void newTable(String name) {
        id = TableIdentifier.of("db", name);
        Schema base = new Schema(
                List.of(
                        Types.NestedField.required(1, "pk", Types.StringType.get()),
                        Types.NestedField.required(2, TableLayout.SEQ, Types.StringType.get()),
                        Types.NestedField.optional(3, TableLayout.TIME, Types.TimestampType.withZone()),
                        Types.NestedField.optional(
                                4,
                                TableLayout.OVERFLOW,
                                Types.MapType.ofRequired(5, 6, Types.StringType.get(), Types.StringType.get()))),
                Set.of(1));
        table = catalog.buildTable(id, base)
                .withProperty(PipelineProperties.KEYS, "pk:S")
                .create();
    }

    /** Applies the columns and promotions these items call for, as the merger does before writing them. */
    private TableLayout evolve(List<Map<String, DdbValue>> items, Map<String, TypeMapping.Column> hints) {
        int[] ids = {table.schema().highestFieldId()};
        TableLayout.SchemaChanges changes = TableLayout.of(table).schemaChanges(items, hints, () -> ++ids[0]);
        if (!changes.isEmpty()) {
            UpdateSchema update = table.updateSchema();
            changes.applyTo(update);
            update.commit();
        }
        table = catalog.loadTable(id);
        return TableLayout.of(table);
    }

    private static Map<String, DdbValue> item(int i, Map<String, DdbValue> attributes) {
        Map<String, DdbValue> item = new LinkedHashMap<>();
        item.put("pk", new DdbValue.S("k" + i));
        item.putAll(attributes);
        return item;
    }

    private static Change change(Map<String, DdbValue> item) {
        return new Change(Map.of("pk", item.get("pk")), Operation.INSERT, item, "100", 0L, false);
    }

    private static void assertRoundTrip(TableLayout layout, Map<String, DdbValue> item) {
        Map<String, DdbValue> back = layout.toItem(layout.toRow(change(item)));
        assertEquals(
                item,
                back,
                () -> "item changed on its way through a row:\n  " + DdbJson.writeItem(item) + "\n  "
                        + DdbJson.writeItem(back));
    }

    /** DynamoDB Streams gives change times in whole seconds: rows of one second hold one timestamp object. */
    @Test
    void rowsOfTheSameChangeTimeShareItsTimestampAndEachRowHoldsItsOwnTime() {
        TableLayout layout = evolve(List.of(item(1, Map.of())), Map.of());
        long[] millis = {1_764_460_800_000L, 1_764_460_800_000L, 1_764_460_801_000L, 1_764_460_800_000L, 0L};
        List<Record> rows = new ArrayList<>();
        for (int i = 0; i < millis.length; i++) {
            Map<String, DdbValue> item = item(i, Map.of());
            rows.add(layout.toRow(
                    new Change(Map.of("pk", item.get("pk")), Operation.INSERT, item, "100", millis[i], false)));
        }
        for (int i = 0; i < millis.length; i++) {
            assertEquals(
                    OffsetDateTime.ofInstant(Instant.ofEpochMilli(millis[i]), ZoneOffset.UTC),
                    rows.get(i).getField(TableLayout.TIME),
                    "row " + i + "'s change time");
        }
        assertSame(
                rows.get(0).getField(TableLayout.TIME),
                rows.get(1).getField(TableLayout.TIME),
                "two rows of one change time hold one timestamp");
    }

    @Test
    void generatedItemsOfEveryTypeAndDepthComeBackExactlyOverManySchemaChanges() {
        for (int seed = 1; seed <= 25; seed++) {
            newTable("seed" + seed);
            roundTripsFromSeed(seed);
        }
    }

    private void roundTripsFromSeed(long seed) {
        Random random = new Random(seed);
        RandomValues values = new RandomValues(random);
        for (int run = 0; run < 40; run++) {
            List<Map<String, DdbValue>> items = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                Map<String, DdbValue> attributes = new LinkedHashMap<>();
                for (int a = random.nextInt(6); a > 0; a--) {
                    attributes.put("a" + random.nextInt(12), values.any(1 + random.nextInt(4)));
                }
                items.add(item(i, attributes));
            }
            TableLayout layout = evolve(items, Map.of());
            for (Map<String, DdbValue> item : items) {
                assertRoundTrip(layout, item);
            }
        }
        assertTrue(table.schema().columns().size() > 10, "seed " + seed + ": columns were added: " + table.schema());
    }

    @Test
    void typedColumnsHoldTheValuesEnginesQuery() {
        Map<String, DdbValue> address = new LinkedHashMap<>();
        address.put("city", new DdbValue.S("Lyon"));
        address.put("zip", new DdbValue.N("69001"));
        Map<String, DdbValue> item = item(
                1,
                Map.of(
                        "price", new DdbValue.N("12.5"),
                        "qty", new DdbValue.N("3"),
                        "tags", new DdbValue.SS(List.of("a", "b")),
                        "sizes", new DdbValue.NS(List.of("1.5", "2")),
                        "address", new DdbValue.M(address),
                        "scores", new DdbValue.L(List.of(new DdbValue.N("1"), new DdbValue.N("2"))),
                        "mixed",
                                new DdbValue.L(
                                        List.of(new DdbValue.S("x"), new DdbValue.N("2"), DdbValue.Null.INSTANCE))));
        TableLayout layout = evolve(List.of(item), Map.of());
        Schema s = layout.schema();
        assertEquals(Types.DecimalType.of(38, 9), s.findField("price").type());
        assertEquals(Types.LongType.get(), s.findField("qty").type());
        assertEquals("list<string>", s.findField("tags").type().toString());
        assertEquals("list<decimal(38, 9)>", s.findField("sizes").type().toString());
        assertEquals("string", s.findField("address.city").type().toString());
        assertEquals("long", s.findField("address.zip").type().toString());
        assertEquals("list<long>", s.findField("scores").type().toString());
        assertEquals("string", s.findField("mixed").type().toString(), "a list of mixed types is JSON text");
        assertEquals("ddb:SS", s.findField("tags").doc());

        Record row = layout.toRow(change(item));
        assertEquals(new BigDecimal("12.500000000"), row.getField("price"));
        assertEquals("Lyon", ((Record) row.getField("address")).getField("city"));
        assertEquals("[\"x\",2,null]", row.getField("mixed"));
        assertNull(row.getField(TableLayout.OVERFLOW), "every value fits its column exactly");
        assertRoundTrip(layout, item);
    }

    @Test
    void aValueThatDoesNotFitItsColumnIsKeptInTheOverflowMapAndTheColumnStaysClean() {
        TableLayout layout = evolve(
                List.of(item(
                        1,
                        Map.of(
                                "n",
                                new DdbValue.N("7"),
                                "s",
                                new DdbValue.S("x"),
                                "m",
                                new DdbValue.M(Map.of("a", new DdbValue.N("1")))))),
                Map.of());
        Map<String, DdbValue> odd = item(
                2,
                Map.of(
                        "n", new DdbValue.N("7.25"), // a fraction in a long column
                        "s", new DdbValue.N("5"), // an N where the column holds S
                        "m", new DdbValue.M(Map.of("a", new DdbValue.S("one"))))); // a nested type conflict
        Record row = layout.toRow(change(odd));
        assertNull(row.getField("n"));
        assertNull(row.getField("s"));
        assertNull(((Record) row.getField("m")).getField("a"));
        @SuppressWarnings("unchecked")
        Map<String, String> overflow = (Map<String, String>) row.getField(TableLayout.OVERFLOW);
        assertEquals("{\"N\":\"7.25\"}", overflow.get("n"));
        assertEquals("{\"N\":\"5\"}", overflow.get("s"));
        assertEquals("{\"M\":{\"a\":{\"S\":\"one\"}}}", overflow.get("m"));
        assertRoundTrip(layout, odd);
    }

    @Test
    void nullIsANullInTheColumnOfTheAttributesOtherTypeAndStaysDistinctFromAbsent() {
        TableLayout layout = evolve(List.of(item(1, Map.of("n", new DdbValue.N("1")))), Map.of());
        Map<String, DdbValue> withNull = item(2, Map.of("n", DdbValue.Null.INSTANCE));
        Record row = layout.toRow(change(withNull));
        assertNull(row.getField("n"));
        assertRoundTrip(layout, withNull);
        assertRoundTrip(layout, item(3, Map.of()));
        Map<String, DdbValue> nestedNull =
                item(4, Map.of("m", new DdbValue.M(Map.of("x", DdbValue.Null.INSTANCE, "y", new DdbValue.S("kept")))));
        layout = evolve(List.of(nestedNull), Map.of());
        assertNull(layout.schema().findField("m.x"), "a key only ever NULL gets no field yet");
        assertEquals("kept", ((Record) layout.toRow(change(nestedNull)).getField("m")).getField("y"));
        assertRoundTrip(layout, nestedNull);
    }

    @Test
    void numbersAreNeverRounded() {
        List<String> numbers = List.of(
                "12345678901234567890.123456789012345678",
                "-0.000000000000000000000000000000000001",
                "99999999999999999999999999999999999999",
                "1E+125",
                "-9.9E-130",
                "9223372036854775808",
                "0.1");
        for (String n : numbers) {
            TableLayout layout =
                    evolve(List.of(item(1, Map.of("x" + Math.abs(n.hashCode()), new DdbValue.N(n)))), Map.of());
            assertRoundTrip(layout, item(1, Map.of("x" + Math.abs(n.hashCode()), new DdbValue.N(n))));
        }
        TableLayout layout = evolve(List.of(), Map.of());
        for (String n : numbers) { // and each in a long column, where none fits
            evolve(List.of(item(0, Map.of("whole", new DdbValue.N("1")))), Map.of());
            layout = TableLayout.of(catalog.loadTable(id));
            assertRoundTrip(layout, item(1, Map.of("whole", new DdbValue.N(n))));
        }
    }

    @Test
    void hintsChooseTheColumnTypeAndConversionsKeepTheOriginalWhenItDoesNotReadBackTheSame() {
        Map<String, TypeMapping.Column> hints = TypeHints.parse(
                "price=decimal(12,2), score=double, created=timestamp(epoch_millis), seen=timestamp(epoch_seconds),"
                        + " at=timestamp(iso8601), doc=json",
                "COLUMN_TYPES");
        Map<String, DdbValue> item = item(
                1,
                Map.of(
                        "price", new DdbValue.N("19.99"),
                        "score", new DdbValue.N("0.1"),
                        "created", new DdbValue.N("1700000000123"),
                        "seen", new DdbValue.N("1700000000.5"),
                        "at", new DdbValue.S("2024-02-29T12:00:00Z"),
                        "doc", new DdbValue.M(Map.of("k", new DdbValue.L(List.of(new DdbValue.N("1")))))));
        TableLayout layout = evolve(List.of(item), hints);
        Schema s = layout.schema();
        assertEquals(Types.DecimalType.of(12, 2), s.findField("price").type());
        assertEquals(Types.DoubleType.get(), s.findField("score").type());
        assertEquals(Types.TimestampType.withZone(), s.findField("created").type());
        assertEquals("string", s.findField("doc").type().toString());
        Record row = layout.toRow(change(item));
        assertEquals(OffsetDateTime.parse("2023-11-14T22:13:20.123Z"), row.getField("created"));
        assertEquals(OffsetDateTime.parse("2023-11-14T22:13:20.5Z"), row.getField("seen"));
        assertEquals(OffsetDateTime.parse("2024-02-29T12:00:00Z"), row.getField("at"));
        assertEquals("{\"k\":[1]}", row.getField("doc"));
        assertNull(row.getField(TableLayout.OVERFLOW), "each converts back exactly");
        assertRoundTrip(layout, item);

        Map<String, DdbValue> awkward = item(
                2,
                Map.of(
                        "price", new DdbValue.N("19.999"), // more decimals than decimal(12,2)
                        "at", new DdbValue.S("2024-02-29 12:00"), // not ISO-8601
                        "created", new DdbValue.N("1700000000123.5"))); // not whole milliseconds
        row = layout.toRow(change(awkward));
        assertNull(row.getField("price"));
        assertNull(row.getField("at"));
        assertRoundTrip(layout, awkward);
        Map<String, DdbValue> offset = item(3, Map.of("at", new DdbValue.S("2024-02-29T13:00:00+01:00")));
        row = layout.toRow(change(offset));
        assertEquals(OffsetDateTime.parse("2024-02-29T12:00:00Z"), row.getField("at"), "the instant is typed");
        assertNotNull(row.getField(TableLayout.OVERFLOW), "and the original text kept");
        assertRoundTrip(layout, offset);
    }

    @Test
    void mapKeysThatCannotBeFieldsStayInTheOverflowAndNewKeysBecomeFieldsLater() {
        Map<String, DdbValue> keys = new LinkedHashMap<>(); // in this order: the first of two case twins wins
        keys.put("a", new DdbValue.S("1"));
        keys.put("b.c", new DdbValue.S("dotted"));
        keys.put("A", new DdbValue.S("case twin"));
        Map<String, DdbValue> first = item(1, Map.of("m", new DdbValue.M(keys)));
        TableLayout layout = evolve(List.of(first), Map.of());
        assertNotNull(layout.schema().findField("m.a"));
        assertNull(layout.schema().findField("m.A"));
        assertRoundTrip(layout, first);
        Map<String, DdbValue> later = item(
                2,
                Map.of(
                        "m",
                        new DdbValue.M(Map.of("z", new DdbValue.N("26"))),
                        "list",
                        new DdbValue.L(List.of(new DdbValue.M(Map.of("p", new DdbValue.S("q")))))));
        layout = evolve(List.of(later), Map.of());
        assertEquals("long", layout.schema().findField("m.z").type().toString(), "a new key became a field");
        Map<String, DdbValue> deeper = item(
                3,
                Map.of(
                        "list",
                        new DdbValue.L(List.of(
                                new DdbValue.M(Map.of("p", new DdbValue.S("q"), "r", new DdbValue.Bool(true)))))));
        layout = evolve(List.of(deeper), Map.of());
        assertNotNull(layout.schema().findField("list.element.r"), "a new key in a list of maps became a field");
        assertRoundTrip(layout, later);
        assertRoundTrip(layout, deeper);
        Record row = layout.toRow(change(deeper));
        assertNull(row.getField(TableLayout.OVERFLOW));
    }

    @Test
    void numberColumnsAreWidenedByIcebergsLegalPromotionsWhenTheDataNeedsIt() {
        // int and float columns as another engine might have made them, and a hinted decimal(12,2)
        table.updateSchema()
                .addColumn("qty", Types.IntegerType.get())
                .addColumn("ratio", Types.FloatType.get())
                .addColumn("m", Types.StructType.of(Types.NestedField.optional(900, "n", Types.IntegerType.get())))
                .commit();
        table = catalog.loadTable(id);
        TableLayout layout = evolve(
                List.of(item(1, Map.of("price", new DdbValue.N("1.5")))),
                TypeHints.parse("price=decimal(12,2)", "COLUMN_TYPES"));
        Map<String, DdbValue> big = item(
                2,
                Map.of(
                        "qty", new DdbValue.N("3000000000"), // beyond int
                        "ratio", new DdbValue.N("0.123456789"), // more digits than a float keeps
                        "price", new DdbValue.N("123456789012345.25"), // 17 digits at scale 2
                        "m", new DdbValue.M(Map.of("n", new DdbValue.N("-3000000000")))));
        layout = evolve(List.of(big), Map.of());
        Schema s = layout.schema();
        assertEquals(Types.LongType.get(), s.findField("qty").type());
        assertEquals(Types.DoubleType.get(), s.findField("ratio").type());
        assertEquals(Types.DecimalType.of(17, 2), s.findField("price").type());
        assertEquals(Types.LongType.get(), s.findField("m.n").type());
        Record row = layout.toRow(change(big));
        assertNull(row.getField(TableLayout.OVERFLOW), "every value fits its widened column");
        assertEquals(3_000_000_000L, row.getField("qty"));
        assertRoundTrip(layout, big);
        // a scale cannot grow: more decimals than the column has still go to the overflow map
        Map<String, DdbValue> finer = item(3, Map.of("price", new DdbValue.N("1.125")));
        layout = evolve(List.of(finer), Map.of());
        assertEquals(
                Types.DecimalType.of(17, 2), layout.schema().findField("price").type());
        assertNotNull(layout.toRow(change(finer)).getField(TableLayout.OVERFLOW));
        assertRoundTrip(layout, finer);
    }

    @Test
    void badHintsAreNamed() {
        assertTrue(assertThrows(ConfigurationException.class, () -> TypeHints.parse("price=money", "COLUMN_TYPES"))
                .getMessage()
                .contains("'money' for attribute price"));
        assertTrue(assertThrows(ConfigurationException.class, () -> TypeHints.parse("price", "COLUMN_TYPES"))
                .getMessage()
                .contains("not attribute=type"));
        assertTrue(assertThrows(ConfigurationException.class, () -> TypeHints.parse("p=decimal(40,2)", "COLUMN_TYPES"))
                .getMessage()
                .contains("precision 1 to 38"));
        assertFalse(TypeHints.parse("", "COLUMN_TYPES").containsKey(""));
    }

    /**
     * A canonical long is exactly what Long.toString writes: the hand-written check agrees with
     * that definition on edge cases and on random texts of digits and signs.
     */
    @Test
    void canonicalLongIsExactlyWhatLongToStringWrites() {
        for (String yes : List.of("0", "7", "-7", "10", "9223372036854775807", "-9223372036854775808")) {
            assertTrue(TypeMapping.isCanonicalLong(yes), yes + " is canonical");
        }
        for (String no : List.of(
                "",
                "-",
                "-0",
                "00",
                "01",
                "+1",
                "1.0",
                "1e3",
                " 1",
                "1 ",
                "9223372036854775808",
                "-9223372036854775809",
                "12345678901234567890",
                "٣")) {
            assertFalse(TypeMapping.isCanonicalLong(no), "'" + no + "' is not canonical");
        }
        Random random = new Random(7);
        String alphabet = "-0123456789";
        for (int i = 0; i < 100_000; i++) {
            StringBuilder text = new StringBuilder();
            int length = random.nextInt(21);
            for (int j = 0; j < length; j++) {
                text.append(alphabet.charAt(random.nextInt(alphabet.length())));
            }
            String t = text.toString();
            boolean canonical;
            try {
                canonical = Long.toString(Long.parseLong(t)).equals(t);
            } catch (NumberFormatException e) {
                canonical = false;
            }
            assertEquals(canonical, TypeMapping.isCanonicalLong(t), "'" + t + "'");
        }
    }
}
