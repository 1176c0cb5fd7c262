package dev.ddb2iceberg.testkit;

import dev.ddb2iceberg.commit.PipelineProperties;
import java.util.List;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.encryption.EncryptionManager;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.LocationProvider;

/**
 * For tests: wraps the real (SQLite) catalog so that the next merge commit ends in
 * {@link CommitStateUnknownException}, as when the connection to Glue drops mid-commit: either
 * after the commit really landed, or before it did. Everything else goes to the real catalog.
 */
public final class UnknownOutcomeCatalog implements Catalog {
    private final Catalog delegate;
    private final boolean landsBeforeFailing;
    private int failuresLeft = 1;

    public UnknownOutcomeCatalog(Catalog delegate, boolean landsBeforeFailing) {
        this.delegate = delegate;
        this.landsBeforeFailing = landsBeforeFailing;
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
    public Table loadTable(TableIdentifier identifier) {
        Table real = delegate.loadTable(identifier);
        return new BaseTable(new Ops(((HasTableOperations) real).operations()), real.name());
    }

    private final class Ops implements TableOperations {
        private final TableOperations real;

        Ops(TableOperations real) {
            this.real = real;
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
        public void commit(TableMetadata base, TableMetadata metadata) {
            Snapshot snapshot = metadata.currentSnapshot();
            boolean mergeCommit = snapshot != null
                    && snapshot.summary().containsKey(PipelineProperties.RUN_ID)
                    && (base.currentSnapshot() == null || base.currentSnapshot().snapshotId() != snapshot.snapshotId());
            if (mergeCommit && failuresLeft > 0) {
                failuresLeft--;
                if (landsBeforeFailing) {
                    real.commit(base, metadata);
                }
                throw new CommitStateUnknownException(new RuntimeException("injected: connection to the catalog lost"));
            }
            real.commit(base, metadata);
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
