package dev.ddb2iceberg.testkit;

import dev.ddb2iceberg.config.CatalogSettings;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.S3Settings;
import dev.ddb2iceberg.config.StagingSettings;
import dev.ddb2iceberg.maintenance.MaintenanceOptions;
import dev.ddb2iceberg.table.TableSettings;

/**
 * The library's settings for maintenance, from environment variables, built the way the maintenance
 * function builds them (its own {@code MaintenanceSettings}), so the library's tests need no handler
 * class.
 */
public record MaintenanceSettings(StagingSettings staging, S3Settings s3, CatalogSettings catalog,
    TableSettings table, MaintenanceOptions options) {

  public static MaintenanceSettings from(Environment env) {
    StagingSettings staging = StagingSettings.from(env);
    S3Settings s3 = S3Settings.from(env);
    return new MaintenanceSettings(staging, s3, CatalogSettings.from(env, staging, s3), TableSettings.from(env),
        MaintenanceOptions.from(env));
  }

  /** The staging area as a URI; maintenance never deletes anything under it. */
  public String stagingUri() {
    return "s3://" + staging.bucket() + "/" + staging.stagingPrefix();
  }
}
