package dev.ddb2iceberg.testkit;

import dev.ddb2iceberg.commit.PipelineProperties;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitStateUnknownException;

/**
 * For tests: wraps the real (SQLite) catalog so that the next merge commit ends in
 * {@link CommitStateUnknownException}, as when the connection to Glue drops mid-commit: either
 * after the commit really landed, or before it did. Everything else goes to the real catalog.
 */
public final class UnknownOutcomeCatalog extends InterceptingCatalog {
    private final boolean landsBeforeFailing;
    private int failuresLeft = 1;

    public UnknownOutcomeCatalog(Catalog delegate, boolean landsBeforeFailing) {
        super(delegate);
        this.landsBeforeFailing = landsBeforeFailing;
    }

    @Override
    boolean intercepts(TableIdentifier identifier) {
        return true;
    }

    @Override
    boolean interceptsCreatedTables() {
        return false; // the first merge, which creates the table, commits as usual
    }

    @Override
    void commit(TableOperations real, Table table, TableMetadata base, TableMetadata metadata) {
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
}
