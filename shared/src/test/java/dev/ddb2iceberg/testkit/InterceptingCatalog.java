package dev.ddb2iceberg.testkit;

import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.SortOrder;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.SupportsNamespaces;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.encryption.EncryptionManager;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.LocationProvider;

/**
 * For tests: a catalog that forwards everything to a real one, except that the commits of the
 * tables it picks go through {@link #commit}, where a subclass injects a fault or runs a test's
 * code, the way Iceberg's own tests wrap a table's operations (TestTables). Namespaces go to the
 * real catalog, which must support them (every catalog here does).
 */
abstract class InterceptingCatalog implements Catalog, SupportsNamespaces {
    private final Catalog delegate;

    InterceptingCatalog(Catalog delegate) {
        this.delegate = delegate;
    }

    /** Whether commits of {@code identifier} go through {@link #commit}. */
    abstract boolean intercepts(TableIdentifier identifier);

    /** Whether a table this catalog creates is intercepted from its creation on. */
    abstract boolean interceptsCreatedTables();

    /** Commits {@code metadata} over {@code base} through {@code real}; {@code table} is the real table. */
    abstract void commit(TableOperations real, Table table, TableMetadata base, TableMetadata metadata);

    @Override
    public Table loadTable(TableIdentifier identifier) {
        Table real = delegate.loadTable(identifier);
        if (!intercepts(identifier)) {
            return real;
        }
        return new BaseTable(new Ops(((HasTableOperations) real).operations(), real), real.name());
    }

    @Override
    public TableBuilder buildTable(TableIdentifier identifier, Schema schema) {
        TableBuilder real = delegate.buildTable(identifier, schema);
        if (!interceptsCreatedTables()) {
            return real;
        }
        return new TableBuilder() {
            @Override
            public TableBuilder withPartitionSpec(PartitionSpec spec) {
                real.withPartitionSpec(spec);
                return this;
            }

            @Override
            public TableBuilder withSortOrder(SortOrder sortOrder) {
                real.withSortOrder(sortOrder);
                return this;
            }

            @Override
            public TableBuilder withLocation(String location) {
                real.withLocation(location);
                return this;
            }

            @Override
            public TableBuilder withProperties(Map<String, String> properties) {
                real.withProperties(properties);
                return this;
            }

            @Override
            public TableBuilder withProperty(String key, String value) {
                real.withProperty(key, value);
                return this;
            }

            @Override
            public Table create() {
                real.create();
                return loadTable(identifier);
            }

            @Override
            public Transaction createTransaction() {
                return real.createTransaction();
            }

            @Override
            public Transaction replaceTransaction() {
                return real.replaceTransaction();
            }

            @Override
            public Transaction createOrReplaceTransaction() {
                return real.createOrReplaceTransaction();
            }
        };
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
    public boolean tableExists(TableIdentifier identifier) {
        return delegate.tableExists(identifier);
    }

    @Override
    public String name() {
        return delegate.name();
    }

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

    /** The real table's operations, with its commits going through {@link #commit}. */
    private final class Ops implements TableOperations {
        private final TableOperations real;
        private final Table table;

        Ops(TableOperations real, Table table) {
            this.real = real;
            this.table = table;
        }

        @Override
        public void commit(TableMetadata base, TableMetadata metadata) {
            InterceptingCatalog.this.commit(real, table, base, metadata);
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
