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
     * The key's bytes. A merge encodes every key it looks up and every row it writes, on every core,
     * so the common values (ASCII strings, numbers) are written straight into the result, sized
     * first; any other string is encoded to UTF-8 on its own first, as {@link String#getBytes} does.
     */
    public static byte[] encode(List<Object> key) {
        int n = key.size();
        byte[][] encoded = null; // the bytes of values not written straight in (made when first needed)
        int size = 0;
        for (int k = 0; k < n; k++) {
            Object v = key.get(k);
            int length;
            if (v instanceof String s && isAscii(s)) {
                length = s.length();
            } else if (v instanceof Long || v instanceof Integer) {
                length = Long.BYTES; // an int column holds the same numbers: encoded as the long it equals
            } else {
                if (encoded == null) {
                    encoded = new byte[n][];
                }
                encoded[k] = bytesOf(v);
                length = encoded[k].length;
            }
            size += 1 + Varints.size(length) + length;
        }
        byte[] out = new byte[size];
        int at = 0;
        for (int k = 0; k < n; k++) {
            Object v = key.get(k);
            if (encoded != null && encoded[k] != null) {
                out[at++] = tagOf(v);
                at = Varints.write(out, at, encoded[k].length);
                System.arraycopy(encoded[k], 0, out, at, encoded[k].length);
                at += encoded[k].length;
            } else if (v instanceof String s) {
                out[at++] = STRING;
                at = Varints.write(out, at, s.length());
                for (int i = 0; i < s.length(); i++) {
                    out[at++] = (byte) s.charAt(i); // ASCII: each char is its one UTF-8 byte
                }
            } else {
                out[at++] = LONG;
                at = Varints.write(out, at, Long.BYTES);
                long l = ((Number) v).longValue();
                for (int i = Long.BYTES - 1; i >= 0; i--) {
                    out[at + i] = (byte) l; // big-endian
                    l >>>= 8;
                }
                at += Long.BYTES;
            }
        }
        return out;
    }

    private static boolean isAscii(String s) {
        for (int i = 0; i < s.length(); i++) {
            if (s.charAt(i) >= 0x80) {
                return false;
            }
        }
        return true;
    }

    private static byte tagOf(Object v) {
        if (v instanceof CharSequence) {
            return STRING;
        } else if (v instanceof BigDecimal) {
            return DECIMAL;
        }
        return BINARY;
    }

    /** The bytes of a value {@link #encode} does not write straight in: a string's UTF-8, a decimal, a binary value. */
    private static byte[] bytesOf(Object v) {
        if (v instanceof CharSequence s) {
            return s.toString().getBytes(StandardCharsets.UTF_8);
        } else if (v instanceof BigDecimal d) {
            // The column's scale is fixed, so equal numbers have equal unscaled values and scales.
            byte[] unscaled = d.unscaledValue().toByteArray();
            return ByteBuffer.allocate(4 + unscaled.length)
                    .putInt(d.scale())
                    .put(unscaled)
                    .array();
        } else if (v instanceof ByteBuffer b) {
            ByteBuffer copy = b.duplicate();
            byte[] bytes = new byte[copy.remaining()];
            copy.get(bytes);
            return bytes;
        }
        throw new IllegalArgumentException(
                "a key value of type " + (v == null ? "null" : v.getClass().getName()) + " cannot be indexed");
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
