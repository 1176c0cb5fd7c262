package dev.ddb2iceberg.function;

import dev.ddb2iceberg.config.CatalogSettings;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.S3Settings;
import dev.ddb2iceberg.config.StagingSettings;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.table.TableSettings;
import org.apache.iceberg.catalog.TableIdentifier;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * What the merger, the export load and maintenance read from their environment alike: the
 * staging area, S3, the catalog and the table, read in that order (each function adds its own).
 */
public record PipelineSettings(StagingSettings staging, S3Settings s3, CatalogSettings catalog, TableSettings table) {

    public static PipelineSettings from(Environment env) {
        StagingSettings staging = StagingSettings.from(env);
        S3Settings s3 = S3Settings.from(env);
        return new PipelineSettings(staging, s3, CatalogSettings.from(env, staging, s3), TableSettings.from(env));
    }

    /** The staging store of these settings, on {@code s3}. */
    public static StagingStore store(S3Client s3, StagingSettings staging) {
        return new StagingStore(s3, staging);
    }

    /** The table's identifier, {@code namespace.name}. */
    public static TableIdentifier table(TableSettings table) {
        return TableIdentifier.of(table.namespace(), table.name());
    }

    /** The change history's identifier, or null when HISTORY_TABLE names none. */
    public static TableIdentifier history(TableSettings table) {
        return table.historyTable() == null ? null : TableIdentifier.of(table.namespace(), table.historyTable());
    }
}
