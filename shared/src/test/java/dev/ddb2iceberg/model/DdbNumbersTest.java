package dev.ddb2iceberg.model;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
