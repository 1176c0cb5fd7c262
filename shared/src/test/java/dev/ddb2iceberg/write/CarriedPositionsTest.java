package dev.ddb2iceberg.write;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import dev.ddb2iceberg.lookup.LiveRow;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.TreeSet;
import java.util.function.LongConsumer;
import org.apache.iceberg.deletes.PositionDeleteIndex;
import org.junit.jupiter.api.Test;

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
            long[] earlier = random.longs(random.nextInt(2_000), 0, 5_000)
                    .sorted()
                    .distinct()
                    .toArray();
            List<Long> now = new ArrayList<>();
            for (int i = random.nextInt(300); i > 0; i--) {
                // Some of this merge's positions repeat an earlier one or each other.
                now.add(
                        random.nextInt(4) == 0 && earlier.length > 0
                                ? earlier[random.nextInt(earlier.length)]
                                : random.nextInt(5_000));
            }
            boolean shuffled = round % 2 == 1;
            long[] got = MergeWriter.positionsOf(
                    earlier.length == 0 && round % 3 == 0 ? null : new ListedPositions(earlier, shuffled, random),
                    rows(now));
            TreeSet<Long> expected = new TreeSet<>(now);
            Arrays.stream(earlier).forEach(expected::add);
            assertArrayEquals(
                    expected.stream().mapToLong(Long::longValue).toArray(),
                    got,
                    "round " + round + ": " + earlier.length + " earlier positions"
                            + (shuffled ? " (not ascending)" : "") + " and " + now.size() + " new");
        }
    }

    @Test
    void mergingKeepsEachPositionOnce() {
        assertArrayEquals(
                new long[] {0, 1, 2, 3, 5, 8},
                MergeWriter.mergeDistinct(new long[] {1, 2, 3, 5}, new long[] {0, 2, 2, 5, 8}));
        assertArrayEquals(new long[] {4}, MergeWriter.mergeDistinct(new long[] {}, new long[] {4, 4}));
        assertArrayEquals(new long[] {}, MergeWriter.mergeDistinct(new long[] {}, new long[] {}));
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
