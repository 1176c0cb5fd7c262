package dev.ddb2iceberg.config;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The catalogue: every setting the pipeline reads, once, with its environment variable, default,
 * description and the template parameter that sets it. The code reads a setting only through its
 * entry here ({@code env.positiveInt(Settings.MAX_CHANGES_PER_RUN)}); the template test checks
 * template.yaml against this list. A default written as null is computed where it is read.
 *
 * <p>Three kinds, by how a deployed function gets the value: {@link #param} (from a template
 * parameter), {@link #fixed} (a value the template writes itself) and {@link #unset} (Lambda sets
 * it, or it is an override for local runs and tests, left to its default when deployed).
 */
public final class Settings {
    private Settings() {}

    // ------------------------------------------------------------------ staging
    public static final Setting STAGING_BUCKET =
            param("STAGING_BUCKET", null, "ExistingBucketName", "the S3 bucket where stream changes are staged");
    public static final Setting STAGING_PREFIX = param(
            "STAGING_PREFIX", "staging/", "StagingPrefix", "the key prefix of staged changes in the staging bucket");
    public static final Setting QUARANTINE_PREFIX = fixed(
            "QUARANTINE_PREFIX",
            "quarantine/",
            "the key prefix of records the stager could not decode, kept for a look");

    // ------------------------------------------------------------------ S3 and AWS
    public static final Setting AWS_REGION = unset("AWS_REGION", "us-east-1", "the AWS region (Lambda sets it)");
    public static final Setting AWS_ACCESS_KEY_ID =
            unset("AWS_ACCESS_KEY_ID", "", "credentials' key id (Lambda sets it; else the SDK's default chain)");
    public static final Setting AWS_SECRET_ACCESS_KEY =
            unset("AWS_SECRET_ACCESS_KEY", "", "credentials' secret (Lambda sets it; else the SDK's default chain)");
    public static final Setting AWS_SESSION_TOKEN =
            unset("AWS_SESSION_TOKEN", "", "credentials' session token, if any");
    public static final Setting S3_ENDPOINT = unset(
            "S3_ENDPOINT",
            "",
            "an S3-compatible endpoint such as http://127.0.0.1:9000 for local runs; empty for AWS's");
    public static final Setting S3_PATH_STYLE =
            unset("S3_PATH_STYLE", null, "path-style S3 addressing; default true when S3_ENDPOINT is set, else false");

    // ------------------------------------------------------------------ catalog
    public static final Setting CATALOG_TYPE = choice(
            "CATALOG_TYPE",
            "glue",
            "Destination",
            true,
            "the Iceberg catalog: the Glue Data Catalog, an S3 table bucket, a REST or a JDBC catalog",
            "glue",
            "s3tables",
            "rest",
            "jdbc");
    public static final Setting CATALOG_URI = unset(
            "CATALOG_URI",
            null,
            "the catalog's endpoint; default Glue's or S3 Tables' REST endpoint in the region, required for rest and jdbc");
    public static final Setting GLUE_CATALOG_ID = fixed(
            "GLUE_CATALOG_ID",
            null,
            "the AWS account id that owns the Glue Data Catalog (the template sets it to AWS::AccountId)");
    public static final Setting TABLE_BUCKET_ARN = param(
            "TABLE_BUCKET_ARN",
            null,
            "ExistingTableBucketArn",
            "the S3 table bucket's ARN, arn:aws:s3tables:<region>:<account>:bucket/<name> (the template sets it)");
    public static final Setting CATALOG_WAREHOUSE = unset(
            "CATALOG_WAREHOUSE",
            null,
            "the catalog's warehouse; default none for rest, s3://<STAGING_BUCKET>/warehouse for jdbc");
    public static final Setting CATALOG_PROPERTIES = fixed(
            "CATALOG_PROPERTIES",
            "",
            "extra Iceberg catalog properties, key=value,key=value; S3FileIO's upload options (s3.sse.*,"
                    + " s3.acl, s3.write.tags.*, s3.write.storage-class, s3.checksum-enabled,"
                    + " s3.access-points.*) also turn off uploads from memory: each file is then staged on"
                    + " local disk first");
    public static final Setting CATALOG_NAME =
            unset("CATALOG_NAME", "ddb2iceberg", "the catalog's name (a JDBC catalog files its tables under it)");

    // ------------------------------------------------------------------ table
    public static final Setting TABLE_NAMESPACE = param(
            "TABLE_NAMESPACE",
            "ddb2iceberg",
            "GlueDatabaseName",
            "the catalog namespace (the Glue database) of the table");
    public static final Setting TABLE_NAME =
            param("TABLE_NAME", null, "TableName", "the Iceberg table to keep in step with DynamoDB");
    public static final Setting TABLE_FORMAT_VERSION =
            param("TABLE_FORMAT_VERSION", "2", "TableFormatVersion", "a new table's Iceberg format version: 2 or 3");
    public static final Setting PARTITION_KEY = param(
            "PARTITION_KEY",
            "",
            "PartitionKey",
            "the DynamoDB partition key attribute; empty to infer it from the stream");
    public static final Setting PARTITION_SPEC = param(
            "PARTITION_SPEC",
            "",
            "PartitionSpec",
            "a new table's partition spec, such as bucket(16, pk); empty for that on the partition key");
    public static final Setting TABLE_LOCATION = fixed(
            "TABLE_LOCATION",
            "",
            "where a new table's files go, such as s3://bucket/warehouse/db/table; empty for the catalog's choice");
    public static final Setting COLUMN_TYPES = param(
            "COLUMN_TYPES",
            "",
            "ColumnTypes",
            "column types by attribute, overriding inference, such as price=decimal(12,2)");
    public static final Setting COLUMN_NAMES = choice(
            "COLUMN_NAMES",
            "lower",
            "ColumnNames",
            true,
            "how a new table names its columns: lower (lower case, letters, digits and _, as Athena and Glue"
                    + " want) or preserve (the attribute names as they are); a table keeps the rule it was made with",
            "lower",
            "preserve");
    public static final Setting ITEM_JSON_COLUMN = param(
            "ITEM_JSON_COLUMN",
            "false",
            "ItemJsonColumn",
            "whether a new table gets a _ddb_item column with each whole item as DynamoDB JSON");
    public static final Setting ITEM_VARIANT_COLUMN = param(
            "ITEM_VARIANT_COLUMN",
            "false",
            "ItemVariantColumn",
            "whether a new format v3 table gets a _ddb_variant column with each whole item as a variant");
    public static final Setting DERIVED_FILES_LOCATION = unset(
            "DERIVED_FILES_LOCATION",
            null,
            "where the pipeline's own files of the table go; default beside the table, or in the staging bucket for s3tables");
    public static final Setting HISTORY_TABLE =
            param("HISTORY_TABLE", "", "HistoryTable", "the change-history table beside the table; empty for none");
    public static final Setting TTL_EXPIRIES = choice(
            "TTL_EXPIRIES",
            "delete",
            "TtlExpiries",
            true,
            "what a removal by DynamoDB's TTL does: delete the row, keep it, or mark it (_ddb_expired_at)",
            "delete",
            "keep",
            "mark");
    public static final Setting DELETES = choice(
            "DELETES",
            "hard",
            "Deletes",
            true,
            "what a removal by a user does: delete the row (hard) or mark it (soft, _ddb_deleted_at)",
            "hard",
            "soft");

    // ------------------------------------------------------------------ merge
    public static final Setting MERGE_MODE = choice(
            "MERGE_MODE",
            "scheduled",
            "MergeMode",
            true,
            "a merge a run, and more back to back while a backlog waits (scheduled), or merges every few seconds until shortly before the next run (continuous)",
            "scheduled",
            "continuous");
    public static final Setting MAX_CHANGES_PER_RUN =
            fixed("MAX_CHANGES_PER_RUN", "100000", "a merge stops taking staged objects once it has this many changes");
    public static final Setting MAX_STAGED_BYTES_PER_RUN = fixed(
            "MAX_STAGED_BYTES_PER_RUN",
            "67108864",
            "a merge stops taking staged objects once their compressed bytes reach this");
    public static final Setting MAX_COMMIT_ATTEMPTS =
            fixed("MAX_COMMIT_ATTEMPTS", "5", "how often a run re-plans after losing a commit race before giving up");
    public static final Setting IO_THREADS = fixed("IO_THREADS", "8", "parallel S3 reads and writes");
    public static final Setting KEY_INDEX = choice(
            "KEY_INDEX",
            "on",
            null,
            true,
            "find live rows through the key index (on) or by reading key columns (off)",
            "on",
            "off");
    public static final Setting KEY_INDEX_PARTS =
            fixed("KEY_INDEX_PARTS", "64", "parts a new key index spreads keys over");
    public static final Setting KEY_INDEX_CACHE_MB = unset(
            "KEY_INDEX_CACHE_MB",
            null,
            "memory a warm merger keeps index files in, in MB; default a third of the heap");
    public static final Setting KEY_INDEX_DISK_CACHE_MB = unset(
            "KEY_INDEX_DISK_CACHE_MB",
            null,
            "local disk (/tmp) a warm merger keeps index parts on, in MB; default three quarters of /tmp's free"
                    + " space (MergerEphemeralStorageMb), at most 10240; 0 none");
    public static final Setting REWRITE_FILES_BELOW_BYTES = fixed(
            "REWRITE_FILES_BELOW_BYTES",
            null,
            "data files under this size are folded into a merge's new files; default 4194304, 2097152 continuous; 0 never");
    public static final Setting REWRITE_BYTES_PER_MERGE = fixed(
            "REWRITE_BYTES_PER_MERGE",
            null,
            "the most bytes of small files one merge folds; default 33554432, 16777216 continuous");
    public static final Setting INITIAL_LOAD = choice(
            "INITIAL_LOAD",
            "none",
            "InitialLoad",
            true,
            "merge nothing until an export load has finished (parallel-export), or merge from the start (none);"
                    + " the parameter's spellings, ParallelExport and None, are read the same",
            "none",
            "parallel-export");
    public static final Setting MERGE_INTERVAL_SECONDS =
            fixed("MERGE_INTERVAL_SECONDS", "5", "continuous mode: seconds from one merge's start to the next one's");
    public static final Setting MERGE_IDLE_SECONDS =
            fixed("MERGE_IDLE_SECONDS", "30", "continuous mode: a run returns after this long with nothing staged");
    public static final Setting MERGE_RUN_SECONDS = fixed(
            "MERGE_RUN_SECONDS",
            "57",
            "a run's merges (continuous mode's, or a scheduled run's catching up with a backlog) commit by its scheduled time plus this");

    public static final Setting MERGE_FAN_OUT_MIN_BACKLOG_BYTES = fixed(
            "MERGE_FAN_OUT_MIN_BACKLOG_BYTES",
            "268435456",
            "a fanned-out merge (MergeFanOutWorkers) starts only once the staged backlog holds this many compressed"
                    + " bytes; below it, scheduled merges keep up on their own");

    // ------------------------------------------------------------------ export load
    public static final Setting EXPORT_LOAD_CONCURRENCY = param(
            "EXPORT_LOAD_CONCURRENCY",
            "100",
            "ExportLoadConcurrency",
            "workers a parallel export load runs at once, unless its input says");
    public static final Setting LOAD_BATCH_ITEMS =
            fixed("LOAD_BATCH_ITEMS", "1000000", "items a parallel export load's worker writes at once at most");

    // ------------------------------------------------------------------ maintenance
    public static final Setting COMPACTION_TARGET_FILE_SIZE_BYTES =
            fixed("COMPACTION_TARGET_FILE_SIZE_BYTES", "536870912", "compaction's target data file size");
    public static final Setting COMPACTION_MAX_BYTES_PER_RUN =
            fixed("COMPACTION_MAX_BYTES_PER_RUN", "2147483648", "the most bytes one maintenance run compacts");
    public static final Setting COMPACTION_MAX_GROUPS_PER_RUN =
            fixed("COMPACTION_MAX_GROUPS_PER_RUN", "16", "the most file groups one maintenance run compacts");
    public static final Setting COMPACTION_MIN_INPUT_FILES =
            fixed("COMPACTION_MIN_INPUT_FILES", "5", "a partition is compacted once it has this many small files");
    public static final Setting COMPACTION_DELETED_PERCENT = fixed(
            "COMPACTION_DELETED_PERCENT", "20", "a data file is compacted once this percentage of its rows is deleted");
    public static final Setting COMPACTION_MAX_SECONDS =
            fixed("COMPACTION_MAX_SECONDS", "600", "compaction starts no file group after this many seconds of a run");
    public static final Setting SNAPSHOT_MAX_AGE_HOURS =
            fixed("SNAPSHOT_MAX_AGE_HOURS", "120", "snapshots older than this many hours are expired");
    public static final Setting SNAPSHOT_MIN_KEEP = fixed("SNAPSHOT_MIN_KEEP", "1", "snapshots always kept");
    public static final Setting ORPHAN_MIN_AGE_HOURS =
            fixed("ORPHAN_MIN_AGE_HOURS", "72", "files no snapshot references are deleted once this many hours old");
    public static final Setting MANIFEST_REWRITE_THRESHOLD =
            fixed("MANIFEST_REWRITE_THRESHOLD", "100", "manifests are rewritten once a table has this many");
    public static final Setting HISTORY_RETENTION_DAYS = param(
            "HISTORY_RETENTION_DAYS", "0", "HistoryRetentionDays", "days of rows the change history keeps; 0 for all");
    public static final Setting HISTORY_SNAPSHOT_MAX_AGE_HOURS = fixed(
            "HISTORY_SNAPSHOT_MAX_AGE_HOURS",
            null,
            "snapshot expiry of the change history, in hours; default SNAPSHOT_MAX_AGE_HOURS");

    public static final Setting GLUE_TABLE_VERSIONS_KEPT = fixed(
            "GLUE_TABLE_VERSIONS_KEPT",
            "100",
            "CATALOG_TYPE glue: the newest Glue table versions of the table (and of its change history) that"
                    + " maintenance keeps, the current one among them; older ones are deleted (task catalog-versions):"
                    + " Glue allows 100,000 a table and 1,000,000 an account");
    public static final Setting GLUE_TABLE_VERSIONS_DELETED_PER_RUN = fixed(
            "GLUE_TABLE_VERSIONS_DELETED_PER_RUN",
            "2000",
            "CATALOG_TYPE glue: the most old table versions one maintenance run deletes of a table; the rest wait"
                    + " for the next run");
    public static final Setting GLUE_ENDPOINT = unset(
            "GLUE_ENDPOINT",
            "",
            "Glue's API endpoint for the catalog-versions task, such as moto_server's http://127.0.0.1:5000 in a"
                    + " test; empty for https://glue.<AWS_REGION>.amazonaws.com");

    // ------------------------------------------------------------------ logging and the runtime
    public static final Setting LOG_FORMAT = choice(
            "LOG_FORMAT",
            null,
            null,
            false,
            "log lines as JSON or text; default json in Lambda, text elsewhere",
            "json",
            "text");
    public static final Setting LOG_LEVEL =
            unset("LOG_LEVEL", null, "the pipeline's log level; default AWS_LAMBDA_LOG_LEVEL");
    public static final Setting AWS_LAMBDA_LOG_LEVEL = unset(
            "AWS_LAMBDA_LOG_LEVEL",
            "INFO",
            "the log level Lambda passes on from the function's LoggingConfig (the LogLevel parameter)");
    public static final Setting AWS_LAMBDA_FUNCTION_NAME =
            unset("AWS_LAMBDA_FUNCTION_NAME", null, "set by Lambda: when set, logs are JSON lines on standard output");
    public static final Setting JAVA_TOOL_OPTIONS = fixed(
            "JAVA_TOOL_OPTIONS",
            "",
            "JVM options, read by the JVM itself (the template asks for C1 only in the stager, for the parallel collector with the full JIT in the functions that merge or compact, and in the merger for a heap from 70 % of its memory)");

    private static final Map<String, Setting> BY_NAME = byName();

    /** Every setting, in the order above. */
    public static List<Setting> all() {
        return List.copyOf(BY_NAME.values());
    }

    /** The setting of this environment variable, or null if the catalogue has none. */
    public static Setting byName(String name) {
        return BY_NAME.get(name);
    }

    private static Setting param(String name, String defaultValue, String parameter, String description) {
        return new Setting(name, defaultValue, description, parameter, true, List.of());
    }

    private static Setting fixed(String name, String defaultValue, String description) {
        return new Setting(name, defaultValue, description, null, true, List.of());
    }

    private static Setting unset(String name, String defaultValue, String description) {
        return new Setting(name, defaultValue, description, null, false, List.of());
    }

    private static Setting choice(
            String name,
            String defaultValue,
            String parameter,
            boolean inTemplate,
            String description,
            String... choices) {
        return new Setting(name, defaultValue, description, parameter, inTemplate, List.of(choices));
    }

    private static Map<String, Setting> byName() {
        Map<String, Setting> settings = new LinkedHashMap<>();
        for (Field f : Settings.class.getDeclaredFields()) {
            if (f.getType() == Setting.class
                    && Modifier.isStatic(f.getModifiers())
                    && Modifier.isPublic(f.getModifiers())) {
                try {
                    Setting s = (Setting) f.get(null);
                    if (!s.name().equals(f.getName()) || settings.put(s.name(), s) != null) {
                        throw new IllegalStateException("Settings." + f.getName() + " names " + s.name());
                    }
                } catch (IllegalAccessException e) {
                    throw new IllegalStateException(e);
                }
            }
        }
        return Collections.unmodifiableMap(settings);
    }
}
