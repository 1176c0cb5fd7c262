package dev.ddb2iceberg.index;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * The packed entries against a plain sorted map: building from random order with repeated keys,
 * and overlaying newer entries (tombstones kept or dropped), must give the map's answer key by key.
 */
class IndexEntriesTest {
    private static byte[] key(int n) {
        return ("k" + n).getBytes(StandardCharsets.UTF_8);
    }

    /** A map of key to "file@position#sequence" ("-" for a tombstone), in the entries' order. */
    private static Map<String, String> asMap(IndexEntries entries) {
        Map<String, String> out = new TreeMap<>();
        for (int i = 0; i < entries.size(); i++) {
            IndexEntries.Entry e = entries.entry(i);
            out.put(new String(e.key(), StandardCharsets.UTF_8), describe(e));
        }
        return out;
    }

    private static String describe(IndexEntries.Entry e) {
        return e.isTombstone() ? "-" : e.file() + "@" + e.position() + "#" + e.sequence();
    }

    @Test
    void theBuilderSortsAndKeepsTheLastEntryOfAKeyAddedTwice() {
        Random random = new Random(5);
        IndexEntries.Builder builder = new IndexEntries.Builder();
        Map<String, String> expected = new TreeMap<>();
        for (int i = 0; i < 5_000; i++) {
            int n = random.nextInt(2_000);
            String file = random.nextInt(10) == 0 ? null : "f" + random.nextInt(7);
            IndexEntries.Entry e = new IndexEntries.Entry(key(n), file, i, BigInteger.valueOf(1_000_000L + i));
            builder.add(e);
            expected.put("k" + n, describe(e));
        }
        IndexEntries built = builder.build();
        assertEquals(expected, asMap(built));
        for (int i = 1; i < built.size(); i++) {
            assertTrue(
                    Arrays.compareUnsigned(
                                    built.entry(i - 1).key(), built.entry(i).key())
                            < 0,
                    "entries are in unsigned byte order at " + i);
        }
        assertEquals(expected.get("k17"), built.find(key(17)) == null ? null : describe(built.find(key(17))));
        assertNull(built.find(key(99_999)), "a key never added is not found");
    }

    @Test
    void findAnswersEveryKeyAsASearchDoesAndItsFilterPassesFewKeysItDoesNotHold() {
        Random random = new Random(9);
        IndexEntries.Builder builder = new IndexEntries.Builder();
        TreeMap<String, String> expected = new TreeMap<>();
        for (int i = 0; i < 20_000; i++) {
            int n = random.nextInt(1_000_000);
            IndexEntries.Entry e = new IndexEntries.Entry(key(n), "f" + (n % 5), n, BigInteger.valueOf(n));
            builder.add(e);
            expected.put("k" + n, describe(e));
        }
        IndexEntries built = builder.build();
        int held = 0;
        int absentButSearched = 0;
        for (int n = 0; n < 1_000_000; n += 7) {
            IndexEntries.Entry found = built.find(key(n), IndexEntries.hash(key(n)));
            assertEquals(expected.get("k" + n), found == null ? null : describe(found), "key k" + n);
            if (found != null) {
                held++;
            }
        }
        assertTrue(held > 100, "some keys looked up are held: " + held);
        // The filter's false positives: keys it lets through to a search though they are not held.
        for (int n = 2_000_000; n < 2_100_000; n++) {
            if (built.filterPasses(IndexEntries.hash(key(n)))) {
                absentButSearched++;
            }
        }
        // 16 to 32 bits a key (here 26) let about 0.15 % through; 8 to 16 bits (13) let 0.9 % through.
        assertTrue(absentButSearched < 400, "under 0.4 % of absent keys pass the filter: " + absentButSearched);
    }

    @Test
    void eachEntrysPartIsTheKeysPartForWhateverCountOfPartsIsAsked() {
        IndexEntries.Builder builder = new IndexEntries.Builder();
        for (int n = 0; n < 3_000; n++) {
            builder.add(new IndexEntries.Entry(key(n), "f", n, BigInteger.valueOf(n)));
        }
        IndexEntries entries = builder.build();
        for (int parts : new int[] {64, 7, 64}) { // asked again with another count, then the first again
            int[] partOf = entries.partsOf(parts);
            assertEquals(entries.size(), partOf.length);
            for (int i = 0; i < entries.size(); i++) {
                int expected = IndexKeys.part(entries.entry(i).key(), parts);
                assertEquals(expected, partOf[i], "entry " + i + "'s part of " + parts);
            }
        }
    }
}
