package dev.ddb2iceberg.commit;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import org.apache.iceberg.Table;

/**
 * A mark a fanned-out job keeps in a table property while it runs ({@link LoadMark}, {@link
 * FanOutMark}): the record as JSON, read back or refused with what to do.
 */
final class MarkProperty {
    private static final ObjectMapper JSON = new ObjectMapper();

    private MarkProperty() {}

    /** The table's mark in {@code property}, or null when it is not set. */
    static <T> T read(Table table, String property, Class<T> type, String whenNoneRuns) {
        String value = table.properties().get(property);
        if (value == null) {
            return null;
        }
        try {
            return JSON.readValue(value, type);
        } catch (IOException e) {
            throw new IllegalStateException(
                    "The table's " + property + " property is not readable: " + value
                            + ". Remove it (ALTER TABLE … UNSET TBLPROPERTIES) once no " + whenNoneRuns + " runs.",
                    e);
        }
    }

    static String encode(Object mark) {
        try {
            return JSON.writeValueAsString(mark);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
