package dev.ddb2iceberg.index;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * The block format of a key index part, in memory: every key found in the one block it can be in,
 * keys it never held found nowhere, the whole part read back entry for entry, and any changed or
 * missing byte refused as damage, never read as other or fewer entries.
 */
class PartFileTest {
    private static IndexEntries entries(int n, Random random) {
        IndexEntries.Builder b = new IndexEntries.Builder();
        for (int i = 0; i < n; i++) {
            byte[] key = ("customer-" + random.nextInt(1_000_000) + "#order-" + i).getBytes(StandardCharsets.UTF_8);
            b.add(
                    key,
                    "s3://bucket/data/file-" + (i % 7) + ".parquet",
                    i * 3L,
                    BigInteger.valueOf(1_000_000L + i).toByteArray());
        }
        return b.build();
    }

    private static String describe(IndexEntries.Entry e) {
        return e == null ? "none" : e.file() + "@" + e.position() + "#" + e.sequence();
    }

    private static PartFile.Footer footerOf(byte[] file) {
        return PartFile.footer("part.bin", file.length, file);
    }

    /** The entries of {@code keys} through the block index, as a merge looks them up. */
    private static List<IndexEntries.Entry> lookUp(PartFile.Footer footer, byte[] file, List<byte[]> keys) {
        List<IndexEntries.Entry> found = new ArrayList<>();
        for (byte[] key : keys) {
            int block = footer.blockOf(key);
            if (block >= 0) {
                found.addAll(PartFile.find(footer, block, file, (int) footer.offset(block), List.of(key)));
            }
        }
        return found;
    }

    @Test
    void everyKeyIsFoundInItsBlockAndKeysNeverHeldAreFoundNowhere() {
        IndexEntries entries = entries(20_000, new Random(1));
        byte[] file = PartFile.encode(entries);
        PartFile.Footer footer = footerOf(file);
        assertTrue(footer.blocks() > 10, "20,000 entries make many blocks: " + footer.blocks());
        assertEquals(PartFile.footerBytes(file), file.length - footer.blocksEnd(), "footer and tail end the file");
        for (int i = 0; i < entries.size(); i++) {
            byte[] key = entries.key(i);
            List<IndexEntries.Entry> found = lookUp(footer, file, List.of(key));
            assertEquals(1, found.size(), () -> "entry of " + new String(key, StandardCharsets.UTF_8));
            assertEquals(describe(entries.find(key)), describe(found.get(0)));
        }
        for (String absent : List.of("", "a", "customer-", "customer-5#order-", "zzz")) {
            assertTrue(
                    lookUp(footer, file, List.of(absent.getBytes(StandardCharsets.UTF_8)))
                            .isEmpty(),
                    "a key never held: '" + absent + "'");
        }
    }

    @Test
    void manyKeysOfOneBlockAreFoundInOneRead() {
        IndexEntries entries = entries(5_000, new Random(2));
        byte[] file = PartFile.encode(entries);
        PartFile.Footer footer = footerOf(file);
        int block = footer.blocks() / 2;
        List<byte[]> inBlock = new ArrayList<>();
        for (int i = 0; i < entries.size(); i++) {
            if (footer.blockOf(entries.key(i)) == block) {
                inBlock.add(entries.key(i));
                inBlock.add(Arrays.copyOf(entries.key(i), entries.key(i).length + 1)); // one never held, just after
            }
        }
        inBlock.sort(Arrays::compareUnsigned);
        List<IndexEntries.Entry> found = PartFile.find(footer, block, file, (int) footer.offset(block), inBlock);
        assertEquals(inBlock.size() / 2, found.size(), "each held key once, none of the others");
    }

    /**
     * The scan within a block passes over most entries by how much of their key they share with
     * the entry before: keys from a two-letter alphabet share long prefixes, are prefixes of one
     * another, and are looked up with every key near them that the part never held (a prefix, an
     * extension, others between), many keys a block in one read, in small and in default-size blocks.
     */
    @Test
    void keysSharingPrefixesAreFoundExactlyAmongNearMisses() {
        // By hand. "aab" sorts below "aac" (sharing "aa"); "b", sharing nothing with "aab", must be
        // compared with "aac" from its first byte.
        findsExactly(
                new TreeSet<>(List.of("aab", "b", "ba", "bab", "bb")),
                new TreeSet<>(List.of("a", "aa", "aac", "ab", "b", "baa", "bab", "bac", "bb", "c")));
        // "aab" and "aac" share more with the entry before than "aa" shares with "ab": passed over.
        findsExactly(new TreeSet<>(List.of("aa", "aab", "aac", "ab")), new TreeSet<>(List.of("ab")));
        findsExactly(new TreeSet<>(List.of("aa", "aab", "aac", "ac")), new TreeSet<>(List.of("ab")));
        // "a" is a prefix of "ab"; "aab" then shares all of "a" with it and is passed over.
        findsExactly(new TreeSet<>(List.of("a", "aaa", "aab", "ab")), new TreeSet<>(List.of("ab")));
        Random random = new Random(6);
        TreeSet<String> held = new TreeSet<>();
        while (held.size() < 3_000) {
            held.add(letters(random, 12));
        }
        TreeSet<String> sought = new TreeSet<>();
        for (String key : held) {
            if (random.nextBoolean()) {
                sought.add(key); // half the held keys: a key passed over is compared with the next
            }
            sought.add(key + "a");
            sought.add(key + "c");
            sought.add(key.substring(0, key.length() - 1));
            sought.add(key.substring(0, key.length() - 1) + "c");
            sought.add(key.substring(0, key.length() - 1) + "ab");
        }
        for (int i = 0; i < 10_000; i++) { // and keys of the same letters anywhere between
            sought.add(letters(random, 13));
        }
        findsExactly(held, sought);
        // A sparse few, as a merge seeks among many more entries: most entries are passed over.
        TreeSet<String> few = new TreeSet<>();
        for (String key : sought) {
            if (random.nextInt(20) == 0) {
                few.add(key);
            }
        }
        findsExactly(held, few);
    }

    /** A key of 1 to {@code longest} letters a and b. */
    private static String letters(Random random, int longest) {
        StringBuilder key = new StringBuilder();
        for (int n = 1 + random.nextInt(longest); n > 0; n--) {
            key.append(random.nextBoolean() ? 'a' : 'b');
        }
        return key.toString();
    }

    /**
     * Writes {@code held} as a part (in tiny, small and default-size blocks) and looks up
     * {@code sought}, each block's keys in one read: exactly the sought ones it holds are found, each its own entry.
     */
    private static void findsExactly(TreeSet<String> held, TreeSet<String> sought) {
        for (int blockBytes : new int[] {8, 64, 256, PartFile.BLOCK_BYTES}) {
            PartFile.Writer writer = new PartFile.Writer(new PartFile.FileTable(), held.size(), blockBytes);
            int ref = writer.fileRef("s3://bucket/data/file.parquet");
            int position = 0;
            for (String key : held) { // a String's order is the bytes' order for these letters
                byte[] k = key.getBytes(StandardCharsets.UTF_8);
                byte[] sequence = BigInteger.valueOf(position).toByteArray();
                writer.add(k, 0, k.length, ref, position++, sequence, 0, sequence.length);
            }
            byte[] file = writer.finish();
            PartFile.Footer footer = footerOf(file);
            Map<Integer, List<byte[]>> byBlock = new TreeMap<>();
            for (String key : sought) {
                byte[] k = key.getBytes(StandardCharsets.UTF_8);
                int block = footer.blockOf(k);
                if (block < 0) {
                    assertTrue(!held.contains(key), "a held key before every block: " + key);
                } else {
                    byBlock.computeIfAbsent(block, b -> new ArrayList<>()).add(k);
                }
            }
            TreeSet<String> found = new TreeSet<>();
            for (Map.Entry<Integer, List<byte[]>> e : byBlock.entrySet()) {
                int block = e.getKey();
                for (IndexEntries.Entry entry :
                        PartFile.find(footer, block, file, (int) footer.offset(block), e.getValue())) {
                    String key = new String(entry.key(), StandardCharsets.UTF_8);
                    assertEquals(
                            held.headSet(key).size(), entry.position(), "the entry found for " + key + " is its own");
                    assertTrue(found.add(key), "found twice: " + key);
                }
            }
            TreeSet<String> expected = new TreeSet<>(held);
            expected.retainAll(sought);
            assertEquals(
                    expected, found, "keys found among " + sought.size() + " sought, " + blockBytes + "-byte blocks");
        }
    }

    /**
     * A lookup jumps to the restart at or below its key: keys at restarts, just before them and
     * just after them (held or not), in one read of a block, are each found as themselves.
     */
    @Test
    void keysAtAndAroundEachRestartAreFoundInOneRead() {
        IndexEntries entries = entries(5_000, new Random(7));
        byte[] file = PartFile.encode(entries);
        PartFile.Footer footer = footerOf(file);
        assertTrue(footer.restarts, "a part written now has restart tables");
        int block = footer.blocks() / 2;
        List<Integer> inBlock = new ArrayList<>();
        for (int i = 0; i < entries.size(); i++) {
            if (footer.blockOf(entries.key(i)) == block) {
                inBlock.add(i);
            }
        }
        assertTrue(
                footer.restarts(block) >= 3,
                "a block of " + inBlock.size() + " entries has several restarts: " + footer.restarts(block));
        List<byte[]> sought = new ArrayList<>();
        int held = 0;
        for (int n = 0; n < inBlock.size(); n++) {
            byte[] key = entries.key(inBlock.get(n));
            int atRestart = n % PartFile.RESTART_INTERVAL;
            if (atRestart == 0 || atRestart == PartFile.RESTART_INTERVAL - 1) {
                sought.add(key);
                held++;
            }
            if (atRestart == 0) {
                sought.add(Arrays.copyOf(key, key.length + 1)); // never held, just after a restart's key
            }
        }
        sought.sort(Arrays::compareUnsigned);
        List<IndexEntries.Entry> found = PartFile.find(footer, block, file, (int) footer.offset(block), sought);
        assertEquals(held, found.size(), "each held key once, none of the others");
        for (IndexEntries.Entry e : found) {
            assertEquals(describe(entries.find(e.key())), describe(e), "the entry found is the key's own");
        }
    }

    /**
     * A part written before blocks had restart tables (a file kept from then, 600 entries in blocks
     * of about 1 KB: keys key-00000, key-00003, ... key-01797, sequence 1000 + i, position i,
     * alternating between two data files) is read as it was, and a fold writes it anew with them.
     */
    @Test
    void aPartWrittenBeforeRestartTablesIsReadAndFoldedIntoOneWithThem() throws Exception {
        byte[] file;
        try (var in = PartFileTest.class.getResourceAsStream("/index/part-without-restarts.bin")) {
            file = in.readAllBytes();
        }
        PartFile.Footer footer = footerOf(file);
        assertTrue(!footer.restarts && footer.blocks() > 3, "an old part of several blocks: " + footer.blocks());
        List<byte[]> sought = new ArrayList<>();
        for (int n = 0; n < 1_800; n++) {
            sought.add(String.format("key-%05d", n).getBytes(StandardCharsets.UTF_8));
        }
        List<IndexEntries.Entry> found = lookUp(footer, file, sought);
        assertEquals(600, found.size(), "every third key is held");
        for (IndexEntries.Entry e : found) {
            int i = Integer.parseInt(new String(e.key(), StandardCharsets.UTF_8).substring(4)) / 3;
            assertEquals(
                    "s3://bucket/data/" + (i % 2 == 0 ? "a" : "b") + ".parquet@" + i + "#" + (1000 + i),
                    describe(e),
                    "entry " + i);
        }
        IndexEntries old = PartFile.readAll(footer, file);
        assertEquals(600, old.size(), "the whole part reads back");
        IndexEntries.Builder change = new IndexEntries.Builder();
        change.add("key-00001".getBytes(StandardCharsets.UTF_8), "s3://bucket/data/c.parquet", 7, new byte[] {9});
        byte[] folded = PartFile.overlay(footer, file, change.build(), 1).finish();
        PartFile.Footer newFooter = footerOf(folded);
        assertTrue(newFooter.restarts, "the folded part has restart tables");
        IndexEntries back = PartFile.readAll(newFooter, folded);
        assertEquals(601, back.size(), "the old entries and the new one");
        assertEquals(
                "s3://bucket/data/c.parquet@7#9",
                describe(lookUp(newFooter, folded, List.of("key-00001".getBytes(StandardCharsets.UTF_8)))
                        .get(0)));
        for (int i = 0; i < old.size(); i++) {
            assertEquals(describe(old.entry(i)), describe(back.find(old.key(i))), "entry " + i + " kept");
        }
    }

    @Test
    void aWholePartReadsBackEntryForEntry() {
        IndexEntries entries = entries(30_000, new Random(3));
        byte[] file = PartFile.encode(entries);
        IndexEntries back = PartFile.readAll(footerOf(file), file);
        assertEquals(entries.size(), back.size());
        for (int i = 0; i < entries.size(); i++) {
            assertEquals(describe(entries.entry(i)), describe(back.entry(i)), "entry " + i);
        }
        byte[] empty = PartFile.encode(IndexEntries.EMPTY);
        assertEquals(0, PartFile.readAll(footerOf(empty), empty).size(), "an empty part");
    }

    @Test
    void anyChangedByteIsDamageNeverOtherEntries() {
        IndexEntries entries = entries(600, new Random(4));
        byte[] good = PartFile.encode(entries);
        int refused = 0;
        for (int at = 0; at < good.length; at++) {
            byte[] bad = good.clone();
            bad[at] ^= 0x41;
            try {
                PartFile.Footer footer = footerOf(bad);
                IndexEntries back = PartFile.readAll(footer, bad);
                // Read without complaint: then it must be exactly the entries written.
                assertEquals(entries.size(), back.size(), "byte " + at + " changed, read as other entries");
                for (int i = 0; i < entries.size(); i++) {
                    assertEquals(describe(entries.entry(i)), describe(back.entry(i)), "byte " + at + ", entry " + i);
                }
            } catch (DamagedIndexException expected) {
                refused++;
            }
        }
        assertEquals(good.length, refused, "every changed byte is caught by a CRC, a count or the tail");
    }

    @Test
    void aTruncatedPartIsDamage() {
        byte[] good = PartFile.encode(entries(2_000, new Random(5)));
        for (int cut : new int[] {1, 7, 13, good.length / 2, good.length - 1}) {
            byte[] shorter = Arrays.copyOf(good, good.length - cut);
            DamagedIndexException e = null;
            try {
                // The manifest's length is the whole file's: the tail read at that length is the wrong bytes.
                PartFile.footer("part.bin", good.length, shorter);
            } catch (DamagedIndexException damaged) {
                e = damaged;
            }
            assertNotNull(e, "cut by " + cut + " bytes");
        }
        assertNull(
                PartFile.footer("part.bin", good.length, Arrays.copyOfRange(good, good.length - 12, good.length)),
                "only the tail read: the footer must be read too");
    }

    @Test
    void runsMergedThroughCursorsIntoAWriterReadBackAsTheirUnion() {
        // What a rebuild's external sort does with its sorted runs: three runs, each every third
        // entry of one sorted set, merged in key order into one new part.
        IndexEntries all = entries(12_000, new Random(5));
        List<PartFile.Cursor> cursors = new ArrayList<>();
        for (int run = 0; run < 3; run++) {
            IndexEntries.Builder b = new IndexEntries.Builder();
            for (int i = run; i < all.size(); i += 3) {
                b.add(all.entry(i));
            }
            byte[] file = PartFile.encode(b.build());
            PartFile.Cursor c = new PartFile.Cursor(footerOf(file), file);
            assertTrue(c.next(), "run " + run + " has entries");
            cursors.add(c);
        }
        PartFile.Writer out = new PartFile.Writer(new String[0], all.size());
        while (!cursors.isEmpty()) {
            PartFile.Cursor least =
                    cursors.stream().min(PartFile.Cursor::compareKeys).orElseThrow();
            assertTrue(out.follows(least.keyBuffer(), 0, least.keyLength()), "the runs give keys in order");
            least.copyTo(out, out.fileRef(least.file()));
            if (!least.next()) {
                cursors.remove(least);
            }
        }
        assertEquals(all.size(), out.entries(), "every entry of every run written once");
        byte[] merged = out.finish();
        IndexEntries back = PartFile.readAll(footerOf(merged), merged);
        assertEquals(all.size(), back.size());
        for (int i = 0; i < all.size(); i++) {
            assertEquals(describe(all.entry(i)), describe(back.entry(i)), "entry " + i);
            assertTrue(Arrays.equals(all.key(i), back.key(i)), "key of entry " + i);
        }
    }

    @Test
    void aCursorRefusesADamagedBlockInsteadOfEndingEarly() {
        byte[] file = PartFile.encode(entries(3_000, new Random(6)));
        PartFile.Footer footer = footerOf(file);
        file[(int) footer.offset(footer.blocks() / 2) + 3] ^= 0x40;
        PartFile.Cursor c = new PartFile.Cursor(footer, file);
        int read = 0;
        try {
            while (c.next()) {
                read++;
            }
            throw new AssertionError("a damaged block read as the end of the part after " + read + " entries");
        } catch (DamagedIndexException expected) {
            assertTrue(read < 3_000, "refused before the damaged block's entries: " + read);
        }
    }

    private static byte[] key(int n) {
        return ("k" + n).getBytes(StandardCharsets.UTF_8);
    }

    /** A fold: the changes laid over an encoded part, read back. */
    private static IndexEntries overlay(IndexEntries part, IndexEntries changes) {
        byte[] file = part.size() == 0 ? null : PartFile.encode(part);
        PartFile.Writer out = PartFile.overlay(file == null ? null : footerOf(file), file, changes, 1);
        byte[] folded = out.finish();
        return PartFile.readAll(footerOf(folded), folded);
    }

    private static Map<String, String> asMap(IndexEntries entries) {
        Map<String, String> m = new TreeMap<>();
        for (int i = 0; i < entries.size(); i++) {
            m.put(new String(entries.key(i), StandardCharsets.UTF_8), describe(entries.entry(i)));
        }
        return m;
    }

    @Test
    void aFoldTakesTheChangeOfEachKeyDropsRemovedKeysAndKeepsOnlyFilesStillPointedTo() {
        Random random = new Random(6);
        IndexEntries.Builder older = new IndexEntries.Builder();
        IndexEntries.Builder newer = new IndexEntries.Builder();
        Map<String, String> expected = new TreeMap<>();
        for (int n = 0; n < 3_000; n += 1 + random.nextInt(3)) {
            IndexEntries.Entry e = new IndexEntries.Entry(key(n), "old" + (n % 5), n, BigInteger.valueOf(n + 1));
            older.add(e);
            expected.put("k" + n, describe(e));
        }
        for (int n = 0; n < 3_500; n += 1 + random.nextInt(5)) {
            String file = random.nextBoolean() ? null : "new" + (n % 3);
            IndexEntries.Entry e = new IndexEntries.Entry(key(n), file, n * 10L, BigInteger.valueOf(10_000L + n));
            newer.add(e);
            if (file == null) {
                expected.remove("k" + n);
            } else {
                expected.put("k" + n, describe(e));
            }
        }
        IndexEntries folded = overlay(older.build(), newer.build());
        assertEquals(expected, asMap(folded), "each key's change, removed keys gone, the rest as they were");
        for (String f : folded.files()) {
            assertTrue(expected.values().stream().anyMatch(v -> v.startsWith(f + "@")), f + " is still pointed to");
        }
        assertEquals(
                asMap(newerOnly(newer.build())),
                asMap(overlay(IndexEntries.empty(), newer.build())),
                "a fold onto an empty part is the changes' live entries");
    }

    @Test
    void aFoldThatExpiresDropsOldAndNewEntriesWhosePositionIsBelowTheBound() {
        // The removals index keeps a removal's time in the position: a fold forgets those before the cutoff.
        IndexEntries.Builder older = new IndexEntries.Builder();
        IndexEntries.Builder newer = new IndexEntries.Builder();
        Map<String, String> expected = new TreeMap<>();
        for (int n = 0; n < 2_000; n++) {
            IndexEntries.Entry e = new IndexEntries.Entry(key(n), "removed", n, BigInteger.valueOf(n + 1));
            older.add(e);
            if (n >= 1_000) {
                expected.put("k" + n, describe(e));
            }
        }
        for (int n = 1_500; n < 2_500; n += 2) {
            IndexEntries.Entry e = new IndexEntries.Entry(key(n), "removed", n % 4 == 0 ? 10 : 5_000, BigInteger.TEN);
            newer.add(e);
            if (n % 4 == 0) {
                expected.remove("k" + n); // a newer entry, itself expired, replaces the old one
            } else {
                expected.put("k" + n, describe(e));
            }
        }
        byte[] file = PartFile.encode(older.build());
        byte[] folded =
                PartFile.overlay(footerOf(file), file, newer.build(), 1, 1_000).finish();
        assertEquals(
                expected,
                asMap(PartFile.readAll(footerOf(folded), folded)),
                "entries at positions from 1,000 on, newer ones winning");
    }

    @Test
    void anOverlayKeepsItsTombstonesAndAnswersThemWhereABasePartHasNone() {
        // An overlay lies over a base part: its tombstones remove the part's entries, so they stay.
        Random random = new Random(8);
        IndexEntries.Builder first = new IndexEntries.Builder();
        IndexEntries.Builder second = new IndexEntries.Builder();
        Map<String, String> expected = new TreeMap<>();
        for (int n = 0; n < 4_000; n += 1 + random.nextInt(3)) {
            IndexEntries.Entry e = random.nextInt(4) == 0
                    ? new IndexEntries.Entry(key(n), null, 0, BigInteger.ZERO)
                    : new IndexEntries.Entry(key(n), "first" + (n % 3), n, BigInteger.valueOf(n + 1));
            first.add(e);
            expected.put("k" + n, describe(e));
        }
        for (int n = 0; n < 5_000; n += 1 + random.nextInt(5)) {
            IndexEntries.Entry e = random.nextInt(3) == 0
                    ? new IndexEntries.Entry(key(n), null, 0, BigInteger.ZERO)
                    : new IndexEntries.Entry(key(n), "second", n * 10L, BigInteger.valueOf(10_000L + n));
            second.add(e);
            expected.put("k" + n, describe(e));
        }
        byte[] once = PartFile.overlay(null, null, first.build(), 1, Long.MIN_VALUE, false, true)
                .finish();
        PartFile.Footer footer = footerOf(once);
        assertTrue(footer.tombstones, "an overlay's footer says its entries may be tombstones");
        byte[] twice = PartFile.overlay(footer, once, second.build(), 4, Long.MIN_VALUE, false, true)
                .finish();
        assertEquals(
                expected,
                asMap(PartFile.readAll(footerOf(twice), twice)),
                "each key's newest entry or tombstone, read whole");
        List<byte[]> keys = new ArrayList<>();
        for (String k : expected.keySet()) {
            keys.add(k.getBytes(StandardCharsets.UTF_8));
        }
        Map<String, String> found = new TreeMap<>();
        for (IndexEntries.Entry e : lookUp(footerOf(twice), twice, keys)) {
            found.put(new String(e.key(), StandardCharsets.UTF_8), describe(e));
        }
        assertEquals(expected, found, "each key's newest entry or tombstone, looked up by block");

        IndexEntries withTombstone = second.build();
        IllegalArgumentException refused = org.junit.jupiter.api.Assertions.assertThrows(
                IllegalArgumentException.class, () -> PartFile.encode(withTombstone));
        assertTrue(refused.getMessage().contains("tombstone in a base part"), refused.getMessage());
        byte[] base = PartFile.encode(newerOnly(withTombstone));
        assertTrue(!footerOf(base).tombstones, "a base part's footer allows no tombstone");
    }

    private static IndexEntries newerOnly(IndexEntries changes) {
        IndexEntries.Builder live = new IndexEntries.Builder();
        for (int i = 0; i < changes.size(); i++) {
            if (!changes.entry(i).isTombstone()) {
                live.add(changes.entry(i));
            }
        }
        return live.build();
    }

    @Test
    void removingEveryKeyOfAPartLeavesItEmptyWithNoFileInItsTable() {
        IndexEntries.Builder older = new IndexEntries.Builder();
        IndexEntries.Builder removals = new IndexEntries.Builder();
        for (int n = 0; n < 100; n++) {
            older.add(new IndexEntries.Entry(key(n), "f", n, BigInteger.ONE));
            removals.add(new IndexEntries.Entry(key(n), null, 0, BigInteger.ZERO));
        }
        byte[] file = PartFile.encode(older.build());
        PartFile.Writer out = PartFile.overlay(footerOf(file), file, removals.build(), 1);
        assertEquals(0, out.entries(), "no entry is left");
        byte[] folded = out.finish();
        assertEquals(0, footerOf(folded).files.length, "no file is left in the table");
    }

    @Test
    void aFoldCutIntoKeyRangesOnSeveralThreadsGivesWhatOneThreadGives() {
        IndexEntries part = entries(400_000, new Random(7));
        byte[] file = PartFile.encode(part);
        PartFile.Footer footer = footerOf(file);
        assertTrue(footer.blocks() >= 4 * 256, "enough blocks for four ranges: " + footer.blocks());
        // Changes on the ranges' edges (each block's first key, replaced or removed), below the
        // first key, above the last, and between.
        IndexEntries.Builder changes = new IndexEntries.Builder();
        Random random = new Random(8);
        for (int b = 0; b < footer.blocks(); b++) {
            String file2 = b % 3 == 0 ? null : "s3://bucket/data/new-" + (b % 4) + ".parquet";
            changes.add(
                    footer.firstKey(b),
                    file2,
                    b,
                    BigInteger.valueOf(5_000_000L + b).toByteArray());
        }
        for (int i = 0; i < 5_000; i++) {
            byte[] key = ("customer-" + random.nextInt(1_000_000) + "#new-" + i).getBytes(StandardCharsets.UTF_8);
            changes.add(
                    key,
                    "s3://bucket/data/new-x.parquet",
                    i,
                    BigInteger.valueOf(6_000_000L + i).toByteArray());
        }
        changes.add(new byte[] {0}, "s3://bucket/data/first.parquet", 0, BigInteger.ONE.toByteArray());
        changes.add(new byte[] {(byte) 0xFF, 1}, "s3://bucket/data/last.parquet", 0, BigInteger.ONE.toByteArray());
        IndexEntries delta = changes.build();
        byte[] one = PartFile.overlay(footer, file, delta, 1).finish();
        byte[] four = PartFile.overlay(footer, file, delta, 4).finish();
        IndexEntries expected = PartFile.readAll(footerOf(one), one);
        IndexEntries got = PartFile.readAll(footerOf(four), four);
        assertEquals(expected.size(), got.size(), "entries after the fold");
        for (int i = 0; i < expected.size(); i++) {
            assertTrue(Arrays.equals(expected.key(i), got.key(i)), "key of entry " + i);
            assertEquals(describe(expected.entry(i)), describe(got.entry(i)), "entry " + i);
        }
        assertEquals(
                new TreeSet<>(List.of(footerOf(one).files)),
                new TreeSet<>(List.of(footerOf(four).files)),
                "the same data files in the table");
    }
}
