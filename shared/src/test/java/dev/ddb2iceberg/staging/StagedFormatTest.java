package dev.ddb2iceberg.staging;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.ItemMap;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.testkit.RandomChanges;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class StagedFormatTest {

    @Test
    void randomChangesOfEveryTypeRoundTripExactly() {
        for (long seed = 1; seed <= 50; seed++) {
            List<Change> in = RandomChanges.generate(seed, 1 + (int) (seed * 7 % 200));
            List<Change> out = StagedFormat.read(StagedFormat.write(in), "seed-" + seed);
            assertEquals(in.size(), out.size(), "change count, seed " + seed);
            for (int i = 0; i < in.size(); i++) {
                assertEquals(in.get(i), out.get(i), "change " + i + " of seed " + seed);
            }
        }
    }

    @Test
    void eachRecurringAttributeNameIsReadAsOneStringPerObject() {
        List<Change> in = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            Map<String, DdbValue> keys = Map.of("pk", new DdbValue.S("item-" + i));
            Map<String, DdbValue> image = new LinkedHashMap<>(keys);
            image.put("status", new DdbValue.S("open"));
            image.put("address", new DdbValue.M(Map.of("city", new DdbValue.S("Lyon"))));
            in.add(new Change(keys, Operation.MODIFY, image, String.valueOf(i + 1), 5L, false));
        }
        List<Change> out = StagedFormat.read(StagedFormat.write(in), "names");
        assertEquals(in, out);
        String status = nameOf(out.get(0).newImage(), "status");
        String city = nameOf(((DdbValue.M) out.get(0).newImage().get("address")).fields(), "city");
        ItemMap address = (ItemMap) ((DdbValue.M) out.get(0).newImage().get("address")).fields();
        for (Change c : out) {
            assertTrue(
                    address.sharesNamesWith((ItemMap) ((DdbValue.M) c.newImage().get("address")).fields()),
                    "the address of " + c.keys() + " holds its own list of names");
            assertSame(status, nameOf(c.newImage(), "status"), "the name 'status' of " + c.keys());
            assertSame(city, nameOf(((DdbValue.M) c.newImage().get("address")).fields(), "city"));
        }
    }

    /**
     * A merge holds every change it reads until it commits: a change's keys hold its image's key
     * values (not copies), items of one shape hold one list of names, and booleans are shared.
     */
    @Test
    void keysHoldTheirImagesValuesAndItemsOfOneShapeShareTheirNames() {
        List<Change> in = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            Map<String, DdbValue> keys = new LinkedHashMap<>();
            keys.put("pk", new DdbValue.S("cust-" + i / 4));
            keys.put("sk", new DdbValue.N(Integer.toString(i)));
            String seq = String.valueOf(i + 1);
            if (i % 5 == 4) {
                in.add(new Change(keys, Operation.REMOVE, null, seq, 5L, false));
                continue;
            }
            Map<String, DdbValue> image = new LinkedHashMap<>(keys);
            image.put("gift", DdbValue.Bool.of(i % 2 == 0));
            if (i == 7) {
                image.put("note", new DdbValue.S("another shape"));
            }
            if (i == 11) { // not a stream's change (an image holds its keys), but the format allows it
                image.put("sk", new DdbValue.N("-1"));
            }
            in.add(new Change(keys, Operation.MODIFY, image, seq, 5L, false));
        }
        List<Change> out = StagedFormat.read(StagedFormat.write(in), "shapes");
        assertEquals(in, out);
        ItemMap firstKeys = (ItemMap) out.get(0).keys();
        ItemMap firstImage = (ItemMap) out.get(0).newImage();
        for (int i = 0; i < out.size(); i++) {
            Change c = out.get(i);
            assertTrue(firstKeys.sharesNamesWith((ItemMap) c.keys()), "change " + i + "'s keys hold their own names");
            if (c.newImage() == null) {
                continue;
            }
            assertSame(c.newImage().get("pk"), c.keys().get("pk"), "change " + i + "'s pk is a copy of its image's");
            if (i == 11) {
                assertEquals(new DdbValue.N("11"), c.keys().get("sk"), "change 11 keeps its own sort key");
            } else {
                assertSame(
                        c.newImage().get("sk"), c.keys().get("sk"), "change " + i + "'s sk is a copy of its image's");
            }
            assertSame(DdbValue.Bool.of(i % 2 == 0), c.newImage().get("gift"), "change " + i + "'s boolean");
            assertEquals(
                    i != 7,
                    firstImage.sharesNamesWith((ItemMap) c.newImage()),
                    "change " + i + "'s image holds the list of names of the images before it");
        }
    }

    /**
     * A short value that recurs (a status, a small count) is read as one object from its third
     * time on (the first two are its own: a value takes a cache slot once it recurs), however many
     * unique values (ids, read twice: keys and image) pass between; and it keeps its type: S "4"
     * is not N 4.
     */
    @Test
    void aShortValueThatRecursIsOneObjectOfItsOwnType() {
        List<Change> in = new ArrayList<>();
        for (int i = 0; i < 2_000; i++) {
            Map<String, DdbValue> keys = Map.of("pk", new DdbValue.S("item-" + i));
            Map<String, DdbValue> image = new LinkedHashMap<>(keys);
            image.put("status", new DdbValue.S(i % 2 == 0 ? "open" : "closed"));
            image.put("text", new DdbValue.S(Integer.toString(i % 7)));
            image.put("count", new DdbValue.N(Integer.toString(i % 7)));
            image.put("id", new DdbValue.N(Integer.toString(i)));
            in.add(new Change(keys, Operation.MODIFY, image, String.valueOf(i + 1), 5L, false));
        }
        List<Change> out = StagedFormat.read(StagedFormat.write(in), "values");
        assertEquals(in, out, "the changes read back");
        for (String attribute : List.of("status", "text", "count")) {
            Set<DdbValue> objects = Collections.newSetFromMap(new IdentityHashMap<>());
            Set<DdbValue> values = new HashSet<>();
            out.forEach(c -> {
                objects.add(c.newImage().get(attribute));
                values.add(c.newImage().get(attribute));
            });
            assertTrue(
                    objects.size() <= 2 * values.size() + 4,
                    attribute + ": " + objects.size() + " objects for " + values.size() + " values in 2,000 changes");
        }
    }

    @Test
    void manyDistinctAttributeNamesInOneObjectRoundTrip() {
        // More names than the reader's cache has slots: slots are reused, names stay exact.
        Map<String, DdbValue> keys = Map.of("pk", new DdbValue.S("a"));
        List<Change> in = new ArrayList<>();
        for (int c = 0; c < 3; c++) {
            Map<String, DdbValue> image = new LinkedHashMap<>(keys);
            for (int i = 0; i < 2_000; i++) {
                image.put("attr_" + ((i * 7 + c) % 2_000) + "_é", new DdbValue.N(String.valueOf(i)));
            }
            in.add(new Change(keys, Operation.INSERT, image, String.valueOf(c + 1), 5L, false));
        }
        assertEquals(in, StagedFormat.read(StagedFormat.write(in), "many names"));
    }

    /** The map's own key instance equal to {@code name}. */
    private static String nameOf(Map<String, DdbValue> map, String name) {
        return map.keySet().stream().filter(name::equals).findFirst().orElseThrow();
    }

    @Test
    void keepsNumbersAsTheirExactDecimalText() {
        Map<String, DdbValue> keys = Map.of("id", new DdbValue.N("12345678901234567890123456789012345678"));
        Map<String, DdbValue> image = new LinkedHashMap<>(keys);
        image.put("tiny", new DdbValue.N("-1.000000000000000000000000000000000000E-130"));
        image.put("trailing", new DdbValue.N("1.50"));
        image.put("bin", new DdbValue.B(new byte[] {0, -1, 127, -128}));
        Change c = new Change(keys, Operation.INSERT, image, "1", 5L, false);
        Change back = StagedFormat.read(StagedFormat.write(List.of(c)), "exact").get(0);
        assertEquals(
                "12345678901234567890123456789012345678",
                ((DdbValue.N) back.keys().get("id")).text());
        assertEquals(
                "-1.000000000000000000000000000000000000E-130",
                ((DdbValue.N) back.newImage().get("tiny")).text());
        assertEquals("1.50", ((DdbValue.N) back.newImage().get("trailing")).text());
        assertTrue(Arrays.equals(
                new byte[] {0, -1, 127, -128}, ((DdbValue.B) back.newImage().get("bin")).bytes()));
    }

    @Test
    void truncatedObjectIsRejectedWithItsName() {
        byte[] full = StagedFormat.write(RandomChanges.generate(7, 100));
        for (int cut : new int[] {full.length - 1, full.length - 8, full.length / 2, 12}) {
            byte[] truncated = Arrays.copyOf(full, cut);
            CorruptStagedObjectException e = assertThrows(
                    CorruptStagedObjectException.class,
                    () -> StagedFormat.read(truncated, "staging/x.ddbstage"),
                    "cut at " + cut);
            assertTrue(e.getMessage().startsWith("'staging/x.ddbstage'"), e.getMessage());
        }
    }

    @Test
    void damagedBodyIsRejected() {
        byte[] object = StagedFormat.write(RandomChanges.generate(8, 100));
        object[object.length / 2] ^= 0x55;
        assertThrows(CorruptStagedObjectException.class, () -> StagedFormat.read(object, "damaged"));
    }

    @Test
    void unknownFormatVersionIsRefusedByName() {
        byte[] object = StagedFormat.write(RandomChanges.generate(9, 3));
        object[StagedFormat.MAGIC.length] = 2;
        CorruptStagedObjectException e =
                assertThrows(CorruptStagedObjectException.class, () -> StagedFormat.read(object, "future"));
        assertTrue(e.getMessage().contains("format version 2"), e.getMessage());
    }

    @Test
    void foreignObjectIsRecognisedAsNotStaged() {
        CorruptStagedObjectException e = assertThrows(
                CorruptStagedObjectException.class, () -> StagedFormat.read("{\"hello\": 1}".getBytes(), "notes.json"));
        assertTrue(e.getMessage().contains("not a staged object"), e.getMessage());
    }

    @Test
    void objectNamesSortOldestFirstAndParseBack() {
        StagedObjectName a = StagedObjectName.of("staging/", "9", "99");
        StagedObjectName b = StagedObjectName.of("staging/", "10", "11");
        assertTrue(a.key().compareTo(b.key()) < 0, a.key() + " before " + b.key());
        assertEquals(a, StagedObjectName.parse("staging/", a.key()));
        assertEquals(null, StagedObjectName.parse("staging/", "staging/readme.txt"));
    }
}
