package dev.ddb2iceberg.function;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonUnwrapped;
import dev.ddb2iceberg.maintenance.GlueTableVersions;
import dev.ddb2iceberg.maintenance.Maintenance;
import dev.ddb2iceberg.maintenance.MaintenanceOptions;
import dev.ddb2iceberg.maintenance.MaintenanceResult;
import dev.ddb2iceberg.maintenance.MaintenanceTask;
import dev.ddb2iceberg.observe.MetricLine;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.status.TableStatus;
import dev.ddb2iceberg.table.TableCreator;
import java.time.Clock;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.slf4j.Logger;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The maintenance function's work: the tasks on the table and, with the same tasks and its own
 * retention, on its change history; or only a status report. Never touches the staging area.
 */
public final class MaintenanceRun {

    /** A run's result: the table's, with its change history's when there is one, or why nothing ran. */
    public record Result(
            @JsonUnwrapped MaintenanceResult table,
            @JsonInclude(JsonInclude.Include.NON_NULL) String note,
            @JsonInclude(JsonInclude.Include.NON_NULL) MaintenanceResult history) {}

    private final Logger log;
    private final PipelineSettings settings;
    private final MaintenanceOptions options;
    private final Catalog catalog;
    private final Clock clock;
    private Consumer<String> metricsOut = FunctionCall.STANDARD_OUTPUT;
    private GlueTableVersions glueVersions;

    /** @param log the handler's logger, which the log lines name */
    public MaintenanceRun(
            PipelineSettings settings, MaintenanceOptions options, Catalog catalog, Clock clock, Logger log) {
        this.log = log;
        this.settings = settings;
        this.options = options;
        this.catalog = catalog;
        this.clock = clock;
    }

    /** Where metric lines go: standard output in Lambda (CloudWatch reads them from the log). */
    public MaintenanceRun metricsTo(Consumer<String> out) {
        this.metricsOut = out;
        return this;
    }

    /** For a Glue catalog: what deletes the tables' old Glue table versions (task catalog-versions); null for none. */
    public MaintenanceRun catalogVersions(GlueTableVersions versions) {
        this.glueVersions = versions;
        return this;
    }

    /** The staging area as a URI; maintenance never deletes anything under it. */
    public static String stagingUri(PipelineSettings settings) {
        return "s3://" + settings.staging().bucket() + "/" + settings.staging().stagingPrefix();
    }

    public Result run(Set<MaintenanceTask> tasks, boolean dryRun) {
        TableIdentifier id = PipelineSettings.table(settings.table());
        Table table = TableCreator.loadIfExists(catalog, id);
        if (table == null) {
            String note =
                    "Table " + id + " does not exist yet (the merger creates it on its first run): nothing to maintain";
            log.info(note);
            return new Result(
                    new MaintenanceResult(dryRun, MaintenanceResult.Compaction.NONE, 0, 0, List.of(), 0, List.of(), 0),
                    note,
                    null);
        }
        MaintenanceResult result = maintain(id, table, options, tasks, dryRun);
        // The change history (HISTORY_TABLE) gets the same tasks, with its own retention.
        TableIdentifier historyId = PipelineSettings.history(settings.table());
        Table history = historyId == null ? null : TableCreator.loadIfExists(catalog, historyId);
        if (history == null) {
            return new Result(result, null, null);
        }
        // In an S3 table bucket the history has no files of the pipeline's own to look after: the
        // bucket removes its unreferenced files itself.
        Set<MaintenanceTask> historyTasks = EnumSet.copyOf(tasks);
        if (settings.catalog().isS3Tables()) {
            historyTasks.remove(MaintenanceTask.ORPHANS);
        }
        return new Result(result, null, maintain(historyId, history, options.forHistory(), historyTasks, dryRun));
    }

    private MaintenanceResult maintain(
            TableIdentifier id, Table table, MaintenanceOptions options, Set<MaintenanceTask> tasks, boolean dryRun) {
        MaintenanceResult result = new Maintenance(table, options, stagingUri(settings), clock)
                .managedStorage(settings.catalog().isS3Tables())
                .catalogVersions(
                        glueVersions == null
                                ? null
                                : dry -> glueVersions.trim(id.namespace().toString(), id.name(), dry))
                .run(tasks, dryRun);
        if (!result.dryRun()) {
            metricsOut.accept(metrics(id, result).toString());
        }
        return result;
    }

    /** The run's metrics: what compaction rewrote, the files left, and what expiry and cleanup removed. */
    private MetricLine metrics(TableIdentifier id, MaintenanceResult r) {
        MaintenanceResult.Compaction c = r.compaction();
        return MetricLine.forTable(id.toString(), clock)
                .count("FilesRewritten", c.filesRewritten())
                .bytes("BytesRewritten", c.bytesRewritten())
                .count("DataFiles", c.dataFilesAfter())
                .count("DeleteFiles", c.deleteFilesAfter())
                .count("CompactionGroupsLeft", c.groupsLeft())
                .count("ManifestsRewritten", r.manifestsRewritten())
                .count("SnapshotsExpired", r.snapshotsExpired())
                .count("OrphansDeleted", r.orphans().size())
                .count("CatalogVersionsDeleted", r.catalogVersionsDeleted())
                .count("MaintenanceConflicts", r.conflicts().size())
                .milliseconds("MaintenanceMillis", r.millis());
    }

    /** Only a report: the table, what waits in staging, files, last compaction. Changes nothing. */
    public TableStatus status() {
        return status(
                settings,
                options,
                catalog,
                TableCreator.loadIfExists(catalog, PipelineSettings.table(settings.table())),
                clock);
    }

    /**
     * The status report of the table (null if not created yet), its staging prefix, and its change
     * history when HISTORY_TABLE names one.
     */
    public static TableStatus status(
            PipelineSettings settings, MaintenanceOptions options, Catalog catalog, Table table, Clock clock) {
        TableStatus status;
        try (S3Client s3 = settings.s3().newClient()) { // only a status request needs one: not at cold start
            status = TableStatus.of(
                    settings.table().namespace() + "." + settings.table().name(),
                    table,
                    new StagingStore(s3, settings.staging()),
                    options.targetFileSizeBytes(),
                    clock);
        }
        TableIdentifier history = PipelineSettings.history(settings.table());
        if (history == null) {
            return status;
        }
        return status.withHistory(
                TableStatus.HistoryStatus.of(history.toString(), TableCreator.loadIfExists(catalog, history)));
    }
}
