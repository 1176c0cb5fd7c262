package dev.ddb2iceberg.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class SequenceNumbersTest {
    @Test
    void comparesAsNumbersNotAsText() {
        assertTrue(SequenceNumbers.compare("9", "10") < 0, "9 < 10");
        assertTrue(SequenceNumbers.compare("100000000000000000000000", "99999999999999999999999") > 0);
        assertEquals(0, SequenceNumbers.compare("0042", "42"));
    }

    @Test
    void paddedNumbersSortAsTheirValues() {
        assertEquals("0".repeat(38) + "10", SequenceNumbers.pad("10"));
        assertTrue(SequenceNumbers.pad("9").compareTo(SequenceNumbers.pad("10")) < 0);
    }

    @Test
    void padIsTheSameWhateverZerosANumberCameWith() {
        String full = "3" + "0".repeat(38) + "7"; // 40 digits: its own padded form
        assertEquals(full, SequenceNumbers.pad(full));
        String padded = SequenceNumbers.pad("42");
        assertEquals(40, padded.length());
        assertEquals(padded, SequenceNumbers.pad(padded), "padding a padded number changes nothing");
        assertEquals(padded, SequenceNumbers.pad("00042"));
        assertEquals("0".repeat(40), SequenceNumbers.pad("0".repeat(40)));
        assertEquals("0".repeat(40), SequenceNumbers.pad("0"));
        assertThrows(IllegalArgumentException.class, () -> SequenceNumbers.pad("1".repeat(39) + "x"));
    }

    @Test
    void rejectsNonDigitsAndOverlongNumbers() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> SequenceNumbers.check("12a"));
        assertTrue(e.getMessage().contains("'12a'"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> SequenceNumbers.check("1".repeat(41)));
        assertThrows(IllegalArgumentException.class, () -> SequenceNumbers.check(""));
    }
}
