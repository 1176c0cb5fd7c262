package dev.ddb2iceberg.index;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;

/**
 * The prefix sort against a plain stable sort by unsigned bytes, on key shapes that stress each of
 * its paths: keys that differ only past their first 8 bytes, keys that start other keys, bytes
 * above 0x7F (unsigned order), many equal keys (which must keep their order), and long runs of
 * keys sharing more than the start every key shares.
 */
class KeySortTest {
    /** The ids sorted by KeySort, against Arrays.sort (stable) with an unsigned compare of the whole keys. */
    private static void assertSortsAsAStableSortDoes(List<byte[]> keys, String shape) {
        int[] ids = new int[keys.size()];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = i;
        }
        Integer[] expected = new Integer[ids.length];
        for (int i = 0; i < ids.length; i++) {
            expected[i] = ids[i];
        }
        Arrays.sort(expected, (a, b) -> Arrays.compareUnsigned(keys.get(a), keys.get(b)));
        KeySort.sort(ids, 0, ids.length, KeySort.Keys.of(keys));
        assertArrayEquals(
                Arrays.stream(expected).mapToInt(Integer::intValue).toArray(),
                ids,
                shape + ": the ids in key order, equal keys in the order given");
    }

    private static List<byte[]> keys(int n, IntFunction<byte[]> key) {
        List<byte[]> keys = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            keys.add(key.apply(i));
        }
        return keys;
    }

    @Test
    void randomKeysOfEveryByteAndLength() {
        Random random = new Random(1);
        assertSortsAsAStableSortDoes(
                keys(20_000, i -> {
                    byte[] k = new byte[random.nextInt(12)];
                    random.nextBytes(k); // bytes above 0x7F too: they sort after the rest
                    return k;
                }),
                "random bytes");
    }

    @Test
    void keysThatDifferOnlyPastTheirFirstEightBytesAfterASharedStart() {
        Random random = new Random(2);
        assertSortsAsAStableSortDoes(
                keys(
                        10_000,
                        i -> ("customer#" + (random.nextInt(3)) + "#order#0000000" + random.nextInt(100_000))
                                .getBytes()),
                "runs of keys that share 15 bytes past the start every key shares");
    }

    @Test
    void keysThatStartOtherKeysAndKeysEqualToEachOther() {
        Random random = new Random(3);
        assertSortsAsAStableSortDoes(
                keys(10_000, i -> {
                    String base = "item-" + random.nextInt(50);
                    return (random.nextBoolean() ? base : base + "\0" + random.nextInt(3)).getBytes();
                }),
                "prefixes of each other, a zero byte after them, and repeats");
    }

    @Test
    void everyKeyTheSame() {
        assertSortsAsAStableSortDoes(keys(1_000, i -> new byte[] {1, 9, 'a', 'b'}), "one key a thousand times");
        assertSortsAsAStableSortDoes(keys(300, i -> new byte[0]), "empty keys");
    }

    @Test
    void aRangeOfTheIdsIsSortedAndTheRestLeftAlone() {
        List<byte[]> keys = keys(100, i -> new byte[] {(byte) (99 - i)});
        int[] ids = new int[100];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = i;
        }
        KeySort.sort(ids, 10, 20, KeySort.Keys.of(keys));
        int[] expected = new int[100];
        for (int i = 0; i < expected.length; i++) {
            expected[i] = i >= 10 && i < 20 ? 29 - i : i;
        }
        assertArrayEquals(expected, ids, "ids 10 to 19 reversed (their keys descend), the others in place");
    }
}
