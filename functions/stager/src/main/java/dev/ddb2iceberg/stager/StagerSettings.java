package dev.ddb2iceberg.stager;

import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.S3Settings;
import dev.ddb2iceberg.config.StagingSettings;

/** The stager's settings, from environment variables, with their defaults in one place. */
public record StagerSettings(StagingSettings staging, S3Settings s3) {

  public static StagerSettings from(Environment env) {
    return new StagerSettings(StagingSettings.from(env), S3Settings.from(env));
  }
}
