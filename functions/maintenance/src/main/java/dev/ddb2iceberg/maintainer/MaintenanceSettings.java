package dev.ddb2iceberg.maintainer;

import dev.ddb2iceberg.config.CatalogSettings;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.S3Settings;
import dev.ddb2iceberg.config.StagingSettings;
import dev.ddb2iceberg.config.TableSettings;
import dev.ddb2iceberg.maintenance.MaintenanceOptions;

/** The maintenance function's settings, from environment variables, with their defaults in one place. */
public record MaintenanceSettings(
    StagingSettings staging, CatalogSettings catalog, TableSettings table, MaintenanceOptions options) {

  public static MaintenanceSettings from(Environment env) {
    StagingSettings staging = StagingSettings.from(env);
    return new MaintenanceSettings(staging, CatalogSettings.from(env, staging, S3Settings.from(env)),
        TableSettings.from(env), MaintenanceOptions.from(env));
  }

  /** The staging area as a URI; maintenance never deletes anything under it. */
  public String stagingUri() {
    return "s3://" + staging.bucket() + "/" + staging.stagingPrefix();
  }
}
