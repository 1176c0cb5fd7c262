package dev.ddb2iceberg.model;

import java.math.BigDecimal;

/**
 * DynamoDB's rules for numbers: at most 38 significant digits, positive magnitudes from 1E-130 up
 * to (but not including) 1E+126, negative likewise, and zero.
 */
public final class DdbNumbers {
    public static final int MAX_SIGNIFICANT_DIGITS = 38;
    private static final BigDecimal MIN_MAGNITUDE = new BigDecimal("1E-130");
    private static final BigDecimal MAX_EXCLUSIVE_MAGNITUDE = new BigDecimal("1E+126");

    private DdbNumbers() {}

    /**
     * {@link #check}, without parsing the common case: a plain decimal ({@code -}, digits, a point
     * and digits) of at most 38 digits is always a DynamoDB number (at most 38 significant digits,
     * a magnitude of at least 1E-38 unless zero and below 1E+38). A merge checks every number of
     * every item it reads, and parsing each into a {@link BigDecimal} was half a percent of it.
     */
    public static void validate(String text) {
        if (!isPlainWithinDigits(text)) {
            check(text); // anything else: parsed, and refused saying why
        }
    }

    private static boolean isPlainWithinDigits(String text) {
        int n = text == null ? 0 : text.length();
        int i = n > 0 && text.charAt(0) == '-' ? 1 : 0;
        int digits = 0;
        boolean point = false;
        boolean digitBeforePoint = false;
        for (; i < n; i++) {
            char c = text.charAt(i);
            if (c >= '0' && c <= '9') {
                digits++;
                digitBeforePoint |= !point;
            } else if (c == '.' && !point && digitBeforePoint) {
                point = true;
            } else {
                return false;
            }
        }
        return digits > 0 && digits <= MAX_SIGNIFICANT_DIGITS && text.charAt(n - 1) != '.';
    }

    /** Throws {@link IllegalArgumentException} saying what is wrong unless {@code text} is a DynamoDB number. */
    public static BigDecimal check(String text) {
        if (text == null || text.isEmpty()) {
            throw new IllegalArgumentException("N value is empty");
        }
        BigDecimal value;
        try {
            value = new BigDecimal(text.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("N value '" + abbreviate(text) + "' is not a decimal number");
        }
        if (value.signum() == 0) {
            return value;
        }
        BigDecimal stripped = value.stripTrailingZeros();
        if (stripped.precision() > MAX_SIGNIFICANT_DIGITS) {
            throw new IllegalArgumentException("N value '" + abbreviate(text) + "' has " + stripped.precision()
                    + " significant digits; DynamoDB allows at most " + MAX_SIGNIFICANT_DIGITS);
        }
        BigDecimal magnitude = value.abs();
        if (magnitude.compareTo(MIN_MAGNITUDE) < 0 || magnitude.compareTo(MAX_EXCLUSIVE_MAGNITUDE) >= 0) {
            throw new IllegalArgumentException(
                    "N value '" + abbreviate(text)
                            + "' is outside DynamoDB's range (magnitude 1E-130 to 9.9999999999999999999999999999999999999E+125)");
        }
        return value;
    }

    private static String abbreviate(String text) {
        return text.length() <= 60 ? text : text.substring(0, 57) + "...";
    }
}
