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
    void aNumberIsReadAsTheGeneralParserReadsItWhateverItsLengthAndZeros() {
        java.util.Random random = new java.util.Random(40);
        for (int i = 0; i < 20_000; i++) {
            StringBuilder digits = new StringBuilder("0".repeat(random.nextInt(4)));
            int length = 1 + random.nextInt(40);
            for (int d = 0; d < length; d++) {
                digits.append((char) ('0' + (i % 7 == 0 ? 9 : random.nextInt(10)))); // some all nines
            }
            String seq = digits.toString();
            assertEquals(new java.math.BigInteger(seq), SequenceNumbers.toBigInteger(seq), seq);
        }
        assertEquals(java.math.BigInteger.ZERO, SequenceNumbers.toBigInteger("0".repeat(40)), "zero padded");
        assertEquals(
                new java.math.BigInteger("1" + "0".repeat(18)),
                SequenceNumbers.toBigInteger("1" + "0".repeat(18)),
                "19 digits: a carry-free split");
        NumberFormatException e =
                assertThrows(NumberFormatException.class, () -> SequenceNumbers.toBigInteger("12345678901234567890x"));
        assertTrue(e.getMessage().contains("12345678901234567890x"), e.getMessage());
    }

    @Test
    void rejectsNonDigitsAndOverlongNumbers() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> SequenceNumbers.check("12a"));
        assertTrue(e.getMessage().contains("'12a'"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> SequenceNumbers.check("1".repeat(41)));
        assertThrows(IllegalArgumentException.class, () -> SequenceNumbers.check(""));
    }
}
