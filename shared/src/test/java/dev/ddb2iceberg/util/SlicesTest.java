package dev.ddb2iceberg.util;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class SlicesTest {
    private final ExecutorService pool = Executors.newFixedThreadPool(4);

    @AfterEach
    void stop() {
        pool.shutdownNow();
    }

    private static List<Integer> numbers(int n) {
        return IntStream.range(0, n).boxed().toList();
    }

    @Test
    void aLargeListIsMappedInItsOwnOrder() {
        List<Integer> items = numbers(100_000);
        List<Integer> doubled = Slices.map(items, pool, i -> 2 * i, "doubling");
        assertEquals(items.size(), doubled.size());
        for (int i = 0; i < items.size(); i++) {
            assertEquals(2 * i, doubled.get(i), "item " + i);
        }
    }

    @Test
    void positionsAreZeroToNMinusOneAndMapInOrderOverLargeLists() {
        assertEquals(List.of(0, 1, 2, 3, 4), Slices.positions(5), "positions(5)");
        assertEquals(List.of(), Slices.positions(0), "positions(0)");
        assertThrows(IndexOutOfBoundsException.class, () -> Slices.positions(3).get(3), "position 3 of 3");
        List<Integer> mapped = Slices.map(Slices.positions(100_000), pool, i -> 3 * i + 1, "mapping positions");
        for (int i = 0; i < 100_000; i++) {
            assertEquals(3 * i + 1, mapped.get(i), "position " + i);
        }
    }

    @Test
    void eachSliceGetsStateOfItsOwnThatNoOtherSliceSees() {
        // Each slice's state is a list only its thread appends to: an item found in two states, or a
        // state touched by two threads at once, would show as a count or an order that differs.
        Set<List<Integer>> states = Collections.synchronizedSet(Collections.newSetFromMap(new IdentityHashMap<>()));
        List<Integer> items = numbers(50_000);
        Slices.map(
                items,
                pool,
                () -> {
                    List<Integer> seen = new ArrayList<>();
                    states.add(seen);
                    return seen;
                },
                (item, seen) -> {
                    seen.add(item);
                    return item;
                },
                "recording");
        assertTrue(states.size() >= 1 && states.size() <= Slices.cores(), "states: " + states.size());
        List<Integer> all = new ArrayList<>();
        for (List<Integer> seen : states) {
            for (int k = 1; k < seen.size(); k++) {
                assertEquals(seen.get(k - 1) + 1, seen.get(k), "a slice is a run of consecutive items");
            }
            all.addAll(seen);
        }
        Collections.sort(all);
        assertEquals(items, all, "every item in exactly one slice");
    }

    @Test
    void aSmallListStaysOnTheCallingThread() {
        Thread caller = Thread.currentThread();
        List<Boolean> onCaller = Slices.map(numbers(100), pool, i -> Thread.currentThread() == caller, "checking");
        assertTrue(
                onCaller.stream().allMatch(b -> b),
                "a list under " + Slices.MIN_PARALLEL + " items is not handed over");
    }

    @Test
    void perSliceCoversEveryItemOnceInOrder() {
        List<Integer> items = numbers(40_000);
        List<List<Integer>> slices = Slices.perSlice(items, pool, List::copyOf, "copying");
        List<Integer> joined = new ArrayList<>();
        slices.forEach(joined::addAll);
        assertEquals(items, joined);
    }

    @Test
    void aFailingItemFailsTheWholeMapWithItsOwnException() {
        IllegalStateException e = assertThrows(
                IllegalStateException.class,
                () -> Slices.map(
                        numbers(20_000),
                        pool,
                        i -> {
                            if (i == 12_345) {
                                throw new IllegalStateException("item 12345 is bad");
                            }
                            return i;
                        },
                        "checking"));
        assertEquals("item 12345 is bad", e.getMessage());
    }
}
