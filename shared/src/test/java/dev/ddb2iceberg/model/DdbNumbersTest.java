package dev.ddb2iceberg.model;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class DdbNumbersTest {
    @Test
    void acceptsDynamoDbsWholeRange() {
        for (String ok : new String[] {
            "0",
            "-0",
            "1E-130",
            "-1E-130",
            "9.9999999999999999999999999999999999999E+125",
            "12345678901234567890123456789012345678",
            "0.00000000000000000000000000000000000012345678901234567890123456789012345678",
            "1.50",
            "100000000000000000000000000000000000000000000"
        }) {
            assertDoesNotThrow(() -> DdbNumbers.check(ok), ok);
            assertDoesNotThrow(() -> DdbNumbers.validate(ok), ok);
        }
    }

    /**
     * validate's shortcut for plain decimals against check's parse, on numbers around its edges (38
     * and 39 digits, zeros, points, signs) and on text that only looks like a number.
     */
    @Test
    void validateRefusesExactlyWhatCheckRefuses() {
        List<String> texts = new ArrayList<>(List.of(
                "",
                "-",
                ".",
                "-.",
                "1.",
                ".5",
                "-.5",
                "+5",
                "1..2",
                "1.2.3",
                " 12",
                "12 ",
                "1e5",
                "0x10",
                "--1",
                "00012",
                "-0.000",
                "0.0000000000000000000000000000000000001"));
        Random random = new Random(7);
        for (int i = 0; i < 5_000; i++) {
            int digits = 1 + random.nextInt(42); // up to 42: either side of 38
            StringBuilder s = new StringBuilder(random.nextBoolean() ? "-" : "");
            int point = random.nextInt(3) == 0 ? random.nextInt(digits + 1) : -1;
            for (int d = 0; d < digits; d++) {
                if (d == point) {
                    s.append('.');
                }
                s.append(random.nextInt(4) == 0 ? '0' : (char) ('0' + random.nextInt(10)));
            }
            texts.add(s.toString());
        }
        for (String text : texts) {
            String checked = outcome(() -> DdbNumbers.check(text));
            String validated = outcome(() -> DdbNumbers.validate(text));
            assertEquals(checked, validated, "'" + text + "': check and validate disagree");
        }
    }

    /** "ok", or the refusal's message. */
    private static String outcome(Runnable check) {
        try {
            check.run();
            return "ok";
        } catch (IllegalArgumentException refused) {
            return refused.getMessage();
        }
    }

    @Test
    void rejectsMoreThan38SignificantDigits() {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> DdbNumbers.check("123456789012345678901234567890123456789"));
        assertTrue(e.getMessage().contains("39 significant digits"), e.getMessage());
    }

    @Test
    void rejectsOutOfRangeAndNonNumbers() {
        assertThrows(IllegalArgumentException.class, () -> DdbNumbers.check("1E+126"));
        assertThrows(IllegalArgumentException.class, () -> DdbNumbers.check("1E-131"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> DdbNumbers.check("twelve"));
        assertTrue(e.getMessage().contains("'twelve' is not a decimal number"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> DdbNumbers.check("NaN"));
    }
}
