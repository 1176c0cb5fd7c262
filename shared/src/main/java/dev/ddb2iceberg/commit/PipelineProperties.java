package dev.ddb2iceberg.commit;

/**
 * Every key the pipeline writes into a table's metadata, in one place (as Iceberg's
 * {@code SnapshotSummary} and {@code TableProperties}). Summary keys travel with the snapshot that
 * made the change they describe; table properties describe the table as a whole.
 */
public final class PipelineProperties {
    private PipelineProperties() {}

    // ---------------------------------------------------------------- snapshot summary

    /**
     * The checkpoint as tables merged before 2026-12-08 kept it: the staged objects applied so far,
     * comma-separated, in the summary itself (see {@link Checkpoint}). Still read; no longer written.
     */
    public static final String APPLIED = "ddb2iceberg.applied-staged-objects";

    /**
     * The checkpoint: the file that lists the staged objects applied so far (see {@link Checkpoint}),
     * so that a summary stays the same small size however many objects a merge applies.
     */
    public static final String APPLIED_FILE = "ddb2iceberg.applied-staged-objects-file";

    /** How many staged objects the checkpoint file lists (for people and status; never decides). */
    public static final String APPLIED_COUNT = "ddb2iceberg.applied-staged-objects-count";

    /**
     * The id of the run (a merge, an export load or a history append) that wrote the snapshot;
     * settles unknown outcomes. Maintenance never sets it: a snapshot with it is a merger snapshot
     * to {@link Checkpoint}.
     */
    public static final String RUN_ID = "ddb2iceberg.merge-run-id";

    /**
     * The approximate time (epoch ms) of the oldest stream change ever merged, which shows how far
     * back the staged stream reaches when an export is loaded.
     */
    public static final String STREAM_SINCE = "ddb2iceberg.stream-since-millis";

    /** A JSON object of export id to its load's cursor (see {@link ExportProgress}). */
    public static final String EXPORT_LOADS = "ddb2iceberg.export-loads";

    /** The files that remember recent removals (the name is older than the concept's). */
    public static final String REMOVALS = "ddb2iceberg.tombstones";

    /** The manifest of the key index that describes this snapshot. */
    public static final String KEY_INDEX = "ddb2iceberg.key-index";

    /**
     * Of a maintenance commit: the delta file with the new locations of the rows it moved
     * (compaction), or none. The index of such a snapshot is its parent's plus that delta. A snapshot
     * with neither this nor {@link #KEY_INDEX} was made by another writer.
     */
    public static final String KEY_INDEX_MOVES = "ddb2iceberg.key-index-moves";

    // ---------------------------------------------------------------- table properties

    /** The key attributes and their DynamoDB types, e.g. {@code pk:S,sk:N}. */
    public static final String KEYS = "ddb2iceberg.keys";

    /** Where derived files (key index, removals, load records) go when not beside the table's data. */
    public static final String DERIVED_FILES_LOCATION = "ddb2iceberg.derived-files-location";

    /**
     * How the table's columns were named from its attributes (lower or preserve, COLUMN_NAMES when it
     * was made); absent on tables made before the setting, which preserve.
     */
    public static final String COLUMN_NAMES = "ddb2iceberg.column-names";

    /** The removal policy the last merge applied to TTL expiries, so a change of policy is noticed. */
    public static final String TTL_EXPIRIES = "ddb2iceberg.ttl-expiries";

    /** The removal policy the last merge applied to user deletes. */
    public static final String DELETES = "ddb2iceberg.deletes";

    /** The parallel load in progress (JSON of its mark); merges wait while it is set. */
    public static final String PARALLEL_LOAD_IN_PROGRESS = "ddb2iceberg.parallel-export-load";

    /**
     * The fanned-out merge in progress (JSON of its {@link FanOutMark}); scheduled merges and loads
     * wait while it is set, so its one commit finds the table as its plan saw it.
     */
    public static final String FAN_OUT_MERGE_IN_PROGRESS = "ddb2iceberg.fan-out-merge";

    /** Of a history table: the table whose changes it holds, {@code namespace.name}. */
    public static final String HISTORY_OF = "ddb2iceberg.history-of";

    /**
     * Of a history table: epoch milliseconds before which maintenance dropped its changes
     * (HISTORY_RETENTION_DAYS). An append skips older changes: they would be dropped anyway, and a
     * staged copy of a dropped change could no longer be told from a new one.
     */
    public static final String HISTORY_KEPT_FROM = "ddb2iceberg.history-kept-from";
}
