package dev.ddb2iceberg.index;

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

    /**
     * The key's bytes. Each value's bytes are taken first and the result sized to fit, then filled
     * in place: a merge encodes every key it looks up and every row it writes, on every core.
     */
    public static byte[] encode(List<Object> key) {
        int n = key.size();
        byte[] tags = new byte[n];
        byte[][] values = new byte[n][];
        int size = 0;
        for (int k = 0; k < n; k++) {
            Object v = key.get(k);
            if (v instanceof CharSequence s) {
                tags[k] = STRING;
                values[k] = s.toString().getBytes(StandardCharsets.UTF_8);
            } else if (v instanceof Long l) {
                tags[k] = LONG;
                values[k] = ByteBuffer.allocate(8).putLong(l).array();
            } else if (v instanceof Integer i) {
                tags[k] = LONG;
                values[k] = ByteBuffer.allocate(8).putLong(i).array(); // an int column holds the same numbers
            } else if (v instanceof BigDecimal d) {
                // The column's scale is fixed, so equal numbers have equal unscaled values and scales.
                byte[] unscaled = d.unscaledValue().toByteArray();
                tags[k] = DECIMAL;
                values[k] = ByteBuffer.allocate(4 + unscaled.length)
                        .putInt(d.scale())
                        .put(unscaled)
                        .array();
            } else if (v instanceof ByteBuffer b) {
                ByteBuffer copy = b.duplicate();
                byte[] bytes = new byte[copy.remaining()];
                copy.get(bytes);
                tags[k] = BINARY;
                values[k] = bytes;
            } else {
                throw new IllegalArgumentException("a key value of type "
                        + (v == null ? "null" : v.getClass().getName()) + " cannot be indexed");
            }
            size += 1 + Varints.size(values[k].length) + values[k].length;
        }
        byte[] out = new byte[size];
        int at = 0;
        for (int k = 0; k < n; k++) {
            out[at++] = tags[k];
            at = Varints.write(out, at, values[k].length);
            System.arraycopy(values[k], 0, out, at, values[k].length);
            at += values[k].length;
        }
        return out;
    }

    /** The index part a key belongs to: a stable hash of its bytes, so parts split the keys evenly. */
    public static int part(byte[] key, int parts) {
        return part(key, 0, key.length, parts);
    }

    /** {@link #part(byte[], int)} of the key in {@code data[from, to)}. */
    static int part(byte[] data, int from, int to, int parts) {
        CRC32C crc = new CRC32C();
        crc.update(data, from, to - from);
        return (int) (crc.getValue() % parts);
    }
}
