package dev.ddb2iceberg.table;

import dev.ddb2iceberg.commit.PipelineProperties;
import java.util.UUID;
import org.apache.iceberg.Table;

/**
 * Where the pipeline's own files of a table live (the removals index, the key index, the
 * checkpoint files): beside the
 * table's data, or where the table property {@link PipelineProperties#DERIVED_FILES_LOCATION} says. An S3 table bucket removes
 * every file its table's metadata does not reference, so on S3 Tables the merger sets the property
 * to a place in a general purpose bucket (see {@code TableSettings.derivedFilesLocation}). Snapshot
 * summaries name these files by their full path, so moving the location later loses nothing.
 */
public final class DerivedFiles {

    private DerivedFiles() {}

    /** The folder, ending in "/". */
    public static String location(Table table) {
        String set = table.properties().get(PipelineProperties.DERIVED_FILES_LOCATION);
        String base = set != null ? set : table.location();
        return base.endsWith("/") ? base : base + "/";
    }

    /**
     * A new name for the checkpoint file of a commit by run {@code runId} (see {@code Checkpoint}):
     * unique for every call, so a written file is never rewritten, even by a retried step.
     */
    public static String checkpointFile(Table table, String runId) {
        return location(table) + "checkpoints/" + runId + "-" + UUID.randomUUID() + ".txt.gz";
    }

    /** True when the files live outside the table's own location (so orphan cleanup lists them there). */
    public static boolean separate(Table table) {
        return table.properties().containsKey(PipelineProperties.DERIVED_FILES_LOCATION);
    }
}
