package dev.ddb2iceberg.write;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.ddb2iceberg.lookup.LiveRow;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeSet;
import java.util.function.LongConsumer;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.deletes.PositionDeleteIndex;
import org.junit.jupiter.api.Test;
import org.roaringbitmap.RoaringBitmap;

/**
 * A data file's new delete file holds the positions its earlier delete files deleted and those this
 * merge deletes, ascending and each once, whatever order either comes in. (Plain values: no storage
 * is involved; the merges that write these files are tested against the S3 server elsewhere.)
 */
class CarriedPositionsTest {
    @Test
    void earlierAndNewPositionsAreMergedAscendingAndDistinct() {
        Random random = new Random(42);
        for (int round = 0; round < 200; round++) {
            Round drawn = Round.draw(random, 2_000, 5_000);
            long[] earlier = drawn.earlier();
            List<Long> now = drawn.now();
            boolean shuffled = round % 2 == 1;
            long[] got = MergeWriter.positionsOf(
                    earlier.length == 0 && round % 3 == 0 ? null : new ListedPositions(earlier, shuffled, random),
                    rows(now));
            assertArrayEquals(
                    drawn.expected(),
                    got,
                    "round " + round + ": " + earlier.length + " earlier positions"
                            + (shuffled ? " (not ascending)" : "") + " and " + now.size() + " new");
        }
    }

    @Test
    void carriedAsABitmapTheyAreTheSamePositionsWhetherTheEarlierOnesWereHeldReadOrNone() {
        Random random = new Random(7);
        for (int round = 0; round < 200; round++) {
            Round drawn = Round.draw(random, 3_000, 200_000);
            long[] earlier = drawn.earlier();
            List<Long> now = drawn.now();
            long[] want = drawn.expected();

            // Held by the container's cache (copied bitmap to bitmap), read from storage (listed,
            // here shuffled), or none yet.
            DeletePositionsCache cache = new DeletePositionsCache(64 << 20);
            DeleteFile file = DeletePositionsCacheTest.deleteFile(
                    "s3://bucket/t/data/f" + round + "-deletes.parquet", earlier.length);
            cache.put(
                    file,
                    RoaringBitmap.bitmapOf(
                            Arrays.stream(earlier).mapToInt(p -> (int) p).toArray()));
            PositionDeleteIndex held = earlier.length == 0 ? null : cache.positions(List.of(file));
            PositionDeleteIndex read = new ListedPositions(earlier, true, random);
            Map<String, PositionDeleteIndex> befores = new LinkedHashMap<>();
            befores.put("read", read);
            befores.put(held == null ? "none" : "held", held);
            for (Map.Entry<String, PositionDeleteIndex> before : befores.entrySet()) {
                RoaringBitmap carried = MergeWriter.carry(before.getValue(), rows(now));
                String what = "round " + round + ": " + earlier.length + " earlier positions (" + before.getKey()
                        + ") and " + now.size() + " new";
                assertNotNull(carried, what);
                assertArrayEquals(want, MergeWriter.positionsIn(carried), what);
                assertEquals(want.length, carried.getLongCardinality(), what);
            }
            if (held != null) {
                assertEquals(
                        earlier.length,
                        held.cardinality(),
                        "round " + round + ": carrying copies the held positions and leaves them as they were");
            }
        }
    }

    @Test
    void positionsPast32BitsAreNotCarriedAsABitmap() {
        long past = Integer.MAX_VALUE + 1L;
        assertNull(MergeWriter.carry(null, rows(List.of(3L, past))), "a new position past 2^31");
        assertNull(
                MergeWriter.carry(new ListedPositions(new long[] {1, past}, false, new Random(1)), rows(List.of(3L))),
                "an earlier position past 2^31");
        assertArrayEquals(
                new long[] {1, 3, past},
                MergeWriter.positionsOf(
                        new ListedPositions(new long[] {1, past}, false, new Random(1)), rows(List.of(3L))),
                "such positions go through the arrays");
    }

    @Test
    void mergingKeepsEachPositionOnce() {
        assertArrayEquals(
                new long[] {0, 1, 2, 3, 5, 8},
                MergeWriter.mergeDistinct(new long[] {1, 2, 3, 5}, new long[] {0, 2, 2, 5, 8}));
        assertArrayEquals(new long[] {4}, MergeWriter.mergeDistinct(new long[] {}, new long[] {4, 4}));
        assertArrayEquals(new long[] {}, MergeWriter.mergeDistinct(new long[] {}, new long[] {}));
    }

    /** A data file's earlier positions (ascending, distinct) and this merge's (some repeating an earlier one or each other). */
    private record Round(long[] earlier, List<Long> now) {
        static Round draw(Random random, int mostEarlier, int below) {
            long[] earlier = random.longs(random.nextInt(mostEarlier), 0, below)
                    .sorted()
                    .distinct()
                    .toArray();
            List<Long> now = new ArrayList<>();
            for (int i = random.nextInt(300); i > 0; i--) {
                now.add(
                        random.nextInt(4) == 0 && earlier.length > 0
                                ? earlier[random.nextInt(earlier.length)]
                                : random.nextInt(below));
            }
            return new Round(earlier, now);
        }

        /** Both, ascending, each once. */
        long[] expected() {
            TreeSet<Long> all = new TreeSet<>(now);
            Arrays.stream(earlier).forEach(all::add);
            return all.stream().mapToLong(Long::longValue).toArray();
        }
    }

    private static List<LiveRow> rows(List<Long> positions) {
        List<LiveRow> rows = new ArrayList<>();
        positions.forEach(p -> rows.add(new LiveRow(null, p, java.math.BigInteger.ONE)));
        return rows;
    }

    /** Earlier positions as an index gives them: ascending, or (to check the fallback) shuffled. */
    private static final class ListedPositions implements PositionDeleteIndex {
        private final long[] positions;

        ListedPositions(long[] ascending, boolean shuffle, Random random) {
            positions = ascending.clone();
            if (shuffle) {
                for (int i = positions.length - 1; i > 0; i--) {
                    int j = random.nextInt(i + 1);
                    long t = positions[i];
                    positions[i] = positions[j];
                    positions[j] = t;
                }
            }
        }

        @Override
        public void delete(long position) {
            throw new UnsupportedOperationException("read only");
        }

        @Override
        public void delete(long from, long to) {
            throw new UnsupportedOperationException("read only");
        }

        @Override
        public boolean isDeleted(long position) {
            return Arrays.stream(positions).anyMatch(p -> p == position);
        }

        @Override
        public boolean isEmpty() {
            return positions.length == 0;
        }

        @Override
        public void forEach(LongConsumer consumer) {
            Arrays.stream(positions).forEach(consumer);
        }

        @Override
        public long cardinality() {
            return positions.length;
        }
    }
}
