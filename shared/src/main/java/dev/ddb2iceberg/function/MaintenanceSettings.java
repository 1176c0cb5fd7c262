package dev.ddb2iceberg.function;

import dev.ddb2iceberg.catalog.GlueApi;
import dev.ddb2iceberg.config.CatalogSettings;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.S3Settings;
import dev.ddb2iceberg.config.Settings;
import dev.ddb2iceberg.config.StagingSettings;
import dev.ddb2iceberg.maintenance.GlueTableVersions;
import dev.ddb2iceberg.maintenance.MaintenanceOptions;
import dev.ddb2iceberg.table.TableSettings;
import java.net.URI;

/**
 * The maintenance function's settings, from environment variables (dev.ddb2iceberg.config.Settings lists them).
 *
 * @param glueEndpoint Glue's API endpoint for the catalog-versions task; null unless CATALOG_TYPE is glue
 */
public record MaintenanceSettings(
        StagingSettings staging,
        S3Settings s3,
        CatalogSettings catalog,
        TableSettings table,
        MaintenanceOptions options,
        URI glueEndpoint) {

    public static MaintenanceSettings from(Environment env) {
        PipelineSettings p = PipelineSettings.from(env);
        URI glue = p.catalog().isGlue()
                ? URI.create(env.string(
                        Settings.GLUE_ENDPOINT,
                        GlueApi.endpoint(p.s3().region()).toString()))
                : null;
        return new MaintenanceSettings(p.staging(), p.s3(), p.catalog(), p.table(), MaintenanceOptions.from(env), glue);
    }

    /**
     * The catalog-versions task's cleanup of old Glue table versions, with its own HTTP client for
     * the caller to close; null unless the catalog is Glue.
     */
    public GlueTableVersions glueTableVersions() {
        if (glueEndpoint == null) {
            return null;
        }
        return new GlueTableVersions(
                new GlueApi(glueEndpoint, s3.region(), s3.credentials()),
                catalog.glueCatalogId(),
                options.glueTableVersionsKept(),
                options.glueTableVersionsPerRun());
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
