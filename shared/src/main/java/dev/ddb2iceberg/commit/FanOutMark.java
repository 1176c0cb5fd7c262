package dev.ddb2iceberg.commit;

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
    /** The table's mark, or null when none is set. */
    public static FanOutMark read(Table table) {
        return MarkProperty.read(
                table, PipelineProperties.FAN_OUT_MERGE_IN_PROGRESS, FanOutMark.class, "fanned-out merge");
    }

    /** The mark as the property's value. */
    public String encode() {
        return MarkProperty.encode(this);
    }
}
