package dev.ddb2iceberg.maintenance;

import dev.ddb2iceberg.commit.Checkpoint;
import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.history.ChangeHistory;
import dev.ddb2iceberg.table.TableLayout;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import org.apache.iceberg.DeleteFiles;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Table;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.CloseableIterable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A change history (HISTORY_TABLE) keeps {@link MaintenanceOptions#historyRetentionDays} days:
 * older day partitions are dropped whole, through metadata (a file holds one day, so no file is
 * rewritten). Their files go when the snapshots that still hold them expire.
 */
final class HistoryRetention {
    private static final Logger LOG = LoggerFactory.getLogger(HistoryRetention.class);

    private final Table table;
    private final long retentionDays;
    private final Clock clock;

    HistoryRetention(Table table, long retentionDays, Clock clock) {
        this.table = table;
        this.retentionDays = retentionDays;
        this.clock = clock;
    }

    /** Returns the files of days past retention dropped (or that would be, on a dry run). */
    int run(boolean dryRun) {
        if (!ChangeHistory.isHistory(table) || retentionDays <= 0 || table.currentSnapshot() == null) {
            return 0;
        }
        Instant cutoff = clock.instant().truncatedTo(ChronoUnit.DAYS).minus(Duration.ofDays(retentionDays));
        Expression older = Expressions.lessThan(TableLayout.TIME, cutoff.toEpochMilli() * 1000);
        int files = 0;
        try (CloseableIterable<FileScanTask> tasks =
                table.newScan().filter(older).planFiles()) {
            for (FileScanTask ignored : tasks) {
                files++;
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        if (files == 0 || dryRun) {
            return files;
        }
        // First the mark, then the drop: a merge that reads the mark appends nothing older (it would
        // be dropped, and a copy of a dropped change could no longer be told apart from a new one).
        table.updateProperties()
                .set(PipelineProperties.HISTORY_KEPT_FROM, Long.toString(cutoff.toEpochMilli()))
                .commit();
        DeleteFiles delete = table.newDelete().deleteFromRowFilter(older);
        Checkpoint.carried(table).forEach(delete::set);
        delete.commit();
        LOG.info(
                "Change history {}: dropped {} files of changes before {} (HISTORY_RETENTION_DAYS={})",
                table.name(),
                files,
                cutoff,
                retentionDays);
        return files;
    }
}
