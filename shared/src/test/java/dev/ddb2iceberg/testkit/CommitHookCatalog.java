package dev.ddb2iceberg.testkit;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.Predicate;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.DataOperations;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotSummary;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.SupportsNamespaces;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.encryption.EncryptionManager;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.LocationProvider;

/**
 * For tests: a catalog whose tables run a hook just before each commit that adds a snapshot the
 * filter picks, the way Iceberg's own tests wrap a table's operations (TestTables). A test crashes
 * a writer there, or lands a concurrent commit between the writer's planning and its commit: give
 * the writer this catalog (or a table loaded through it) and the racing writer the plain one.
 *
 * <p>The hook runs once per snapshot: Iceberg retries a commit whose base went stale with the same
 * snapshot id, and those retries do not run it again; a writer that plans again makes a new
 * snapshot, which does. So the hook runs before each of the writer's own commit attempts.
 */
public final class CommitHookCatalog implements Catalog, SupportsNamespaces {
    private final Catalog delegate;
    private final TableIdentifier table;
    private final Predicate<Snapshot> which;
    private final Consumer<Table> hook;
    private final Set<Long> seen = ConcurrentHashMap.newKeySet();

    /**
     * @param table the table whose commits run the hook (others, such as a change history, do not)
     * @param which the commits' new snapshots that run it
     * @param hook given the table as the writer sees it
     */
    public CommitHookCatalog(Catalog delegate, TableIdentifier table, Predicate<Snapshot> which, Consumer<Table> hook) {
        this.delegate = delegate;
        this.table = table;
        this.which = which;
        this.hook = hook;
    }

    /** Runs {@code hook} before each commit of {@code table} that adds a snapshot. */
    public static CommitHookCatalog beforeEachSnapshot(Catalog delegate, TableIdentifier table, Consumer<Table> hook) {
        return new CommitHookCatalog(delegate, table, s -> true, hook);
    }

    /** Runs {@code hook} before each compaction of {@code table}: a replace that writes data files. */
    public static CommitHookCatalog beforeEachCompaction(
            Catalog delegate, TableIdentifier table, Consumer<Table> hook) {
        return new CommitHookCatalog(
                delegate,
                table,
                s -> DataOperations.REPLACE.equals(s.operation())
                        && s.summary().containsKey(SnapshotSummary.ADDED_FILES_PROP),
                hook);
    }

    @Override
    public Table loadTable(TableIdentifier identifier) {
        Table real = delegate.loadTable(identifier);
        if (!identifier.equals(table)) {
            return real;
        }
        return new BaseTable(new Ops(((HasTableOperations) real).operations(), real), real.name());
    }

    @Override
    public List<TableIdentifier> listTables(Namespace namespace) {
        return delegate.listTables(namespace);
    }

    @Override
    public boolean dropTable(TableIdentifier identifier, boolean purge) {
        return delegate.dropTable(identifier, purge);
    }

    @Override
    public void renameTable(TableIdentifier from, TableIdentifier to) {
        delegate.renameTable(from, to);
    }

    @Override
    public Table createTable(
            TableIdentifier identifier,
            Schema schema,
            PartitionSpec spec,
            String location,
            Map<String, String> properties) {
        delegate.createTable(identifier, schema, spec, location, properties);
        return loadTable(identifier);
    }

    @Override
    public TableBuilder buildTable(TableIdentifier identifier, Schema schema) {
        return delegate.buildTable(identifier, schema);
    }

    @Override
    public boolean tableExists(TableIdentifier identifier) {
        return delegate.tableExists(identifier);
    }

    @Override
    public String name() {
        return delegate.name();
    }

    // Namespaces go to the real catalog (which must support them, as every catalog here does).

    private SupportsNamespaces namespaces() {
        return (SupportsNamespaces) delegate;
    }

    @Override
    public void createNamespace(Namespace namespace, Map<String, String> metadata) {
        namespaces().createNamespace(namespace, metadata);
    }

    @Override
    public List<Namespace> listNamespaces(Namespace namespace) {
        return namespaces().listNamespaces(namespace);
    }

    @Override
    public Map<String, String> loadNamespaceMetadata(Namespace namespace) {
        return namespaces().loadNamespaceMetadata(namespace);
    }

    @Override
    public boolean dropNamespace(Namespace namespace) {
        return namespaces().dropNamespace(namespace);
    }

    @Override
    public boolean setProperties(Namespace namespace, Map<String, String> properties) {
        return namespaces().setProperties(namespace, properties);
    }

    @Override
    public boolean removeProperties(Namespace namespace, Set<String> properties) {
        return namespaces().removeProperties(namespace, properties);
    }

    @Override
    public boolean namespaceExists(Namespace namespace) {
        return namespaces().namespaceExists(namespace);
    }

    private final class Ops implements TableOperations {
        private final TableOperations real;
        private final Table unwrapped;

        Ops(TableOperations real, Table unwrapped) {
            this.real = real;
            this.unwrapped = unwrapped;
        }

        @Override
        public void commit(TableMetadata base, TableMetadata metadata) {
            Snapshot proposed = metadata.currentSnapshot();
            boolean adds = proposed != null
                    && (base == null
                            || base.currentSnapshot() == null
                            || base.currentSnapshot().snapshotId() != proposed.snapshotId());
            if (adds && which.test(proposed) && seen.add(proposed.snapshotId())) {
                hook.accept(unwrapped);
            }
            real.commit(base, metadata);
        }

        @Override
        public TableMetadata current() {
            return real.current();
        }

        @Override
        public TableMetadata refresh() {
            return real.refresh();
        }

        @Override
        public FileIO io() {
            return real.io();
        }

        @Override
        public EncryptionManager encryption() {
            return real.encryption();
        }

        @Override
        public String metadataFileLocation(String fileName) {
            return real.metadataFileLocation(fileName);
        }

        @Override
        public LocationProvider locationProvider() {
            return real.locationProvider();
        }

        @Override
        public TableOperations temp(TableMetadata uncommittedMetadata) {
            return real.temp(uncommittedMetadata);
        }

        @Override
        public long newSnapshotId() {
            return real.newSnapshotId();
        }
    }
}
