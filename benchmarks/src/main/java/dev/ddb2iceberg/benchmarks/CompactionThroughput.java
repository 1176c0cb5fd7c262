package dev.ddb2iceberg.benchmarks;

import dev.ddb2iceberg.config.CatalogSettings;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.S3Settings;
import dev.ddb2iceberg.config.StagingSettings;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.maintenance.Maintenance;
import dev.ddb2iceberg.maintenance.MaintenanceOptions;
import dev.ddb2iceberg.maintenance.MaintenanceResult;
import dev.ddb2iceberg.maintenance.MaintenanceTask;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.table.TableSettings;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.StreamEvents;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * Compaction on a table built by many small merges (the merger's every-minute commits): files and
 * delete files before and after, and MB rewritten per second (one thread rewrites; 2 cores here).
 *
 * <p>Run: {@code java -Xmx4g -cp ... dev.ddb2iceberg.benchmarks.CompactionThroughput [merges] [changesPerMerge]}
 * ({@code -Dbench.formatVersion=3} for a v3 table).
 * With no arguments it measures full-size files instead ({@link FullSizeCompaction}).
 */
public final class CompactionThroughput {
    /** {@code -Dbench.keyIndex=on|off}: merge with the key index (compaction then records its moves) or without. */
    private static final MergeOptions OPTIONS = MergeOptions.DEFAULTS.withKeyIndex(
            "on".equals(System.getProperty("bench.keyIndex", MergeOptions.DEFAULTS.keyIndex() ? "on" : "off")));

    public static void main(String[] args) throws Exception {
        AsPackaged.hideWhatThePackagesLeaveOut(); // Hadoop's defaults files, as in the Lambda packages
        if (args.length == 0) {
            FullSizeCompaction.run(
                    Integer.getInteger("bench.files", 2), Integer.getInteger("bench.rowsPerFile", 4_000_000), 0.10);
            return;
        }
        int merges = Integer.parseInt(args[0]);
        int perMerge = args.length > 1 ? Integer.parseInt(args[1]) : 400;
        Path dir = Files.createTempDirectory("compaction-bench");
        try (EmbeddedS3Server server = EmbeddedS3Server.onDisk(dir.resolve("s3"))) {
            server.createBucket("bench");
            Map<String, String> settings =
                    new HashMap<>(new LocalStack(server, "bench", dir).environment("compaction"));
            // -Dbench.formatVersion=3: a v3 table (deletion vectors; compaction keeps each row's lineage)
            settings.put("TABLE_FORMAT_VERSION", System.getProperty("bench.formatVersion", "2"));
            Environment env = new Environment(settings);
            StagingSettings staging = StagingSettings.from(env);
            Catalog catalog =
                    CatalogSettings.from(env, staging, S3Settings.from(env)).load();
            TableSettings tableSettings = TableSettings.from(env);
            StagingStore store = new StagingStore(server.newClient(), staging);
            BatchStager stager = new BatchStager(store);
            Random random = new Random(1);
            long t0 = System.nanoTime();
            for (int m = 0; m < merges; m++) {
                List<Change> batch = new ArrayList<>();
                for (int i = 0; i < perMerge; i++) {
                    long item = random.nextInt(100_000);
                    Operation op = random.nextInt(10) < 8 ? Operation.MODIFY : Operation.REMOVE;
                    batch.add(MergeThroughput.change(item, op, (long) m * perMerge + i, random));
                }
                stager.stage(StreamEvents.batch(batch).getRecords());
                new Merger(catalog, tableSettings, store, OPTIONS).run();
                if ((m + 1) % 50 == 0) {
                    System.out.printf("%d merges done (%.0f s)%n", m + 1, (System.nanoTime() - t0) / 1e9);
                }
            }
            Table table = catalog.loadTable(TableIdentifier.of(tableSettings.namespace(), tableSettings.name()));
            long start = System.nanoTime();
            MaintenanceResult r = new Maintenance(
                            table,
                            MaintenanceOptions.DEFAULTS.withMaxGroupsPerRun(1000),
                            "s3://bench/staging/",
                            Clock.systemUTC())
                    .run(EnumSet.of(MaintenanceTask.COMPACT), false);
            double seconds = (System.nanoTime() - start) / 1e9;
            MaintenanceResult.Compaction c = r.compaction();
            System.out.printf(
                    "after %d merges of %d changes: data files %d -> %d, delete files %d -> %d%n",
                    merges,
                    perMerge,
                    c.dataFilesBefore(),
                    c.dataFilesAfter(),
                    c.deleteFilesBefore(),
                    c.deleteFilesAfter());
            System.out.printf(
                    "compaction: %d groups, %,d bytes rewritten in %.1f s = %.1f MB/s%n",
                    c.groups(), c.bytesRewritten(), seconds, c.bytesRewritten() / 1e6 / seconds);
            Results.report(
                    "compaction after " + merges + " merges of " + perMerge + " changes (" + c.dataFilesBefore()
                            + " data + " + c.deleteFilesBefore() + " delete files), per core"
                            + (OPTIONS.keyIndex() ? ", key index on (writes the moves)" : ", key index off")
                            + String.format(" [%.1f s]", seconds),
                    ">= 100 MB/s",
                    String.format(
                            "%.1f MB/s",
                            c.bytesRewritten()
                                    / 1e6
                                    / seconds
                                    / Runtime.getRuntime().availableProcessors()));
        }
    }
}
