package dev.ddb2iceberg.commit;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import org.apache.iceberg.Table;

/**
 * The mark a fanned-out merge leaves on its table while it runs (the table property {@link
 * PipelineProperties#FAN_OUT_MERGE_IN_PROGRESS}). Scheduled merges wait while it is set: a later
 * staged change merged before the fan-out's commit would be overwritten by an older one, and its
 * commit would refuse anyway (it validates that nothing added rows since its plan).
 *
 * @param mergeId the fan-out's id, which names its folder and its commit's run id
 * @param started when its plan marked the table (ISO-8601)
 * @param execution the run that planned it (a state machine execution's id, or a local run's), so a
 *     retried plan step finds its own mark
 */
public record FanOutMark(String mergeId, String started, String execution) {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** The table's mark, or null when no fanned-out merge is in progress. */
    public static FanOutMark read(Table table) {
        String value = table.properties().get(PipelineProperties.FAN_OUT_MERGE_IN_PROGRESS);
        if (value == null) {
            return null;
        }
        try {
            return JSON.readValue(value, FanOutMark.class);
        } catch (IOException e) {
            throw new IllegalStateException(
                    "The table's " + PipelineProperties.FAN_OUT_MERGE_IN_PROGRESS + " property is not readable: "
                            + value + ". Remove it (ALTER TABLE … UNSET TBLPROPERTIES) once no fanned-out merge runs.",
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
