package dev.ddb2iceberg.index;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The key index's byte form of a key is stored in every index file: it must stay exactly as the
 * files already written hold it (tag, varint length, bytes per value), whatever the encoder's code.
 */
class IndexKeysTest {
    @Test
    void eachValueIsATagItsLengthAndItsBytesAsTheIndexFilesHoldThem() {
        assertArrayEquals(
                new byte[] {1, 2, 'a', 'b', 2, 8, 0, 0, 0, 0, 0, 0, 0, 5},
                IndexKeys.encode(List.of("ab", 5L)),
                "a string and a long");
        assertArrayEquals(
                new byte[] {2, 8, 0, 0, 0, 0, 0, 0, 1, 44},
                IndexKeys.encode(List.of(300)),
                "an int is encoded as the long it equals");
        assertArrayEquals(
                new byte[] {2, 8, -1, -1, -1, -1, -1, -1, -1, -2},
                IndexKeys.encode(List.of(-2L)),
                "a negative long, big-endian two's complement");
        assertArrayEquals(
                new byte[] {3, 5, 0, 0, 0, 1, 125},
                IndexKeys.encode(List.of(new BigDecimal("12.5"))),
                "a decimal: its scale, then its unscaled value");
        assertArrayEquals(
                new byte[] {4, 2, 9, 8},
                IndexKeys.encode(List.of(ByteBuffer.wrap(new byte[] {7, 9, 8}, 1, 2))),
                "a binary value: the buffer's remaining bytes");
        byte[] long200 = IndexKeys.encode(List.of("x".repeat(200)));
        assertArrayEquals(
                new byte[] {1, (byte) 0xC8, 0x01, 'x'},
                new byte[] {long200[0], long200[1], long200[2], long200[3]},
                "a length of 200 takes two varint bytes");
        assertArrayEquals(
                new byte[] {1, 3, (byte) 0xC3, (byte) 0xA9, 'e'},
                IndexKeys.encode(List.of("\u00e9e")),
                "strings are UTF-8");
    }

    @Test
    void everyKindOfKeyIsEncodedAsTagLengthAndUtf8BytesWhateverPathTheEncoderTakes() {
        // ASCII strings and numbers are written straight in, other values through their own bytes:
        // both must give the files' form, checked here against it built the plain way.
        java.util.Random random = new java.util.Random(5);
        String[] strings = {
            "", "cust-000000042", "\u00e9t\u00e9", "\ud83d\ude00x", "lone \ud800 surrogate", "x".repeat(300)
        };
        Object[] others = {0L, -1L, Long.MIN_VALUE, 7, new BigDecimal("-3.25"), ByteBuffer.wrap(new byte[] {1, 2})};
        for (int i = 0; i < 500; i++) {
            List<Object> key = new java.util.ArrayList<>();
            for (int k = 0; k < 1 + random.nextInt(3); k++) {
                key.add(
                        random.nextBoolean()
                                ? strings[random.nextInt(strings.length)]
                                : others[random.nextInt(others.length)]);
            }
            java.io.ByteArrayOutputStream expected = new java.io.ByteArrayOutputStream();
            for (Object v : key) {
                byte tag;
                byte[] bytes;
                if (v instanceof String s) {
                    tag = 1;
                    bytes = s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
                } else if (v instanceof Number n && !(v instanceof BigDecimal)) {
                    tag = 2;
                    bytes = ByteBuffer.allocate(8).putLong(n.longValue()).array();
                } else if (v instanceof BigDecimal d) {
                    tag = 3;
                    byte[] unscaled = d.unscaledValue().toByteArray();
                    bytes = ByteBuffer.allocate(4 + unscaled.length)
                            .putInt(d.scale())
                            .put(unscaled)
                            .array();
                } else {
                    tag = 4;
                    bytes = new byte[] {1, 2};
                }
                expected.write(tag);
                Varints.write(expected, bytes.length);
                expected.writeBytes(bytes);
            }
            assertArrayEquals(expected.toByteArray(), IndexKeys.encode(key), "key " + key);
        }
    }

    @Test
    void aValueOfAnotherTypeIsRefusedNamingItsType() {
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> IndexKeys.encode(List.of(1.5d)));
        org.junit.jupiter.api.Assertions.assertTrue(
                e.getMessage().contains("java.lang.Double"), "the message names the type: " + e.getMessage());
    }
}
