package dev.ddb2iceberg.commit;

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
    /** The table's mark, or null when none is set. */
    public static LoadMark read(Table table) {
        return MarkProperty.read(table, PipelineProperties.PARALLEL_LOAD_IN_PROGRESS, LoadMark.class, "load");
    }

    /** The mark as the property's value. */
    public String encode() {
        return MarkProperty.encode(this);
    }
}
