package dev.ddb2iceberg.table;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.math.BigDecimal;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** An item key is interchangeable with any list of the same values: in maps, both ways round. */
class ItemKeyTest {
    @Test
    void anItemKeyEqualsAndHashesAsAListOfTheSameValues() {
        ItemKey key = new ItemKey(new Object[] {"customer#17", 42L});
        List<Object> list = List.of("customer#17", 42L);
        assertEquals(list, key, "the item key equals the list");
        assertEquals(key, list, "the list equals the item key");
        assertEquals(list.hashCode(), key.hashCode(), "both hash alike");
        assertEquals(key, new ItemKey(new Object[] {"customer#17", 42L}), "two item keys of the same values");

        Map<List<Object>, String> byKey = new HashMap<>();
        byKey.put(list, "found by a list");
        assertEquals("found by a list", byKey.get(key), "a map keyed by lists answers an item key");
        byKey.put(key, "replaced by an item key");
        assertEquals(1, byKey.size(), "the item key replaced the list's entry");
        assertEquals("replaced by an item key", byKey.get(List.of("customer#17", 42L)));
    }

    @Test
    void keysOfOtherValuesDiffer() {
        ItemKey key = new ItemKey(new Object[] {"a", 1L});
        assertNotEquals(new ItemKey(new Object[] {"a", 2L}), key, "another sort key");
        assertNotEquals(new ItemKey(new Object[] {"a"}), key, "fewer values");
        assertNotEquals(List.of("a", 1), key, "an int is not the long the key holds");
        assertNotEquals(
                new ItemKey(new Object[] {new BigDecimal("1.0")}),
                new ItemKey(new Object[] {new BigDecimal("1.00")}),
                "decimals of another scale, as List.equals has it");
    }

    @Test
    void anItemKeyCannotBeChanged() {
        ItemKey key = new ItemKey(new Object[] {"a", 1L});
        assertThrows(UnsupportedOperationException.class, () -> key.set(0, "b"));
        assertThrows(UnsupportedOperationException.class, () -> key.add("c"));
        assertEquals(List.of("a", 1L), key, "still its values");
    }
}
