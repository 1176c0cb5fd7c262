package dev.ddb2iceberg.index;

import java.io.ByteArrayOutputStream;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * The key index's form of an item key: the key column values (string, long, decimal or binary)
 * as one byte string. Each value is a type tag, its length and its bytes, so two keys have equal
 * bytes exactly when their values are equal: the index stores whole keys, never fingerprints,
 * and a lookup can never match a row of another key.
 */
public final class IndexKeys {
    private static final byte STRING = 1;
    private static final byte LONG = 2;
    private static final byte DECIMAL = 3;
    private static final byte BINARY = 4;

    private IndexKeys() {}

    public static byte[] encode(List<Object> key) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(32);
        for (Object v : key) {
            if (v instanceof CharSequence s) {
                put(out, STRING, s.toString().getBytes(StandardCharsets.UTF_8));
            } else if (v instanceof Long l) {
                put(out, LONG, ByteBuffer.allocate(8).putLong(l).array());
            } else if (v instanceof Integer i) {
                put(out, LONG, ByteBuffer.allocate(8).putLong(i).array()); // an int column holds the same numbers
            } else if (v instanceof BigDecimal d) {
                // The column's scale is fixed, so equal numbers have equal unscaled values and scales.
                byte[] unscaled = d.unscaledValue().toByteArray();
                put(
                        out,
                        DECIMAL,
                        ByteBuffer.allocate(4 + unscaled.length)
                                .putInt(d.scale())
                                .put(unscaled)
                                .array());
            } else if (v instanceof ByteBuffer b) {
                ByteBuffer copy = b.duplicate();
                byte[] bytes = new byte[copy.remaining()];
                copy.get(bytes);
                put(out, BINARY, bytes);
            } else {
                throw new IllegalArgumentException("a key value of type "
                        + (v == null ? "null" : v.getClass().getName()) + " cannot be indexed");
            }
        }
        return out.toByteArray();
    }

    private static void put(ByteArrayOutputStream out, byte tag, byte[] bytes) {
        out.write(tag);
        Varints.write(out, bytes.length);
        out.writeBytes(bytes);
    }

    /** The index part a key belongs to: a stable hash of its bytes, so parts split the keys evenly. */
    public static int part(byte[] key, int parts) {
        CRC32C crc = new CRC32C();
        crc.update(key);
        return (int) (crc.getValue() % parts);
    }
}
