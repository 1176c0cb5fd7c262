package dev.ddb2iceberg.model;

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

    public static String stripLeadingZeros(String seq) {
        int i = 0;
        while (i < seq.length() - 1 && seq.charAt(i) == '0') {
            i++;
        }
        return seq.substring(i);
    }
}
