package dev.ddb2iceberg.benchmarks;

import dev.ddb2iceberg.config.CatalogSettings;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.S3Settings;
import dev.ddb2iceberg.config.StagingSettings;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.table.TableCreator;
import dev.ddb2iceberg.table.TableSettings;
import dev.ddb2iceberg.testkit.LocalStack;
import java.io.Closeable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;

/**
 * File-scoped against partition-scoped position delete files for our merges (format v2): the same
 * merges (steady state, 5,000 mixed changes each) into two copies of a 1M-row table, one per
 * {@code write.delete.granularity}; then what each costs the merges, and what it costs a reader
 * to read the whole table with its deletes applied, as an engine does.
 *
 * <p>Run: {@code java -Xmx8g -cp ... dev.ddb2iceberg.benchmarks.DeleteScopeComparison [rows] [merges]}
 */
public final class DeleteScopeComparison {
    public static void main(String[] args) throws Exception {
        AsPackaged.hideWhatThePackagesLeaveOut(); // Hadoop's defaults files, as in the Lambda packages
        long rows = args.length > 0 ? Long.parseLong(args[0]) : 1_000_000L;
        int merges = args.length > 1 ? Integer.parseInt(args[1]) : 20;
        int perMerge = 5_000;
        Path dir = Files.createTempDirectory("delete-scope-bench");
        try (EmbeddedS3Server server = EmbeddedS3Server.onDisk(dir.resolve("s3"))) {
            server.createBucket("bench");
            LocalStack stack = new LocalStack(server, "bench", dir);
            for (String scope :
                    List.of("file", "partition", "file", "partition")) { // each twice: the first warms the JIT
                String name = "scope_" + scope + "_" + System.nanoTime();
                Environment env = new Environment(stack.environment(name));
                StagingSettings staging = new StagingSettings("bench", "staging-" + name + "/", "quarantine/");
                TableSettings tableSettings = TableSettings.from(env);
                Catalog catalog =
                        CatalogSettings.from(env, staging, S3Settings.from(env)).load();
                try {
                    StagingStore store = new StagingStore(server.newClient(), staging);
                    Table table = TableCreator.loadOrCreate(
                            catalog,
                            TableIdentifier.of(tableSettings.namespace(), tableSettings.name()),
                            tableSettings,
                            List.of(MergeThroughput.change(0, Operation.INSERT, 0, new Random(0))));
                    MergeThroughput.bulkLoad(table, rows);
                    table.updateProperties()
                            .set(TableProperties.DELETE_GRANULARITY, scope)
                            .commit();
                    Random random = new Random(rows);
                    BatchStager stager = new BatchStager(store);
                    MergeOptions options = MergeOptions.DEFAULTS.withKeyIndex(true);
                    MergeThroughput.stage(stager, rows, perMerge, 0, random);
                    new Merger(catalog, tableSettings, store, options).run(); // builds the index: not measured
                    long mergeNanos = 0;
                    for (int m = 1; m <= merges; m++) {
                        MergeThroughput.stage(stager, rows, perMerge, m * perMerge, random);
                        long t0 = System.nanoTime();
                        new Merger(catalog, tableSettings, store, options).run();
                        mergeNanos += System.nanoTime() - t0;
                    }
                    table.refresh();
                    long deleteFiles = 0;
                    long deleteBytes = 0;
                    Set<String> seen = new HashSet<>();
                    try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
                        for (FileScanTask t : tasks) {
                            for (DeleteFile d : t.deletes()) {
                                if (seen.add(d.location())) {
                                    deleteFiles++;
                                    deleteBytes += d.fileSizeInBytes();
                                }
                            }
                        }
                    }
                    long r0 = System.nanoTime();
                    long live = 0;
                    try (CloseableIterable<Record> all = IcebergGenerics.read(table)
                            .select("pk", "sk", "status")
                            .build()) {
                        for (Record ignored : all) {
                            live++;
                        }
                    }
                    double readSeconds = (System.nanoTime() - r0) / 1e9;
                    double mergeSeconds = mergeNanos / 1e9 / merges;
                    System.out.printf(
                            "%s-scoped: %d merges, %.2f s each; %,d delete files (%.1f MB); full read of %,d rows %.2f s%n",
                            scope, merges, mergeSeconds, deleteFiles, deleteBytes / 1e6, live, readSeconds);
                    if (warmed(scope)) {
                        Results.report(
                                String.format(
                                        "%s-scoped position deletes: %d merges of %,d changes into %,d rows (v2), then a"
                                                + " full read",
                                        scope, merges, perMerge, rows),
                                "-",
                                String.format(
                                        "merge %.2f s; %,d delete files, %.1f MB;" + " read %.2f s",
                                        mergeSeconds, deleteFiles, deleteBytes / 1e6, readSeconds));
                    }
                } finally {
                    ((Closeable) catalog).close();
                }
            }
        } finally {
            MergeThroughput.deleteRecursively(dir);
        }
    }

    private static final Set<String> RUN_ONCE = new HashSet<>();

    /** True the second time a scope runs (the first is the JIT's warm-up). */
    private static boolean warmed(String scope) {
        return !RUN_ONCE.add(scope);
    }
}
