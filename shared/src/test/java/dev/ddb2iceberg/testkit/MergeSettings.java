package dev.ddb2iceberg.testkit;

import dev.ddb2iceberg.config.CatalogSettings;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.S3Settings;
import dev.ddb2iceberg.config.StagingSettings;
import dev.ddb2iceberg.merge.ContinuousMerge;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.table.TableSettings;

/**
 * The library's settings for a merge, from environment variables, built the way the merger
 * function builds them (its {@code MergerSettings}), so the library's tests need no handler class.
 */
public record MergeSettings(StagingSettings staging, S3Settings s3, CatalogSettings catalog, TableSettings table,
    MergeOptions options, ContinuousMerge.Settings continuous) {

  public static MergeSettings from(Environment env) {
    StagingSettings staging = StagingSettings.from(env);
    S3Settings s3 = S3Settings.from(env);
    return new MergeSettings(staging, s3, CatalogSettings.from(env, staging, s3), TableSettings.from(env),
        MergeOptions.from(env), ContinuousMerge.Settings.from(env));
  }
}
