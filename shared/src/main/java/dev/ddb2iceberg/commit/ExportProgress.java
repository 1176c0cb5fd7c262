package dev.ddb2iceberg.commit;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Map;
import java.util.OptionalLong;
import java.util.TreeMap;
import org.apache.iceberg.Table;

/**
 * How far each export load has come, recorded in the summary of the snapshot that loaded each
 * chunk (so rows and progress commit together) and carried forward by every later commit like the
 * checkpoint. A load resumes at its cursor; a finished one is never loaded again.
 */
public final class ExportProgress {
    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * One export's load.
     *
     * @param type FULL or INCREMENTAL
     * @param exportMillis the export's point in time
     * @param file the next data file to read (index in manifest-files.json)
     * @param line the next line of that file
     * @param items items read so far
     * @param done every data file is loaded
     */
    public record Load(String type, long exportMillis, int file, long line, long items, boolean done) {}

    private ExportProgress() {}

    public static Map<String, Load> read(Table table) {
        String value = Checkpoint.readProperty(table, PipelineProperties.EXPORT_LOADS);
        if (value == null) {
            return new TreeMap<>();
        }
        try {
            return new TreeMap<>(JSON.readValue(value, new TypeReference<Map<String, Load>>() {}));
        } catch (IOException e) {
            throw new IllegalStateException(
                    "The table's " + PipelineProperties.EXPORT_LOADS + " snapshot property is not readable: " + value,
                    e);
        }
    }

    public static String encode(Map<String, Load> loads) {
        try {
            return JSON.writeValueAsString(loads);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The point in time of the oldest export whose load is not finished, if any. */
    public static OptionalLong oldestUnfinished(Table table) {
        return read(table).values().stream()
                .filter(l -> !l.done())
                .mapToLong(Load::exportMillis)
                .min();
    }
}
