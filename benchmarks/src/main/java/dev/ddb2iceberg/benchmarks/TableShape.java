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
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.status.ScanShape;
import dev.ddb2iceberg.table.TableCreator;
import dev.ddb2iceberg.table.TableSettings;
import dev.ddb2iceberg.testkit.LocalStack;
import java.io.Closeable;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Random;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;

/**
 * A day in the life of a table: a steady stream of mixed changes (70% updates of existing items,
 * 10% new items, 20% deletes) merged once a simulated minute into a bulk-loaded table, with the
 * template's hourly maintenance (compaction, snapshot expiry, orphan files) after every 60 merges.
 * Per hour: the merges' p50, p95 and max against the first merge after compaction; the files a full
 * scan opens (data and delete files) at their worst and right after compaction; and a full scan's
 * time at minute 59 and right after compaction; and the hour's maintenance time and the bytes its
 * compaction rewrote against the bytes the hour's merges wrote.
 *
 * <p>Run: {@code java -Xmx8g -cp ... dev.ddb2iceberg.benchmarks.TableShape 1000000 [10000000]}, with
 * {@code -Dbench.changes} (per merge, default 5,000), {@code -Dbench.merges} (default 120),
 * {@code -Dbench.maintenanceEvery} (default 60), {@code -Dbench.narrow=true} (items without the
 * 500-byte note), {@code -Dbench.rewriteBelow}, {@code -Dbench.rewritePerMerge} and
 * {@code -Dbench.maxChanges} (the merger's REWRITE_FILES_BELOW_BYTES, REWRITE_BYTES_PER_MERGE and
 * MAX_CHANGES_PER_RUN, which also bounds the rows a merge folds).
 */
public final class TableShape {
    private static final int CHANGES = Integer.getInteger("bench.changes", 5_000);
    private static final int MERGES = Integer.getInteger("bench.merges", 120);
    private static final int MAINTENANCE_EVERY = Integer.getInteger("bench.maintenanceEvery", 60);
    private static final MergeOptions OPTIONS = MergeOptions.DEFAULTS
            .withMaxChanges(Integer.getInteger("bench.maxChanges", MergeOptions.DEFAULTS.maxChanges()))
            .withRewriteFilesBelow(Long.getLong("bench.rewriteBelow", MergeOptions.DEFAULTS.rewriteFilesBelowBytes()))
            .withRewriteBytesPerMerge(
                    Long.getLong("bench.rewritePerMerge", MergeOptions.DEFAULTS.rewriteBytesPerMerge()));

    public static void main(String[] args) throws Exception {
        AsPackaged.hideWhatThePackagesLeaveOut(); // Hadoop's defaults files, as in the Lambda packages
        long[] sizes = args.length == 0
                ? new long[] {1_000_000L}
                : Arrays.stream(args).mapToLong(Long::parseLong).toArray();
        Path dir = Files.createTempDirectory("shape-bench");
        try (EmbeddedS3Server server = EmbeddedS3Server.onDisk(dir.resolve("s3"))) {
            server.createBucket("bench");
            LocalStack stack = new LocalStack(server, "bench", dir);
            for (long rows : sizes) {
                run(stack, server, rows);
            }
        } finally {
            MergeThroughput.deleteRecursively(dir);
        }
    }

    private static void run(LocalStack stack, EmbeddedS3Server server, long rows) throws IOException {
        String name = "shape_" + rows;
        Environment env = new Environment(stack.environment(name));
        StagingSettings staging = new StagingSettings("bench", "staging-" + rows + "/", "quarantine/");
        TableSettings tableSettings = TableSettings.from(env);
        Catalog catalog =
                CatalogSettings.from(env, staging, S3Settings.from(env)).load();
        try {
            StagingStore store = new StagingStore(server.newClient(), staging);
            BatchStager stager = new BatchStager(store);
            TableIdentifier id = TableIdentifier.of(tableSettings.namespace(), tableSettings.name());
            Table table = TableCreator.loadOrCreate(
                    catalog, id, tableSettings, List.of(MergeThroughput.change(0, Operation.INSERT, 0, new Random(0))));
            long t0 = System.nanoTime();
            MergeThroughput.bulkLoad(table, rows);
            System.out.printf("loaded %,d rows in %.1f s%n", rows, (System.nanoTime() - t0) / 1e9);
            Random random = new Random(rows);
            // A first merge (untimed) builds the key index from the loaded table, as after an upgrade.
            MergeThroughput.stage(stager, rows, CHANGES, 0, random);
            new Merger(catalog, tableSettings, store, OPTIONS).run();
            int seq = CHANGES;
            maintain(catalog, id);
            System.out.printf(
                    "%,d rows, %,d changes a merge, maintenance every %d merges; folding files below %,d bytes,"
                            + " at most %,d bytes a merge%n",
                    rows, CHANGES, MAINTENANCE_EVERY, OPTIONS.rewriteFilesBelowBytes(), OPTIONS.rewriteBytesPerMerge());
            System.out.printf(
                    "%-6s %-8s %-12s %-12s %-8s%n", "merge", "seconds", "data files", "delete files", "opens");

            Hour hour = new Hour(scan(catalog.loadTable(id)));
            for (int m = 1; m <= MERGES; m++) {
                MergeThroughput.stage(stager, rows, CHANGES, seq, random);
                seq += CHANGES;
                long m0 = System.nanoTime();
                new Merger(catalog, tableSettings, store, OPTIONS).run();
                double seconds = (System.nanoTime() - m0) / 1e9;
                Table merged = catalog.loadTable(id);
                ScanShape shape = ScanShape.of(merged, MaintenanceOptions.DEFAULTS.targetFileSizeBytes());
                hour.merged(seconds, shape, addedBytes(merged));
                if (m % 10 == 0 || m == 1) {
                    System.out.printf(
                            "%-6d %-8.2f %-12d %-12d %-8d%n",
                            m, seconds, shape.dataFiles(), shape.deleteFiles(), shape.filesOpened());
                }
                if (m % MAINTENANCE_EVERY == 0) {
                    Scan before = scan(catalog.loadTable(id));
                    long c0 = System.nanoTime();
                    MaintenanceResult.Compaction compaction = maintain(catalog, id);
                    double maintenanceSeconds = (System.nanoTime() - c0) / 1e9;
                    Scan after = scan(catalog.loadTable(id));
                    hour.report(rows, m / MAINTENANCE_EVERY, before, after);
                    hour.reportCompaction(rows, m / MAINTENANCE_EVERY, compaction, maintenanceSeconds);
                    hour = new Hour(after);
                }
            }
        } finally {
            ((Closeable) catalog).close();
        }
    }

    /** The template's hourly maintenance, every task; what its compaction did. */
    private static MaintenanceResult.Compaction maintain(Catalog catalog, TableIdentifier id) {
        long t0 = System.nanoTime();
        MaintenanceResult r = new Maintenance(
                        catalog.loadTable(id), MaintenanceOptions.DEFAULTS, "s3://bench/staging/", Clock.systemUTC())
                .run(EnumSet.allOf(MaintenanceTask.class), false);
        System.out.printf("maintenance: %.1f s, %s%n", (System.nanoTime() - t0) / 1e9, r.compaction());
        return r.compaction();
    }

    /** Bytes of the files (data and delete) the table's latest commit added: what a merge wrote. */
    private static long addedBytes(Table table) {
        return Long.parseLong(table.currentSnapshot().summary().getOrDefault("added-files-size", "0"));
    }

    /** A full scan's files and time: every row read, every column, the deletes applied (the best of 3). */
    private record Scan(ScanShape shape, double seconds, long rows) {}

    private static Scan scan(Table table) throws IOException {
        ScanShape shape = ScanShape.of(table, MaintenanceOptions.DEFAULTS.targetFileSizeBytes());
        double best = Double.MAX_VALUE;
        long n = 0;
        for (int i = 0; i < 3; i++) {
            long t0 = System.nanoTime();
            n = 0;
            try (CloseableIterable<Record> rows = IcebergGenerics.read(table).build()) {
                for (Record ignored : rows) {
                    n++;
                }
            }
            best = Math.min(best, (System.nanoTime() - t0) / 1e9);
        }
        return new Scan(shape, best, n);
    }

    /** One hour of merges, from the compacted table it starts with. */
    private static final class Hour {
        private final Scan compacted;
        private final List<Double> times = new ArrayList<>();
        private int worstFiles;
        private int worstDataFiles;
        private int worstDeleteFiles;

        Hour(Scan compacted) {
            this.compacted = compacted;
        }

        /** Bytes the hour's merges wrote (new data and delete files). */
        private long mergedBytes;

        void merged(double seconds, ScanShape shape, long bytesWritten) {
            times.add(seconds);
            mergedBytes += bytesWritten;
            if (shape.filesOpened() > worstFiles) {
                worstFiles = shape.filesOpened();
                worstDataFiles = shape.dataFiles();
                worstDeleteFiles = shape.deleteFiles();
            }
        }

        /**
         * The hour's compaction against the hour's changes: work that follows the changes rewrites a
         * few times the bytes the merges wrote, whatever the table's size.
         */
        void reportCompaction(long rows, int n, MaintenanceResult.Compaction c, double seconds) {
            Results.report(
                    String.format(
                            "table shape, %,d rows, hour %d: maintenance seconds; bytes compaction rewrote / bytes"
                                    + " the hour's merges wrote",
                            rows, n),
                    "grows with the changes, not the table",
                    String.format(
                            "%.1f s; %,d / %,d bytes = %.1f (%d groups, %d files in, %d out)",
                            seconds,
                            c.bytesRewritten(),
                            mergedBytes,
                            mergedBytes == 0 ? 0.0 : (double) c.bytesRewritten() / mergedBytes,
                            c.groups(),
                            c.filesRewritten(),
                            c.filesWritten()));
        }

        void report(long rows, int n, Scan minute59, Scan afterCompaction) {
            List<Double> sorted = times.stream().sorted().toList();
            double first = times.get(0);
            double p50 = sorted.get(sorted.size() / 2);
            double p95 = sorted.get((int) Math.ceil(sorted.size() * 0.95) - 1);
            double max = sorted.get(sorted.size() - 1);
            // The compacted table: the rows at the target file size, one file per partition at least (what
            // a full compaction leaves; the template's maintenance may leave a healthy table as it is).
            int partitions = compacted.shape().partitions();
            int reference = compacted.shape().compactedFiles();
            int bound = 2 * reference + partitions;
            String what = String.format(
                    "table shape, %,d rows, hour %d (%d merges of %,d changes)", rows, n, times.size(), CHANGES);
            Results.report(
                    what + ": merge p50 / p95 / max, first after compaction",
                    "p95 <= 1.2 x first",
                    String.format(
                            "%.2f / %.2f / %.2f s, first %.2f s (p95 %.1f x first)",
                            p50, p95, max, first, p95 / first));
            Results.report(
                    what + ": files a full scan opens, worst of the hour",
                    String.format("<= 2 x compacted + 1 per" + " partition = %d", bound),
                    String.format(
                            "%d (%d data + %d delete); compacted %d; after the hour's maintenance %d",
                            worstFiles,
                            worstDataFiles,
                            worstDeleteFiles,
                            reference,
                            afterCompaction.shape().filesOpened()));
            Results.report(
                    what + ": full scan at minute 59 / right after the hour's maintenance",
                    "<= 1.3",
                    String.format(
                            "%.2f s / %.2f s = %.2f (%,d rows)",
                            minute59.seconds(),
                            afterCompaction.seconds(),
                            minute59.seconds() / afterCompaction.seconds(),
                            afterCompaction.rows()));
            if (minute59.rows() != afterCompaction.rows()) {
                throw new IllegalStateException("compaction changed the rows: " + minute59.rows() + " before, "
                        + afterCompaction.rows() + " after");
            }
        }
    }
}
