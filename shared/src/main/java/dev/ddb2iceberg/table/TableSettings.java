package dev.ddb2iceberg.table;

import dev.ddb2iceberg.config.ConfigurationException;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.RemovalPolicy;
import dev.ddb2iceberg.config.Settings;
import java.util.Map;

/**
 * Where the Iceberg table lives and how a new one is laid out.
 *
 * @param namespace the catalog namespace (the Glue database)
 * @param name the table's name
 * @param partitionKey the DynamoDB partition key attribute; null to infer it from the stream
 * @param partitionSpec e.g. {@code bucket(16, pk)}; null for that default on the partition key
 * @param formatVersion 2 (position deletes, readable by every engine) or 3 (deletion vectors)
 * @param location where a new table's files go, e.g. {@code s3://bucket/warehouse/db/table}; null to
 *     let the catalog choose (Glue uses the database's location)
 * @param columnTypes the user's column types by attribute, overriding inference (COLUMN_TYPES)
 * @param columnNames how a new table names its columns from the attributes (COLUMN_NAMES); an
 *     existing table keeps the rule it was made with
 * @param itemJson whether a new table gets a {@code _ddb_item} column holding each whole item as
 *     DynamoDB JSON (ITEM_JSON_COLUMN)
 * @param itemVariant whether a new format v3 table gets a {@code _ddb_variant} column holding each
 *     whole item as a variant (ITEM_VARIANT_COLUMN)
 * @param derivedFilesLocation where the pipeline's own files of the table go (the removals index, the
 *     key index), or null for beside the table's data. An S3 table bucket keeps only files its
 *     table's metadata references (it removes the others after a few days), so with
 *     {@code CATALOG_TYPE=s3tables} they go to the staging bucket by default, under
 *     {@code tables/<namespace>/<name>/} (DERIVED_FILES_LOCATION sets another place)
 * @param removals what removals do to rows (TTL_EXPIRIES, DELETES)
 * @param historyTable the change-history table beside the table, in the same namespace
 *     (HISTORY_TABLE), or null for none
 */
public record TableSettings(
        String namespace,
        String name,
        String partitionKey,
        String partitionSpec,
        int formatVersion,
        String location,
        Map<String, TypeMapping.Column> columnTypes,
        ColumnNames columnNames,
        boolean itemJson,
        boolean itemVariant,
        String derivedFilesLocation,
        RemovalPolicy removals,
        String historyTable) {

    public static TableSettings from(Environment env) {
        int version = env.positiveInt(Settings.TABLE_FORMAT_VERSION);
        if (version != 2 && version != 3) {
            throw new ConfigurationException("Environment variable TABLE_FORMAT_VERSION=" + version
                    + " is not supported: use 2 (every engine reads it) or 3 (deletion vectors).");
        }
        String namespace = env.string(Settings.TABLE_NAMESPACE);
        if (!namespace.matches("[a-z0-9_]+")) {
            throw new ConfigurationException("Environment variable TABLE_NAMESPACE='" + namespace
                    + "' must be lower-case letters, digits and underscores (Glue database naming rules).");
        }
        String name = env.required(Settings.TABLE_NAME);
        if (!name.matches("[a-z0-9_]+")) {
            throw new ConfigurationException("Environment variable TABLE_NAME='" + name
                    + "' must be lower-case letters, digits and underscores (Glue table naming rules).");
        }
        String partitionKey = env.string(Settings.PARTITION_KEY);
        String spec = env.string(Settings.PARTITION_SPEC);
        String location = env.string(Settings.TABLE_LOCATION);
        if (!location.isEmpty() && !location.matches("s3a?://[^/]+/.*")) {
            throw Environment.invalid(
                    Settings.TABLE_LOCATION,
                    location,
                    "an S3 location such as s3://my-bucket/warehouse/" + namespace + "/" + name);
        }
        Map<String, TypeMapping.Column> columnTypes =
                TypeHints.parse(env.string(Settings.COLUMN_TYPES), "Environment variable COLUMN_TYPES");
        ColumnNames columnNames = env.choice(Settings.COLUMN_NAMES, ColumnNames.class);
        for (String attribute : columnTypes.keySet()) {
            if (columnNames.columnFor(attribute) == null) {
                throw new ConfigurationException("Environment variable COLUMN_TYPES names attribute '" + attribute
                        + "', which gets no column under COLUMN_NAMES=" + columnNames.setting()
                        + " (names starting with _ddb_ are the pipeline's; under preserve, a name with a dot"
                        + " gets none either).");
            }
        }
        return new TableSettings(
                namespace,
                name,
                partitionKey.isEmpty() ? null : partitionKey,
                spec.isEmpty() ? null : spec,
                version,
                location.isEmpty() ? null : location,
                columnTypes,
                columnNames,
                env.bool(Settings.ITEM_JSON_COLUMN),
                itemVariant(env, version),
                derivedFilesLocation(env, namespace, name),
                RemovalPolicy.from(env),
                historyTable(env, name));
    }

    private static String historyTable(Environment env, String name) {
        String history = env.string(Settings.HISTORY_TABLE);
        if (history.isEmpty()) {
            return null;
        }
        if (!history.matches("[a-z0-9_]+")) {
            throw new ConfigurationException("Environment variable HISTORY_TABLE='" + history
                    + "' must be lower-case letters, digits and underscores (Glue table naming rules), such as " + name
                    + "_history; leave it empty for no change history.");
        }
        if (history.equals(name)) {
            throw new ConfigurationException("Environment variable HISTORY_TABLE='" + history
                    + "' names the table itself"
                    + " (TABLE_NAME): the change history needs a table of its own, such as " + name + "_history.");
        }
        return history;
    }

    /** This table with another removal policy (tests switch it on a live table). */
    public TableSettings withRemovals(RemovalPolicy policy) {
        return new TableSettings(
                namespace,
                name,
                partitionKey,
                partitionSpec,
                formatVersion,
                location,
                columnTypes,
                columnNames,
                itemJson,
                itemVariant,
                derivedFilesLocation,
                policy,
                historyTable);
    }

    private static String derivedFilesLocation(Environment env, String namespace, String name) {
        String set = env.string(Settings.DERIVED_FILES_LOCATION, "");
        if (!set.isEmpty()) {
            if (!set.matches("s3a?://[^/]+/.*")) {
                throw Environment.invalid(
                        Settings.DERIVED_FILES_LOCATION,
                        set,
                        "an S3 location such as s3://my-bucket/tables/" + namespace + "/" + name + "/");
            }
            return set.endsWith("/") ? set : set + "/";
        }
        if (env.choice(Settings.CATALOG_TYPE).equals("s3tables")) {
            return "s3://" + env.required(Settings.STAGING_BUCKET) + "/tables/" + namespace + "/" + name + "/";
        }
        return null;
    }

    private static boolean itemVariant(Environment env, int formatVersion) {
        boolean variant = env.bool(Settings.ITEM_VARIANT_COLUMN);
        if (variant && formatVersion < 3) {
            throw new ConfigurationException(
                    "Environment variable ITEM_VARIANT_COLUMN=true needs TABLE_FORMAT_VERSION=3:"
                            + " Iceberg's variant type exists from format v3 on.");
        }
        return variant;
    }
}
