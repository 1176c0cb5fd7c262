package dev.ddb2iceberg.function;

import dev.ddb2iceberg.config.CatalogSettings;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.S3Settings;
import dev.ddb2iceberg.config.StagingSettings;
import dev.ddb2iceberg.merge.ContinuousMerge;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.table.TableSettings;

/** The merger's settings, from environment variables (dev.ddb2iceberg.config.Settings lists them). */
public record MergerSettings(
        StagingSettings staging,
        S3Settings s3,
        CatalogSettings catalog,
        TableSettings table,
        MergeOptions options,
        ContinuousMerge.Settings continuous) {

    public static MergerSettings from(Environment env) {
        PipelineSettings p = PipelineSettings.from(env);
        return new MergerSettings(
                p.staging(),
                p.s3(),
                p.catalog(),
                p.table(),
                MergeOptions.from(env),
                ContinuousMerge.Settings.from(env));
    }
}
