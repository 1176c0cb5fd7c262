package dev.ddb2iceberg.stager;

import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.S3Settings;
import dev.ddb2iceberg.config.Settings;
import dev.ddb2iceberg.config.StagingSettings;

/**
 * The stager's settings, from environment variables, with their defaults in one place.
 *
 * @param table {@code namespace.name} of the table fed, only to label the stager's metrics
 */
public record StagerSettings(StagingSettings staging, S3Settings s3, String table) {

    public StagerSettings(StagingSettings staging, S3Settings s3) {
        this(staging, s3, "ddb2iceberg.unnamed");
    }

    public static StagerSettings from(Environment env) {
        return new StagerSettings(
                StagingSettings.from(env),
                S3Settings.from(env),
                env.string(Settings.TABLE_NAMESPACE) + "." + env.string(Settings.TABLE_NAME, "unnamed"));
    }
}
