package dev.ddb2iceberg.merger;

import dev.ddb2iceberg.table.TableSettings;
import dev.ddb2iceberg.config.CatalogSettings;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.S3Settings;
import dev.ddb2iceberg.config.StagingSettings;
import dev.ddb2iceberg.merge.ContinuousMerge;
import dev.ddb2iceberg.merge.MergeOptions;

/** The merger's settings, from environment variables, with their defaults in one place. */
public record MergerSettings(StagingSettings staging, S3Settings s3, CatalogSettings catalog, TableSettings table,
    MergeOptions options, ContinuousMerge.Settings continuous) {

  public static MergerSettings from(Environment env) {
    StagingSettings staging = StagingSettings.from(env);
    S3Settings s3 = S3Settings.from(env);
    return new MergerSettings(staging, s3, CatalogSettings.from(env, staging, s3), TableSettings.from(env),
        MergeOptions.from(env), ContinuousMerge.Settings.from(env));
  }
}
