package dev.ddb2iceberg.table;

import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.config.ConfigurationException;
import dev.ddb2iceberg.config.RemovalPolicy;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.SortOrder;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.UpdateProperties;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.SupportsNamespaces;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.AlreadyExistsException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Creates the table on the merger's first run, from the first staged changes: the DynamoDB key
 * attributes become required identifier columns, attributes seen become typed columns, and the
 * layout defaults follow DESIGN.md (bucket(16, partition key), sorted by the keys, format v2).
 */
public final class TableCreator {
    private static final Logger LOG = LoggerFactory.getLogger(TableCreator.class);

    private TableCreator() {}

    /** The table, or null if it does not exist yet (one catalog call, not an exists-then-load pair). */
    public static Table loadIfExists(Catalog catalog, TableIdentifier id) {
        try {
            return catalog.loadTable(id);
        } catch (NoSuchTableException e) {
            return null;
        }
    }

    /**
     * The table with the settings that apply to an existing table: today the place of the pipeline's
     * own files ({@link DerivedFiles}), set in one metadata commit when it differs (say, a table
     * made before the setting existed).
     */
    public static Table adopt(Table table, TableSettings settings) {
        String wanted = settings.derivedFilesLocation();
        UpdateProperties update = table.updateProperties();
        boolean changed = false;
        if (wanted != null && !wanted.equals(table.properties().get(PipelineProperties.DERIVED_FILES_LOCATION))) {
            update.set(PipelineProperties.DERIVED_FILES_LOCATION, wanted);
            changed = true;
            LOG.info("The pipeline's own files of {} (removals index, key index) now go to {}", table.name(), wanted);
        }
        changed |= recordRemovalPolicy(table, settings.removals(), update);
        changed |= recordColumnNames(table, settings.columnNames(), update);
        if (changed) {
            update.commit();
            table.refresh();
        }
        return table;
    }

    /**
     * Records the removal policy in the table's properties; a policy that differs from the recorded
     * one applies from this merge on, and the log says so (rows earlier merges removed or kept stay
     * as they are: a change of policy never rewrites the past).
     */
    private static boolean recordRemovalPolicy(Table table, RemovalPolicy policy, UpdateProperties update) {
        String ttl = table.properties().get(PipelineProperties.TTL_EXPIRIES);
        String deletes = table.properties().get(PipelineProperties.DELETES);
        boolean changed = false;
        if (!policy.ttlExpiries().setting().equals(ttl)) {
            update.set(PipelineProperties.TTL_EXPIRIES, policy.ttlExpiries().setting());
            changed = true;
            if (ttl != null) {
                LOG.warn(
                        "TTL_EXPIRIES of {} changed from {} to {}: it applies to expiries merged from now on; rows of items"
                                + " that expired before keep what the old setting did to them",
                        table.name(),
                        ttl,
                        policy.ttlExpiries().setting());
            }
        }
        if (!policy.deletes().setting().equals(deletes)) {
            update.set(PipelineProperties.DELETES, policy.deletes().setting());
            changed = true;
            if (deletes != null) {
                LOG.warn(
                        "DELETES of {} changed from {} to {}: it applies to deletions merged from now on; rows of items"
                                + " deleted before keep what the old setting did to them",
                        table.name(),
                        deletes,
                        policy.deletes().setting());
            }
        }
        return changed;
    }

    /** Tables whose kept column-name rule the log has already explained, once per container. */
    private static final Set<String> TOLD_COLUMN_NAMES = ConcurrentHashMap.newKeySet();

    /**
     * Records the column-name rule on a table made before the rule was recorded (it took the
     * attribute names as they were: preserve). A table keeps its rule whatever COLUMN_NAMES says
     * later: renaming columns would break every query and view on the table. The log says so, once.
     */
    private static boolean recordColumnNames(Table table, ColumnNames wanted, UpdateProperties update) {
        String recorded = table.properties().get(PipelineProperties.COLUMN_NAMES);
        ColumnNames kept = ColumnNames.of(table.properties());
        if (kept != wanted && TOLD_COLUMN_NAMES.add(table.uuid().toString())) {
            LOG.warn(
                    "COLUMN_NAMES is {} but table {} keeps the column names it was made with ({}): renaming columns"
                            + " would break every query on it. COLUMN_NAMES applies to new tables.",
                    wanted.setting(),
                    table.name(),
                    kept.setting());
        }
        if (recorded == null) {
            update.set(PipelineProperties.COLUMN_NAMES, kept.setting());
            return true;
        }
        return false;
    }

    /** Loads the table, creating it first if it does not exist (another merger may win the race). */
    public static Table loadOrCreate(
            Catalog catalog, TableIdentifier id, TableSettings settings, List<Change> changes) {
        Table existing = loadIfExists(catalog, id);
        if (existing != null) {
            return adopt(existing, settings);
        }
        if (catalog instanceof SupportsNamespaces ns && !ns.namespaceExists(id.namespace())) {
            try {
                ns.createNamespace(id.namespace());
            } catch (AlreadyExistsException raced) {
                // another merger created it first
            }
        }
        Map<String, String> keyTypes = keyTypes(changes, settings.partitionKey());
        ColumnNames names = settings.columnNames();
        List<Types.NestedField> fields = new ArrayList<>();
        int id0 = 1;
        Map<String, Type> keyColumnTypes = keyColumnTypes(changes, keyTypes.keySet());
        List<Integer> identifiers = new ArrayList<>();
        Set<String> taken = new HashSet<>();
        for (String key : keyTypes.keySet()) {
            String column = names.keyColumnFor(key, taken);
            taken.add(column.toLowerCase(Locale.ROOT));
            identifiers.add(id0);
            // A renamed key's column keeps the attribute's name in its doc; others have none, as before.
            String doc = column.equals(key) ? null : ColumnNames.doc(keyTypes.get(key), key, column);
            fields.add(Types.NestedField.required(id0++, column, keyColumnTypes.get(key), doc));
        }
        fields.add(Types.NestedField.required(
                id0++,
                TableLayout.SEQ,
                Types.StringType.get(),
                "DynamoDB Streams sequence number of the change that wrote this row (40 digits)"));
        fields.add(Types.NestedField.optional(
                id0++,
                TableLayout.TIME,
                Types.TimestampType.withZone(),
                "approximate time DynamoDB made the change that wrote this row"));
        fields.add(Types.NestedField.optional(
                id0++,
                TableLayout.OVERFLOW,
                Types.MapType.ofRequired(id0++, id0++, Types.StringType.get(), Types.StringType.get()),
                "attributes no typed column holds exactly, as DynamoDB JSON"));
        if (settings.itemJson()) {
            fields.add(Types.NestedField.optional(
                    id0++,
                    TableLayout.ITEM,
                    Types.StringType.get(),
                    "the whole item as DynamoDB JSON (ITEM_JSON_COLUMN)"));
        }
        if (settings.itemVariant()) {
            fields.add(Types.NestedField.optional(
                    id0++,
                    TableLayout.VARIANT,
                    Types.VariantType.get(),
                    "the whole item as a variant (ITEM_VARIANT_COLUMN)"));
        }
        Schema keysOnly = new Schema(fields, Set.copyOf(identifiers));
        TableLayout layout = TableLayout.of(keysOnly, TableLayout.keysProperty(keyTypes), names);
        // The user's typed columns exist from the start, so the partition spec may use them. They go
        // through schemaChanges as attributes seen (named by the same rule): a NULL tells it only the
        // name, and the hint gives the type.
        List<Map<String, DdbValue>> hinted = new ArrayList<>();
        settings.columnTypes().forEach((attribute, column) -> {
            if (!keyTypes.containsKey(attribute)) {
                hinted.add(Map.of(attribute, DdbValue.Null.INSTANCE));
            }
        });
        List<Map<String, DdbValue>> images = new ArrayList<>(hinted);
        changes.stream().filter(c -> c.newImage() != null).forEach(c -> images.add(c.newImage()));
        int[] nextId = {id0};
        for (TableLayout.Addition column : layout.schemaChanges(
                        images, settings.columnTypes(), () -> 1_000_000 + nextId[0]++)
                .additions()) {
            fields.add(Types.NestedField.optional(nextId[0]++, column.name(), column.type(), column.doc()));
        }
        Schema schema = new Schema(fields, Set.copyOf(identifiers));
        layout = TableLayout.of(schema, TableLayout.keysProperty(keyTypes), names);

        String specText = settings.partitionSpec() != null
                ? settings.partitionSpec()
                : PartitionSpecs.defaultFor(layout.keyColumns().get(0));
        PartitionSpec spec = PartitionSpecs.parse(specText, layout);
        SortOrder.Builder order = SortOrder.builderFor(schema);
        layout.keyColumns().forEach(order::asc);

        Map<String, String> props = new HashMap<>();
        props.put(TableProperties.FORMAT_VERSION, Integer.toString(settings.formatVersion()));
        props.put(PipelineProperties.KEYS, TableLayout.keysProperty(keyTypes));
        props.put(PipelineProperties.COLUMN_NAMES, names.setting());
        props.put(
                PipelineProperties.TTL_EXPIRIES,
                settings.removals().ttlExpiries().setting());
        props.put(PipelineProperties.DELETES, settings.removals().deletes().setting());
        props.put(TableProperties.DEFAULT_FILE_FORMAT, "parquet");
        props.put(TableProperties.PARQUET_COMPRESSION, "zstd");
        // Engines that write to the table (a user's Spark MERGE, say) should also leave position deletes.
        props.put(TableProperties.DELETE_MODE, "merge-on-read");
        props.put(TableProperties.UPDATE_MODE, "merge-on-read");
        props.put(TableProperties.MERGE_MODE, "merge-on-read");
        props.put(TableProperties.COMMIT_NUM_RETRIES, "10");
        props.put(TableProperties.COMMIT_MIN_RETRY_WAIT_MS, "100");
        props.put(TableProperties.COMMIT_MAX_RETRY_WAIT_MS, "5000");
        props.put(TableProperties.METADATA_DELETE_AFTER_COMMIT_ENABLED, "true");
        props.put(TableProperties.METADATA_PREVIOUS_VERSIONS_MAX, "100");
        if (settings.derivedFilesLocation() != null) {
            props.put(PipelineProperties.DERIVED_FILES_LOCATION, settings.derivedFilesLocation());
        }
        // Exact (untruncated) bounds on the keys, so the merge can skip files that cannot hold a key.
        for (String column : layout.keyColumns()) {
            props.put(TableProperties.METRICS_MODE_COLUMN_CONF_PREFIX + column, "full");
        }
        try {
            Catalog.TableBuilder builder = catalog.buildTable(id, schema)
                    .withPartitionSpec(spec)
                    .withSortOrder(order.build())
                    .withProperties(props);
            if (settings.location() != null) {
                builder.withLocation(settings.location());
            }
            Table table = builder.create();
            LOG.info(
                    "Created table {} with keys {} (columns {}), partitioned by {}, format v{}, column names {}",
                    id,
                    keyTypes,
                    layout.keyColumns(),
                    specText,
                    settings.formatVersion(),
                    names.setting());
            return table;
        } catch (AlreadyExistsException raced) {
            return catalog.loadTable(id);
        }
    }

    /** Key attribute names (partition key first) and their DynamoDB types, from the changes. */
    static Map<String, String> keyTypes(List<Change> changes, String partitionKey) {
        Map<String, DdbValue> sample = changes.get(0).keys();
        Set<String> names = new TreeSet<>(sample.keySet());
        Map<String, String> out = new LinkedHashMap<>();
        if (partitionKey != null) {
            if (!names.contains(partitionKey)) {
                throw new ConfigurationException("PARTITION_KEY='" + partitionKey
                        + "' is not a key attribute of the stream's" + " items; their keys are " + names + ".");
            }
            out.put(partitionKey, sample.get(partitionKey).typeName());
        } else if (names.size() > 1) {
            LOG.info(
                    "PARTITION_KEY is not set; taking '{}' of the key attributes {} (set PARTITION_KEY to choose)",
                    names.iterator().next(),
                    names);
        }
        for (String name : names) {
            out.putIfAbsent(name, sample.get(name).typeName());
        }
        return out;
    }

    /** N keys are long only if every value seen is a plain integer; otherwise their exact text. */
    private static Map<String, Type> keyColumnTypes(List<Change> changes, Set<String> keys) {
        Map<String, Type> types = new HashMap<>();
        for (Change c : changes) {
            for (String key : keys) {
                DdbValue v = c.keys().get(key);
                if (v == null) {
                    continue;
                }
                Type t = TypeMapping.keyColumnTypeFor(v);
                Type seen = types.get(key);
                if (seen == null || (seen.typeId() == Type.TypeID.LONG && t.typeId() == Type.TypeID.STRING)) {
                    types.put(key, t);
                }
            }
        }
        return types;
    }
}
