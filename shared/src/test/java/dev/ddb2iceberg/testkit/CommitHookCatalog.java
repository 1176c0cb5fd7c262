package dev.ddb2iceberg.testkit;

import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.Predicate;
import org.apache.iceberg.DataOperations;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotSummary;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitFailedException;

/**
 * For tests: a catalog whose table runs a hook just before each commit that adds a snapshot the
 * filter picks. A test crashes a writer there, or lands a concurrent commit between the writer's
 * planning and its commit: give the writer this catalog (or a table loaded through it) and the
 * racing writer the plain one. The hook is given the real table.
 *
 * <p>The hook runs once per snapshot: Iceberg retries a commit whose base went stale with the same
 * snapshot id, and those retries do not run it again; a writer that plans again makes a new
 * snapshot, which does. So the hook runs before each of the writer's own commit attempts.
 */
public final class CommitHookCatalog extends InterceptingCatalog {
    private final TableIdentifier table;
    private final Predicate<Snapshot> which;
    private final Consumer<Table> hook;
    private final Set<Long> seen = ConcurrentHashMap.newKeySet();

    /**
     * @param table the table whose commits run the hook (others, such as a change history, do not)
     * @param which the new snapshots whose commits run it
     */
    public CommitHookCatalog(Catalog delegate, TableIdentifier table, Predicate<Snapshot> which, Consumer<Table> hook) {
        super(delegate);
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
    boolean intercepts(TableIdentifier identifier) {
        return identifier.equals(table);
    }

    @Override
    boolean interceptsCreatedTables() {
        return true;
    }

    @Override
    void commit(TableOperations real, Table unwrapped, TableMetadata base, TableMetadata metadata) {
        Snapshot proposed = metadata.currentSnapshot();
        boolean adds = proposed != null
                && (base == null
                        || base.currentSnapshot() == null
                        || base.currentSnapshot().snapshotId() != proposed.snapshotId());
        if (adds && which.test(proposed) && seen.add(proposed.snapshotId())) {
            hook.accept(unwrapped);
            // When the hook committed, the base this commit was planned on is stale: refuse it, as
            // the catalog would, and Iceberg retries it over the new state (validating again).
            TableMetadata now = real.refresh();
            if (base != null && !Objects.equals(now.metadataFileLocation(), base.metadataFileLocation())) {
                throw new CommitFailedException("the table changed while the hook ran: %s", now.metadataFileLocation());
            }
        }
        real.commit(base, metadata);
    }
}
