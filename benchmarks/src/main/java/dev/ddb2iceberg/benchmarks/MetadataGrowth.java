package dev.ddb2iceberg.benchmarks;

import dev.ddb2iceberg.commit.Checkpoint;
import dev.ddb2iceberg.config.CatalogSettings;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.S3Settings;
import dev.ddb2iceberg.config.StagingSettings;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.FaultInjectingBlobStore;
import dev.ddb2iceberg.index.KeyIndex;
import dev.ddb2iceberg.maintenance.Maintenance;
import dev.ddb2iceberg.maintenance.MaintenanceOptions;
import dev.ddb2iceberg.maintenance.MaintenanceTask;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.merge.MergeResult;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.observe.LogSettings;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.table.TableSettings;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.StreamEvents;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.slf4j.event.Level;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Table metadata after a simulated day of continuous mode: a merge commit every 5 s (17,280 a day,
 * {@code args[0]}), each of 10 staged objects (two shards' 1 s batches) of 20 changes with 10%
 * removals, and maintenance every simulated hour (720 commits) with the snapshot expiry the
 * template sets for continuous mode ({@code -Dbench.snapshotHours}, default 1). Commits run back to
 * back; maintenance's clock is moved so that "an hour ago" means 720 commits ago, which is what
 * expiry sees in a real day.
 *
 * <p>Reports per simulated hour: metadata.json size, snapshots, manifests in the current snapshot,
 * the current removals files' size (newest file), metadata files in storage, the merge's time, and
 * every removals file in storage (orphan cleanup removes those no snapshot names after 72 h, which
 * this compressed day never reaches).
 *
 * <p>Run: {@code java -cp ... dev.ddb2iceberg.benchmarks.MetadataGrowth 17280}
 */
public final class MetadataGrowth {
    private static final int PER_HOUR = Integer.getInteger("bench.commitsPerHour", 720);
    private static final int SNAPSHOT_HOURS = Integer.getInteger("bench.snapshotHours", 1);
    private static final int OBJECTS = 10;
    private static final int CHANGES = 20;
    private static final int KEYS = 100_000;

    public static void main(String[] args) throws Exception {
        AsPackaged.hideWhatThePackagesLeaveOut(); // Hadoop's defaults files, as in the Lambda packages
        int commits = args.length > 0 ? Integer.parseInt(args[0]) : 17_280;
        LogSettings.defaultPipelineLevel(Level.WARN);
        Path dir = Files.createTempDirectory("metadata-bench");
        try (EmbeddedS3Server server = EmbeddedS3Server.onDisk(dir.resolve("s3"))) {
            server.createBucket("bench");
            Map<String, String> vars = new LocalStack(server, "bench", dir).environment("day");
            Environment env = new Environment(vars);
            StagingSettings staging = StagingSettings.from(env);
            Catalog catalog =
                    CatalogSettings.from(env, staging, S3Settings.from(env)).load();
            TableSettings tableSettings = TableSettings.from(env);
            TableIdentifier id = TableIdentifier.of(tableSettings.namespace(), tableSettings.name());
            S3Client s3 = server.newClient();
            StagingStore store = new StagingStore(s3, staging);
            BatchStager stager = new BatchStager(store);
            // Continuous mode's merge options: MERGE_MODE=continuous (-Dbench.rewriteBelow to change the rewrite
            // threshold).
            vars.put("MERGE_MODE", "continuous");
            MergeOptions options = MergeOptions.from(new Environment(vars))
                    .withRewriteFilesBelow(Long.getLong("bench.rewriteBelow", MergeOptions.REWRITE_BELOW_BYTES));
            MaintenanceOptions maintenanceOptions = MaintenanceOptions.from(env);
            maintenanceOptions = new MaintenanceOptions(
                    maintenanceOptions.targetFileSizeBytes(),
                    maintenanceOptions.maxBytesPerRun(),
                    maintenanceOptions.maxGroupsPerRun(),
                    maintenanceOptions.minInputFiles(),
                    maintenanceOptions.deleteRatio(),
                    maintenanceOptions.maxRunSeconds(),
                    SNAPSHOT_HOURS,
                    maintenanceOptions.minSnapshotsToKeep(),
                    maintenanceOptions.orphanMinAgeHours(),
                    maintenanceOptions.manifestThreshold(),
                    maintenanceOptions.historyRetentionDays(),
                    maintenanceOptions.historySnapshotMaxAgeHours(),
                    maintenanceOptions.glueTableVersionsKept(),
                    maintenanceOptions.glueTableVersionsPerRun());
            System.out.printf(
                    "metadata growth: %,d commits of %d objects x %d changes, maintenance every %d commits,"
                            + " snapshots kept %d h, small files rewritten below %,d bytes%n",
                    commits, OBJECTS, CHANGES, PER_HOUR, SNAPSHOT_HOURS, options.rewriteFilesBelowBytes());
            System.out.printf(
                    "%-5s %-14s %-10s %-10s %-12s %-10s %-12s %-12s %s%n",
                    "hour",
                    "metadata.json",
                    "snapshots",
                    "manifests",
                    "removals",
                    "md files",
                    "merge mean",
                    "merge max",
                    "removals files stored");

            Random random = new Random(3);
            boolean[] exists = new boolean[KEYS];
            long sequence = 5_000_000_000_000_000_000L;
            long[] committedAt = new long[commits + 1];
            long hourMillis = 0;
            long hourMax = 0;
            long puts = 0;
            long gets = 0;
            long lists = 0;
            for (int n = 1; n <= commits; n++) {
                for (int o = 0; o < OBJECTS; o++) {
                    List<Change> batch = new ArrayList<>(CHANGES);
                    for (int i = 0; i < CHANGES; i++) {
                        int k = random.nextInt(KEYS);
                        Map<String, DdbValue> key = Map.of("pk", new DdbValue.S("item-" + k));
                        String seq = Long.toString(++sequence);
                        if (exists[k] && random.nextInt(10) == 0) {
                            exists[k] = false;
                            batch.add(new Change(key, Operation.REMOVE, null, seq, System.currentTimeMillis(), false));
                        } else {
                            Map<String, DdbValue> image = new LinkedHashMap<>(key);
                            image.put("status", new DdbValue.S("open"));
                            image.put("total", new DdbValue.N(Integer.toString(random.nextInt(100_000))));
                            batch.add(new Change(
                                    key,
                                    exists[k] ? Operation.MODIFY : Operation.INSERT,
                                    image,
                                    seq,
                                    System.currentTimeMillis(),
                                    false));
                            exists[k] = true;
                        }
                    }
                    stager.stage(StreamEvents.batch(batch).getRecords());
                }
                long puts0 = server.faults().requests(FaultInjectingBlobStore.Operation.PUT);
                long gets0 = server.faults().requests(FaultInjectingBlobStore.Operation.GET);
                long lists0 = server.faults().requests(FaultInjectingBlobStore.Operation.LIST);
                long t0 = System.nanoTime();
                MergeResult r = new Merger(catalog, tableSettings, store, options).run();
                long ms = (System.nanoTime() - t0) / 1_000_000;
                puts += server.faults().requests(FaultInjectingBlobStore.Operation.PUT) - puts0;
                gets += server.faults().requests(FaultInjectingBlobStore.Operation.GET) - gets0;
                lists += server.faults().requests(FaultInjectingBlobStore.Operation.LIST) - lists0;
                if (r.snapshotId() == null) {
                    throw new IllegalStateException("commit " + n + " committed nothing");
                }
                committedAt[n] = System.currentTimeMillis();
                hourMillis += ms;
                hourMax = Math.max(hourMax, ms);
                if (n % PER_HOUR == 0) {
                    // Maintenance "an hour later": its clock puts "SNAPSHOT_HOURS ago" at the commit that many hours
                    // back.
                    int back = Math.max(1, n - SNAPSHOT_HOURS * PER_HOUR);
                    Instant now = Instant.ofEpochMilli(committedAt[back])
                            .plus(Duration.ofHours(SNAPSHOT_HOURS))
                            .plusMillis(1);
                    new Maintenance(
                                    catalog.loadTable(id),
                                    maintenanceOptions,
                                    "s3://" + staging.bucket() + "/" + staging.stagingPrefix(),
                                    Clock.fixed(now, ZoneOffset.UTC))
                            .run(EnumSet.allOf(MaintenanceTask.class), false);
                    report(n / PER_HOUR, catalog.loadTable(id), s3, hourMillis / PER_HOUR, hourMax);
                    if (n == PER_HOUR) {
                        System.out.printf(
                                "      S3 requests per merge (first hour): %.1f PUT, %.1f GET, %.1f LIST%n",
                                (double) puts / PER_HOUR, (double) gets / PER_HOUR, (double) lists / PER_HOUR);
                    }
                    hourMillis = 0;
                    hourMax = 0;
                }
            }
        } finally {
            MergeThroughput.deleteRecursively(dir);
        }
    }

    private static void report(int hour, Table table, S3Client s3, long meanMs, long maxMs) {
        String metadata = ((BaseTable) table).operations().current().metadataFileLocation();
        long metadataBytes = table.io().newInputFile(metadata).getLength();
        int snapshots = 0;
        for (Snapshot ignored : table.snapshots()) {
            snapshots++;
        }
        int manifests = table.currentSnapshot().allManifests(table.io()).size();
        // The removals index the current checkpoint names (manifest, parts, deltas): at most what a
        // cold merger reads (it reads the deltas and only the blocks its keys fall in).
        String removals = Checkpoint.readProperty(table, "ddb2iceberg.tombstones");
        long removalsBytes = 0;
        for (String f : removals == null ? List.<String>of() : KeyIndex.filesOfManifest(table.io(), removals)) {
            removalsBytes += table.io().newInputFile(f).getLength();
        }
        String location = table.location().replaceFirst("^s3a?://", "");
        String bucket = location.substring(0, location.indexOf('/'));
        String prefix = location.substring(location.indexOf('/') + 1) + "/metadata/";
        long metadataFiles = s3.listObjectsV2Paginator(b -> b.bucket(bucket).prefix(prefix)).contents().stream()
                .filter(o -> o.key().endsWith(".metadata.json"))
                .count();
        // The removals index's files in storage (including those only expired snapshots named).
        String derived = location.substring(location.indexOf('/') + 1) + "/removals-index/";
        long[] removalsStored = {0, 0};
        s3.listObjectsV2Paginator(b -> b.bucket(bucket).prefix(derived))
                .contents()
                .forEach(o -> {
                    removalsStored[0]++;
                    removalsStored[1] += o.size();
                });
        System.out.printf(
                "%-5d %-14s %-10d %-10d %-12s %-10d %-12s %-12s %s%n",
                hour,
                String.format("%,d B", metadataBytes),
                snapshots,
                manifests,
                String.format("%,d B", removalsBytes),
                metadataFiles,
                meanMs + " ms",
                maxMs + " ms",
                String.format("%,d files, %,d B", removalsStored[0], removalsStored[1]));
        if (hour % 6 == 0 || hour == 24) {
            Results.report(
                    String.format(
                            "metadata after %d simulated hours of continuous mode (720 commits/h, snapshots kept"
                                    + " %d h)",
                            hour, SNAPSHOT_HOURS),
                    "bounded",
                    String.format(
                            "metadata.json %,d B, %d snapshots, %d manifests," + " removals %,d B, merge mean %d ms",
                            metadataBytes, snapshots, manifests, removalsBytes, meanMs));
        }
    }

    private MetadataGrowth() {}
}
