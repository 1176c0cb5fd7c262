package dev.ddb2iceberg.util;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.github.luben.zstd.Zstd;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** Pooled one-shot zstd: every buffer comes back whole from a standard zstd decoder, whatever thread compressed it. */
class ZstdCompressionTest {
    /** Bytes that compress (few distinct values, runs) or do not (random), as index blocks and pages differ. */
    private static byte[] input(Random random, int length) {
        byte[] bytes = new byte[length];
        if (random.nextBoolean()) {
            random.nextBytes(bytes);
        } else {
            for (int i = 0; i < length; i++) {
                bytes[i] = (byte) ((i / (1 + random.nextInt(50))) % 7);
            }
        }
        return bytes;
    }

    private static void assertRoundTrip(byte[] original, int offset, int length, int level) {
        byte[] frame = ZstdCompression.compress(original, offset, length, level);
        assertEquals(length, Zstd.getFrameContentSize(frame), "the frame's header names its content size");
        assertArrayEquals(
                Arrays.copyOfRange(original, offset, offset + length),
                Zstd.decompress(frame, length),
                length + " bytes at level " + level + " decompress to themselves");
    }

    @Test
    void buffersOfEverySizeAndLevelDecompressToThemselves() {
        Random random = new Random(11);
        for (int round = 0; round < 300; round++) {
            int length = round < 5 ? round : random.nextInt(200_000);
            byte[] bytes = input(random, length + 20);
            assertRoundTrip(bytes, 10, length, 1 + random.nextInt(9));
        }
    }

    @Test
    void aContextUsedAtOneLevelThenAnotherCompressesAtTheSecond() {
        byte[] bytes = input(new Random(3), 100_000);
        int fast = ZstdCompression.compress(bytes, 0, bytes.length, 1).length;
        int small = ZstdCompression.compress(bytes, 0, bytes.length, 19).length;
        assertEquals(
                fast, ZstdCompression.compress(bytes, 0, bytes.length, 1).length, "level 1 again, same frame size");
        assertTrue(small <= fast, "level 19 (" + small + " bytes) is no larger than level 1 (" + fast + ")");
    }

    @Test
    void threadsCompressingAtOnceEachGetTheirOwnBytesBack() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<?>> work = new ArrayList<>();
            for (int t = 0; t < 64; t++) {
                long seed = t;
                work.add(pool.submit(() -> {
                    Random random = new Random(seed);
                    for (int i = 0; i < 50; i++) {
                        byte[] bytes = input(random, random.nextInt(20_000));
                        assertRoundTrip(bytes, 0, bytes.length, 1);
                    }
                    return null;
                }));
            }
            for (Future<?> f : work) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aDestinationTooSmallForTheWorstCaseIsRefused() {
        byte[] bytes = new byte[1000];
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> ZstdCompression.compress(new byte[10], bytes, 0, bytes.length, 1));
        assertTrue(e.getMessage().contains("cannot hold 1000"), e.getMessage());
    }
}
