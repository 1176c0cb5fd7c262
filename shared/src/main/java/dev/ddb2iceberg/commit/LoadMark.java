package dev.ddb2iceberg.commit;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import org.apache.iceberg.Table;

/**
 * The mark a parallel export load leaves on its table while it runs (the table property {@link
 * PipelineProperties#PARALLEL_LOAD_IN_PROGRESS}): merges and other loads wait while it is set, so
 * the load's one commit finds the table as its plan saw it.
 *
 * @param execution the run that planned the load (a state machine execution's id), so a retried
 *     plan step finds it
 */
public record LoadMark(String loadId, String exportId, String started, String execution) {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** The table's mark, or null when no parallel load is in progress. */
    public static LoadMark read(Table table) {
        String value = table.properties().get(PipelineProperties.PARALLEL_LOAD_IN_PROGRESS);
        if (value == null) {
            return null;
        }
        try {
            return JSON.readValue(value, LoadMark.class);
        } catch (IOException e) {
            throw new IllegalStateException(
                    "The table's " + PipelineProperties.PARALLEL_LOAD_IN_PROGRESS
                            + " property is not readable: " + value
                            + ". Remove it (ALTER TABLE … UNSET TBLPROPERTIES) once no load"
                            + " runs.",
                    e);
        }
    }

    /** The mark as the property's value. */
    public String encode() {
        try {
            return JSON.writeValueAsString(this);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
