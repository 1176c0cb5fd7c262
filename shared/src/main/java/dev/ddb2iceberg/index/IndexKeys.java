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
     * The key's bytes, in one array sized first: a merge encodes every key it looks up and every
     * row it writes, on every core, so a number is written in place (no buffer of its own) and a
     * string's UTF-8 bytes are made once and copied once.
     */
    public static byte[] encode(List<Object> key) {
        int n = key.size();
        byte[][] values = new byte[n][]; // the bytes of each value that is not a number (null for a number)
        int size = 0;
        for (int k = 0; k < n; k++) {
            Object v = key.get(k);
            if (v instanceof Long || v instanceof Integer) {
                size += 2 + Long.BYTES; // tag, length 8, the number
                continue;
            }
            if (v instanceof CharSequence s) {
                values[k] = s.toString().getBytes(StandardCharsets.UTF_8);
            } else if (v instanceof BigDecimal d) {
                // The column's scale is fixed, so equal numbers have equal unscaled values and scales.
                byte[] unscaled = d.unscaledValue().toByteArray();
                values[k] = ByteBuffer.allocate(4 + unscaled.length)
                        .putInt(d.scale())
                        .put(unscaled)
                        .array();
            } else if (v instanceof ByteBuffer b) {
                ByteBuffer copy = b.duplicate();
                values[k] = new byte[copy.remaining()];
                copy.get(values[k]);
            } else {
                throw new IllegalArgumentException("a key value of type "
                        + (v == null ? "null" : v.getClass().getName()) + " cannot be indexed");
            }
            size += 1 + Varints.size(values[k].length) + values[k].length;
        }
        byte[] out = new byte[size];
        int at = 0;
        for (int k = 0; k < n; k++) {
            Object v = key.get(k);
            if (values[k] == null) {
                // An int column holds the same numbers as a long one, so both encode as a long.
                long number = v instanceof Long l ? l : (Integer) v;
                out[at++] = LONG;
                out[at++] = Long.BYTES;
                for (int shift = 56; shift >= 0; shift -= 8) {
                    out[at++] = (byte) (number >>> shift);
                }
                continue;
            }
            out[at++] = v instanceof CharSequence ? STRING : v instanceof BigDecimal ? DECIMAL : BINARY;
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
