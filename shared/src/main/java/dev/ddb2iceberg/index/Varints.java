package dev.ddb2iceberg.index;

import java.io.ByteArrayOutputStream;
import java.io.DataInput;
import java.io.IOException;
import java.io.StreamCorruptedException;

/** Unsigned LEB128 integers: small numbers (lengths, positions) take one or two bytes. */
final class Varints {
    private Varints() {}

    /**
     * Writes {@code value} to {@code out} in one write: each of its writes takes a lock, so a small
     * array a number costs less than a lock a byte (not measured apart: a fraction of a percent).
     */
    static void write(ByteArrayOutputStream out, long value) {
        byte[] bytes = new byte[10]; // the most a 64-bit value takes
        out.write(bytes, 0, write(bytes, 0, value));
    }

    /** Writes {@code value} into {@code out} at {@code at}; returns the position after it. */
    static int write(byte[] out, int at, long value) {
        long v = value;
        while ((v & ~0x7FL) != 0) {
            out[at++] = (byte) ((v & 0x7F) | 0x80);
            v >>>= 7;
        }
        out[at++] = (byte) v;
        return at;
    }

    /** The bytes {@link #write} takes for {@code value}. */
    static int size(long value) {
        int n = 1;
        for (long v = value >>> 7; v != 0; v >>>= 7) {
            n++;
        }
        return n;
    }

    static long read(DataInput in) throws IOException {
        long value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            byte b = in.readByte();
            value |= (long) (b & 0x7F) << shift;
            if ((b & 0x80) == 0) {
                return value;
            }
        }
        throw new StreamCorruptedException("a varint longer than 64 bits: the index file is damaged");
    }
}
