package dev.ddb2iceberg.stager;

import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.S3Settings;

/** The stager's settings, from environment variables, with their defaults in one place. */
public record StagerSettings(String bucket, String stagingPrefix, String quarantinePrefix, S3Settings s3) {

  public static StagerSettings from(Environment env) {
    String staging = env.prefix("STAGING_PREFIX", "staging/");
    String quarantine = env.prefix("QUARANTINE_PREFIX", "quarantine/");
    if (staging.startsWith(quarantine) || quarantine.startsWith(staging)) {
      throw new dev.ddb2iceberg.config.ConfigurationException("STAGING_PREFIX='" + staging + "' and QUARANTINE_PREFIX='"
          + quarantine + "' overlap; give them separate prefixes such as 'staging/' and 'quarantine/'.");
    }
    return new StagerSettings(
        env.required("STAGING_BUCKET", "the S3 bucket where stream changes are staged"),
        staging, quarantine, S3Settings.from(env));
  }
}
