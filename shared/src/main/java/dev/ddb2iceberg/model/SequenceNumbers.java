package dev.ddb2iceberg.model;

import java.math.BigInteger;

/**
 * DynamoDB Streams sequence numbers are decimal strings of varying length (21 to 40 digits), so
 * they must be compared as numbers, never as text ("9" comes before "10").
 */
public final class SequenceNumbers {
    /** The longest sequence number DynamoDB issues. */
    public static final int MAX_DIGITS = 40;

    private SequenceNumbers() {}

    /** Throws {@link IllegalArgumentException} unless {@code seq} is 1 to 40 decimal digits. */
    public static String check(String seq) {
        if (seq == null || seq.isEmpty()) {
            throw new IllegalArgumentException("sequence number is missing");
        }
        if (seq.length() > MAX_DIGITS) {
            throw new IllegalArgumentException(
                    "sequence number '" + seq + "' is longer than " + MAX_DIGITS + " digits");
        }
        for (int i = 0; i < seq.length(); i++) {
            char c = seq.charAt(i);
            if (c < '0' || c > '9') {
                throw new IllegalArgumentException("sequence number '" + seq + "' is not a decimal number");
            }
        }
        return seq;
    }

    /** Numeric comparison of two valid sequence numbers. */
    public static int compare(String a, String b) {
        String x = stripLeadingZeros(a);
        String y = stripLeadingZeros(b);
        if (x.length() != y.length()) {
            return Integer.compare(x.length(), y.length());
        }
        return x.compareTo(y);
    }

    /** Zero-padded to 40 digits, so that text order of padded numbers is their numeric order. */
    public static String pad(String seq) {
        if (check(seq).length() == MAX_DIGITS) {
            return seq; // already its padded form (staged and indexed numbers mostly are): no copies
        }
        String s = stripLeadingZeros(seq);
        return "0".repeat(MAX_DIGITS - s.length()) + s;
    }

    /**
     * The number {@code seq} (decimal digits, zero-padded or not) is, as {@code new BigInteger(seq)}
     * gives it. A merge turns every written row's sequence number into its key index entry and
     * compares every change with its row's: numbers of up to 36 digits (DynamoDB's are mostly 21 to
     * 30) are read here as two longs, without the substrings the general parser makes.
     */
    public static BigInteger toBigInteger(String seq) {
        int n = seq.length();
        int from = 0;
        while (from < n - 1 && seq.charAt(from) == '0') {
            from++;
        }
        int digits = n - from;
        if (digits <= 18) {
            return BigInteger.valueOf(digits(seq, from, n));
        }
        if (digits > 36) {
            return new BigInteger(seq);
        }
        long high = digits(seq, from, n - 18); // at most 18 digits, then the low 18
        long low = digits(seq, n - 18, n);
        long product = high * E18; // the low 64 bits of high x 10^18 (both non-negative)
        long top = Math.multiplyHigh(high, E18);
        long bottom = product + low;
        if (Long.compareUnsigned(bottom, product) < 0) {
            top++; // the carry
        }
        byte[] magnitude = new byte[16];
        for (int i = 0; i < 8; i++) {
            magnitude[7 - i] = (byte) (top >>> (8 * i));
            magnitude[15 - i] = (byte) (bottom >>> (8 * i));
        }
        return new BigInteger(1, magnitude);
    }

    private static final long E18 = 1_000_000_000_000_000_000L;

    /** The value of the decimal digits {@code s[from, to)} (at most 18). */
    private static long digits(String s, int from, int to) {
        long v = 0;
        for (int i = from; i < to; i++) {
            char c = s.charAt(i);
            if (c < '0' || c > '9') {
                throw new NumberFormatException("sequence number '" + s + "' is not a decimal number");
            }
            v = v * 10 + (c - '0');
        }
        return v;
    }

    public static String stripLeadingZeros(String seq) {
        int i = 0;
        while (i < seq.length() - 1 && seq.charAt(i) == '0') {
            i++;
        }
        return seq.substring(i);
    }
}
