package dev.ddb2iceberg.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

class ItemMapTest {

    /** Maps of 0 to 40 attributes (both sides of the scan limit), against a LinkedHashMap of the same. */
    @Test
    void behavesAsALinkedHashMapOfTheSameAttributes() {
        Random random = new Random(7);
        for (int size = 0; size <= 40; size++) {
            LinkedHashMap<String, DdbValue> expected = new LinkedHashMap<>();
            ItemMap.Builder builder = new ItemMap.Builder(random.nextInt(4)); // grows past its guess
            for (int i = 0; i < size; i++) {
                String name = "a" + random.nextInt(1_000_000) + "_" + i;
                DdbValue value = new DdbValue.N(Integer.toString(random.nextInt()));
                expected.put(name, value);
                builder.put(name, value);
            }
            ItemMap item = builder.build();
            assertEquals(expected, item, "size " + size);
            assertEquals(item, expected, "size " + size);
            assertEquals(expected.hashCode(), item.hashCode(), "size " + size);
            assertEquals(new ArrayList<>(expected.keySet()), new ArrayList<>(item.keySet()), "order, size " + size);
            for (Map.Entry<String, DdbValue> e : expected.entrySet()) {
                // a new String: a look-up by equal text, not only by the same object
                String name = new String(e.getKey().toCharArray());
                assertEquals(e.getValue(), item.get(name), "size " + size + ", " + name);
                assertTrue(item.containsKey(name), "size " + size + ", " + name);
            }
            assertNull(item.get("absent"), "size " + size);
            assertFalse(item.containsKey("absent"), "size " + size);
            List<String> visited = new ArrayList<>();
            item.forEach((k, v) -> visited.add(k));
            assertEquals(new ArrayList<>(expected.keySet()), visited, "forEach's order, size " + size);
        }
    }

    @Test
    void cannotBeChanged() {
        ItemMap item = new ItemMap.Builder(1).put("a", new DdbValue.S("x")).build();
        assertThrows(UnsupportedOperationException.class, () -> item.put("b", new DdbValue.S("y")));
        assertThrows(UnsupportedOperationException.class, () -> item.remove("a"));
        assertThrows(UnsupportedOperationException.class, () -> item.keySet().clear());
        assertThrows(
                UnsupportedOperationException.class,
                () -> item.entrySet().iterator().next().setValue(null));
        assertEquals(Map.of("a", new DdbValue.S("x")), item);
    }

    @Test
    void aNameGivenTwiceIsRefusedAndNamed() {
        for (int size : new int[] {2, ItemMap.SCAN_LIMIT + 5}) {
            ItemMap.Builder b = new ItemMap.Builder(size);
            for (int i = 0; i < size - 1; i++) {
                b.put("n" + i, DdbValue.Null.INSTANCE);
            }
            b.put("n0", new DdbValue.Bool(true));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, b::build, "size " + size);
            assertEquals("attribute 'n0' is given twice", e.getMessage());
        }
    }

    @Test
    void aChangeAndAMapValueKeepAnItemMapAsItIsAndCopyAnyOtherMapOnce() {
        ItemMap keys = new ItemMap.Builder(1).put("pk", new DdbValue.S("k")).build();
        ItemMap image = new ItemMap.Builder(2)
                .put("pk", new DdbValue.S("k"))
                .put("n", new DdbValue.N("1"))
                .build();
        Change c = new Change(keys, Operation.INSERT, image, "1", 0L, false);
        assertSame(keys, c.keys());
        assertSame(image, c.newImage());
        assertSame(image, new DdbValue.M(image).fields());

        LinkedHashMap<String, DdbValue> mutable = new LinkedHashMap<>(image);
        Change copied = new Change(keys, Operation.INSERT, mutable, "1", 0L, false);
        mutable.put("later", new DdbValue.S("not seen by the change"));
        assertEquals(image, copied.newImage(), "the change holds a copy, not the caller's map");
        assertSame(copied.newImage(), ItemMap.copyOf(copied.newImage()));
    }
}
