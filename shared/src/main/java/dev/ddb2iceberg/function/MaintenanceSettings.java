package dev.ddb2iceberg.function;

import dev.ddb2iceberg.config.CatalogSettings;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.S3Settings;
import dev.ddb2iceberg.config.StagingSettings;
import dev.ddb2iceberg.maintenance.MaintenanceOptions;
import dev.ddb2iceberg.table.TableSettings;

/** The maintenance function's settings, from environment variables (dev.ddb2iceberg.config.Settings lists them). */
public record MaintenanceSettings(
        StagingSettings staging,
        S3Settings s3,
        CatalogSettings catalog,
        TableSettings table,
        MaintenanceOptions options) {

    public static MaintenanceSettings from(Environment env) {
        PipelineSettings p = PipelineSettings.from(env);
        return new MaintenanceSettings(p.staging(), p.s3(), p.catalog(), p.table(), MaintenanceOptions.from(env));
    }

    /** What every function reads alike. */
    public PipelineSettings pipeline() {
        return new PipelineSettings(staging, s3, catalog, table);
    }

    /** The staging area as a URI; maintenance never deletes anything under it. */
    public String stagingUri() {
        return MaintenanceRun.stagingUri(pipeline());
    }
}
