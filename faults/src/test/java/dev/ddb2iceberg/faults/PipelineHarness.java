package dev.ddb2iceberg.faults;

import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.commit.Checkpoint;
import dev.ddb2iceberg.commit.ExportProgress;
import dev.ddb2iceberg.history.ChangeHistory;
import dev.ddb2iceberg.load.ExportLoadResult;
import dev.ddb2iceberg.load.ExportLoader;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.testkit.DynamoDbExportFiles;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.FaultInjectingBlobStore;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.UnknownOutcomeCatalog;
import dev.ddb2iceberg.maintainer.MaintenanceSettings;
import dev.ddb2iceberg.maintenance.Maintenance;
import dev.ddb2iceberg.maintenance.MaintenanceTask;
import dev.ddb2iceberg.export.ExportLocation;
import dev.ddb2iceberg.index.KeyIndex;
import dev.ddb2iceberg.config.RemovalPolicy;
import dev.ddb2iceberg.merge.ContinuousMerge;
import dev.ddb2iceberg.merge.MergeOptions;
import dev.ddb2iceberg.merge.MergeResult;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.testkit.TableItems;
import dev.ddb2iceberg.testkit.ExpectedTable;
import dev.ddb2iceberg.testkit.StreamEvents;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.io.CloseableIterable;

/**
 * One seed's run of the whole pipeline: the source table changes, Lambda delivers its stream to the
 * stager (batches per shard, retries from the failed record, whole batches redelivered after a
 * crash, bisected batches, duplicates), and the merger and maintenance run in a random order, with
 * S3 errors, crashes and commit races injected. After every merger and maintenance run the table
 * must equal the model of exactly the staged objects its checkpoints say were applied; at the end,
 * after a fault-free drain, it must equal the source table: nothing lost, nothing duplicated, no
 * deleted item back.
 */
final class PipelineHarness {
  /** Thrown by injected crashes: the process dies here, as a Lambda whose sandbox is killed. */
  static final class InjectedCrash extends RuntimeException {
    InjectedCrash(String where) {
      super("injected crash " + where);
    }
  }

  private final long seed;
  /**
   * Every other seed finds live rows through the key index, so both lookups face every fault; one in
   * four rewrites small files it touches (and continuous runs always do).
   */
  private final MergeOptions defaults;
  private final Random random;
  private final EmbeddedS3Server server;
  private final FaultInjectingBlobStore faults;
  private final SourceTable source;
  private final MaintenanceSettings settings;
  private final Catalog catalog;
  private final StagingStore store;
  private final TableIdentifier id;
  private final FaultStats stats;
  /** The changes in each staged object the stager wrote, by checkpoint token. */
  private final Map<String, List<Change>> stagedObjects = new HashMap<>();
  /** Tokens of every object some committed snapshot applied (snapshots may expire later). */
  private final Set<String> applied = new HashSet<>();
  private final List<String> trail = new ArrayList<>();
  /**
   * About one seed in three starts from a table that held items before its stream began: a
   * DynamoDB export (those items plus the stream's first changes) is loaded chunk by chunk, with
   * faults, while the stream flows. Its own random source leaves the other seeds' runs as they were.
   */
  private final Random exportRandom;
  private final boolean withExport;
  /** Items only the export has (written before the stream), as changes older than any other. */
  private final List<Change> history = new ArrayList<>();
  /** The export's items in the order the export files hold them, as the loader turns them into changes. */
  private final List<Change> exported = new ArrayList<>();
  private static final int EXPORT_FILES = 3;
  private String exportLocation;
  private boolean exportLoaded;
  /**
   * Half the seeds keep a change history (HISTORY_TABLE), which must hold each change of the
   * objects its checkpoints name exactly once after every run; and seeds without an export merge
   * under a random removal policy (an export loaded later than the stream's removals of its items
   * cannot bring their rows back to keep them, so those seeds keep the default). Their own random
   * source leaves the other draws as they were.
   */
  private final boolean withHistory;
  private final RemovalPolicy policy;
  private final TableIdentifier historyId;
  /** Tokens of every object some history snapshot covered. */
  private final Set<String> inHistory = new HashSet<>();

  PipelineHarness(long seed, EmbeddedS3Server server, String bucket, Path dir, FaultStats stats) {
    this.seed = seed;
    // Merges fold small files (the default); one seed in four turns that off, so merges also give
    // small files deletes, carried from merge to merge. A small budget on half the folding seeds
    // leaves files for later merges to fold.
    MergeOptions options = MergeOptions.DEFAULTS.withKeyIndex(seed % 2 == 0);
    this.defaults = seed % 4 == 1 ? options.withRewriteFilesBelow(0)
        : seed % 8 == 3 ? options.withRewriteBytesPerMerge(8 << 10) : options;
    this.random = new Random(seed);
    this.server = server;
    this.faults = server.faults();
    this.stats = stats;
    SourceTable.KeySchema keys = SourceTable.KeySchema.values()[random.nextInt(SourceTable.KeySchema.values().length)];
    this.source = new SourceTable(random, keys, 20 + random.nextInt(60), 1 + random.nextInt(3));
    Map<String, String> env = new LocalStack(server, bucket, dir).environment("orders");
    Random optionsRandom = new Random(seed * 131 + 17);
    this.withHistory = optionsRandom.nextBoolean();
    if (withHistory) {
      env.put("HISTORY_TABLE", "orders_history");
    }
    boolean exportLikely = new Random(seed * 31 + 7).nextInt(3) == 0; // as exportRandom draws it below
    if (!exportLikely && optionsRandom.nextBoolean()) {
      env.put("TTL_EXPIRIES", List.of("delete", "keep", "mark").get(optionsRandom.nextInt(3)));
      env.put("DELETES", optionsRandom.nextBoolean() ? "soft" : "hard");
    }
    env.put("PARTITION_SPEC", random.nextBoolean() ? "none" : "bucket(4, " + source.key(0).keySet().iterator().next() + ")");
    env.put("TABLE_FORMAT_VERSION", random.nextInt(4) == 0 ? "3" : "2");
    // Iceberg's S3FileIO waits 2 to 20 s between retries by default; injected errors need no wait.
    env.put("CATALOG_PROPERTIES", env.get("CATALOG_PROPERTIES")
        + ",s3.retry.num-retries=1,s3.retry.min-wait-ms=10,s3.retry.max-wait-ms=50");
    this.settings = MaintenanceSettings.from(new Environment(env));
    this.catalog = settings.catalog().load();
    this.store = new StagingStore(server.newClient(), settings.staging());
    this.id = TableIdentifier.of(settings.table().namespace(), settings.table().name());
    this.historyId = TableIdentifier.of(settings.table().namespace(), "orders_history");
    this.policy = settings.table().removals();
    this.exportRandom = new Random(seed * 31 + 7);
    this.withExport = exportRandom.nextInt(3) == 0;
    if (withHistory) {
      stats.count("seeds with a change history");
    }
    if (!policy.equals(RemovalPolicy.DEFAULT)) {
      stats.count("seeds under " + policy);
    }
    if (withExport != exportLikely) {
      throw new IllegalStateException("the export draw changed: keep the policy draw in step with it");
    }
    trail.add("seed " + seed + ": keys " + keys + ", " + source.shards().size() + " shards, " + env.get("PARTITION_SPEC")
        + ", v" + env.get("TABLE_FORMAT_VERSION") + (withExport ? ", initial load from an export" : "") + ", " + policy
        + (withHistory ? ", change history" : ""));
  }

  /** Random steps, then a fault-free drain and the final comparison with the source table. */
  void run(int steps) {
    if (withExport) {
      writeExport();
    }
    for (int step = 0; step < steps; step++) {
      if (withExport && !exportLoaded && exportRandom.nextInt(6) == 0) {
        loadExportChunk(true);
      }
      int what = random.nextInt(100);
      if (what < 30) {
        source.change(1 + random.nextInt(60));
        if (random.nextInt(8) == 0) {
          source.split();
          stats.count("shard splits");
        }
      } else if (what < 60) {
        deliverOneBatch(true);
      } else if (what < 80) {
        merge(true);
      } else if (what < 85) {
        continuousRun();
      } else {
        maintain(true);
      }
    }
    drain();
  }

  // ------------------------------------------------------------------ the stream and the stager

  private void deliverOneBatch(boolean withFaults) {
    List<SourceTable.Shard> readable = source.shards().stream().filter(SourceTable.Shard::readable).toList();
    if (readable.isEmpty()) {
      return;
    }
    SourceTable.Shard shard = readable.get(random.nextInt(readable.size()));
    int size = Math.min(1 + random.nextInt(80), shard.records.size() - shard.delivered);
    List<Change> batch = new ArrayList<>(shard.records.subList(shard.delivered, shard.delivered + size));
    int mode = withFaults ? random.nextInt(100) : 99;
    if (mode < 12) {
      faults.failFrom(FaultInjectingBlobStore.Operation.PUT, 1, k -> k.startsWith(settings.staging().stagingPrefix()));
      stats.count("S3 PUT errors while staging");
    }
    BatchStager.Result r = stage(batch);
    faults.clear();
    if (mode < 12) {
      // Lambda: the function reported a failed record, or (bisect) failed; it retries from there.
      trail.add("stage " + describe(batch) + " with S3 down: " + (r.complete() ? "staged" : "not staged"));
      if (!r.complete() && random.nextBoolean() && batch.size() > 1) {
        stats.count("bisected batches");
        stage(batch.subList(0, batch.size() / 2));
        trail.add("  bisected: first half staged alone");
      }
      return; // not acknowledged: redelivered from the failed record next time
    }
    if (!r.complete()) {
      throw new AssertionError("seed " + seed + ": staging failed without an injected fault: " + r.failure());
    }
    if (mode < 22) {
      stats.count("stager crashes after staging, before acknowledging");
      trail.add("stage " + describe(batch) + ", crash before acknowledging");
      return; // Lambda saw no answer: the whole batch comes again
    }
    if (mode < 30) {
      stats.count("batches delivered twice");
      stage(batch);
    }
    shard.delivered += batch.size();
    trail.add("stage " + describe(batch) + " from shard " + shard.id);
  }

  private BatchStager.Result stage(List<Change> batch) {
    BatchStager.Result r = new BatchStager(store).stage(StreamEvents.batch(batch).getRecords());
    if (r.complete() && r.stagedObject() != null) {
      stagedObjects.put(Checkpoint.token(r.stagedObject()), List.copyOf(batch));
    }
    return r;
  }

  // ------------------------------------------------------------------ the merger

  private void merge(boolean withFaults) {
    int mode = withFaults ? random.nextInt(100) : 99;
    MergeOptions options = random.nextInt(4) == 0 ? defaults.withMaxChanges(1 + random.nextInt(80)) : defaults;
    if (random.nextInt(3) == 0) {
      options = options.withoutKeyIndexCache(); // a new container: the index comes from storage, damage and all
    }
    boolean tableExists = catalog.tableExists(id);
    Catalog mergeCatalog = catalog;
    String kind = "merge";
    if (mode < 8) {
      faults.failFrom(FaultInjectingBlobStore.Operation.GET, 1 + random.nextInt(3),
          k -> k.startsWith(settings.staging().stagingPrefix()));
      kind = "S3 GET errors reading staged changes";
    } else if (mode < 16) {
      faults.failFrom(FaultInjectingBlobStore.Operation.DELETE, 1, k -> k.startsWith(settings.staging().stagingPrefix()));
      kind = "S3 DELETE errors after the commit (crash before staged objects are deleted)";
    } else if (mode < 22) {
      faults.failFrom(FaultInjectingBlobStore.Operation.PUT, 1 + random.nextInt(4), k -> k.contains("/data/"));
      kind = "S3 PUT errors writing data files";
    } else if (mode < 28) {
      faults.failFrom(FaultInjectingBlobStore.Operation.LIST, 1, k -> true);
      kind = "S3 LIST errors listing staged changes";
    } else if (mode < 36 && tableExists) {
      mergeCatalog = new UnknownOutcomeCatalog(catalog, random.nextBoolean());
      kind = "commit outcome unknown (CommitStateUnknownException)";
    } else if (mode >= 58 && mode < 62 && defaults.keyIndex()) {
      faults.failFrom(FaultInjectingBlobStore.Operation.GET, 1 + random.nextInt(3), k -> k.contains("/key-index/"));
      kind = "S3 GET errors reading the key index";
    } else if (mode >= 62 && mode < 66 && defaults.keyIndex()) {
      faults.failFrom(FaultInjectingBlobStore.Operation.PUT, 1 + random.nextInt(3), k -> k.contains("/key-index/"));
      kind = "S3 PUT errors writing the key index";
    } else if (mode >= 66 && mode < 72 && defaults.keyIndex() && tableExists && damageKeyIndexFile()) {
      kind = "a key index file lost or truncated";
    }
    Merger merger = new Merger(mergeCatalog, settings.table(), store, options);
    if (mode >= 36 && mode < 44) {
      kind = "merger crashes before its commit";
      merger.beforeCommit(t -> {
        throw new InjectedCrash("before the merge commit");
      });
    } else if (mode >= 44 && mode < 52 && tableExists) {
      kind = "maintenance commits while a merge is planning";
      merger.beforeCommit(onFirstAttempt(this::racingMaintenance));
    } else if (mode >= 52 && mode < 58 && tableExists) {
      kind = "another merger commits first";
      merger.beforeCommit(onFirstAttempt(this::racingMerger));
    }
    if (!kind.equals("merge")) {
      stats.count(kind);
    }
    runMerger(merger, kind);
    faults.clear();
    checkTableMatchesItsCheckpoints("after " + kind);
  }

  /**
   * Deletes or truncates one file of the index the current snapshot names (a lost object, a
   * partial upload); false when there is none. Merges must rebuild, never trust it.
   */
  private boolean damageKeyIndexFile() {
    Table table = catalog.loadTable(id);
    List<String> files = KeyIndex.filesOf(table, table.currentSnapshot());
    if (files.isEmpty()) {
      return false;
    }
    String victim = files.get(random.nextInt(files.size()));
    try {
      if (random.nextBoolean()) {
        table.io().deleteFile(victim);
        trail.add("lost key index file " + victim);
      } else {
        byte[] bytes = table.io().newInputFile(victim).newStream().readAllBytes();
        try (var out = table.io().newOutputFile(victim).createOrOverwrite()) {
          out.write(bytes, 0, bytes.length / 2);
        }
        trail.add("truncated key index file " + victim);
      }
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    return true;
  }

  /** A commit hook that runs {@code race} before the first attempt only (the retry must then win). */
  private static Consumer<Table> onFirstAttempt(Runnable race) {
    boolean[] done = {false};
    return table -> {
      if (!done[0]) {
        done[0] = true;
        race.run();
      }
    };
  }

  /** Another merger that commits in the middle of a run. */
  private void racingMerger() {
    runMerger(new Merger(catalog, settings.table(), store, defaults), "the racing merger");
  }

  /** Maintenance that compacts and expires in the middle of a run. */
  private void racingMaintenance() {
    maintenance(Clock.systemUTC()).run(EnumSet.of(MaintenanceTask.COMPACT, MaintenanceTask.EXPIRE), false);
  }

  private void runMerger(Merger merger, String kind) {
    try {
      MergeResult r = merger.run();
      stats.add("changes read by mergers", r.changesRead());
      trail.add(kind + ": " + r.changesRead() + " changes from " + r.objectsApplied() + " objects, backlog "
          + r.backlogObjects() + ", attempts " + r.commitAttempts());
    } catch (RuntimeException e) {
      trail.add(kind + ": failed (" + firstLine(e) + ")");
    }
    recordApplied();
  }

  // ------------------------------------------------------------------ continuous mode

  /** A clock the harness moves: a continuous run's merges take time and its waits pass it. */
  private static final class SteppingClock extends Clock {
    private Instant now = Instant.now();

    void moveTo(Instant t) {
      now = t.isAfter(now) ? t : now;
    }

    @Override
    public Instant instant() {
      return now;
    }

    @Override
    public java.time.ZoneId getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(java.time.ZoneId zone) {
      return this;
    }
  }

  /**
   * A continuous merger run ({@link ContinuousMerge}) on a clock the harness moves. While it waits
   * between merges the stream delivers batches and maintenance sometimes runs; its merges meet S3
   * errors and a racing maintenance commit; about one run in three dies before one of its commits,
   * as a sandbox killed mid-loop. After each of its merges, and after the run, the table must equal
   * its checkpoints.
   */
  private void continuousRun() {
    stats.count("continuous merger runs");
    SteppingClock clock = new SteppingClock();
    int crashAt = random.nextInt(3) == 0 ? 1 + random.nextInt(4) : -1;
    int[] merges = {0};
    Supplier<MergeResult> merge = () -> {
      int n = ++merges[0];
      stats.count("merges in continuous runs");
      Merger m = new Merger(catalog, settings.table(), store, defaults);
      int mode = random.nextInt(100);
      if (n == crashAt) {
        stats.count("continuous runs dying before a commit mid-loop");
        m.beforeCommit(t -> {
          throw new InjectedCrash("before a commit in the middle of a continuous run");
        });
      } else if (mode < 20 && catalog.tableExists(id)) {
        stats.count("maintenance commits while a continuous run's merge is planning");
        m.beforeCommit(onFirstAttempt(this::racingMaintenance));
      } else if (mode < 28) {
        stats.count("S3 DELETE errors after a continuous run's commit");
        faults.failFrom(FaultInjectingBlobStore.Operation.DELETE, 1, k -> k.startsWith(settings.staging().stagingPrefix()));
      } else if (mode < 34) {
        stats.count("S3 PUT errors in a continuous run's merge");
        faults.failFrom(FaultInjectingBlobStore.Operation.PUT, 1 + random.nextInt(3), k -> k.contains("/data/"));
      }
      MergeResult r;
      try {
        r = m.run();
      } finally {
        faults.clear();
        recordApplied();
      }
      trail.add("  continuous merge " + n + ": " + r.changesRead() + " changes from " + r.objectsApplied()
          + " objects, backlog " + r.backlogObjects());
      checkTableMatchesItsCheckpoints("after merge " + n + " of a continuous run");
      clock.moveTo(clock.instant().plusMillis(200 + random.nextInt(4_000)));
      return r;
    };
    ContinuousMerge.Pause streamFlows = t -> {
      clock.moveTo(t);
      for (int i = 1 + random.nextInt(3); i > 0; i--) {
        if (random.nextBoolean()) {
          source.change(1 + random.nextInt(30));
        }
        deliverOneBatch(true);
      }
      if (random.nextInt(6) == 0) {
        maintain(true);
      }
    };
    ContinuousMerge.Settings continuous = new ContinuousMerge.Settings(ContinuousMerge.Mode.CONTINUOUS,
        Duration.ofSeconds(5), Duration.ofSeconds(10), Duration.ofSeconds(55), Duration.ofSeconds(30));
    trail.add("continuous run" + (crashAt > 0 ? " (dies before commit " + crashAt + ")" : ""));
    try {
      ContinuousMerge.Result r = new ContinuousMerge(continuous, merge, store::anyStaged, clock, streamFlows)
          .run(clock.instant().plus(continuous.runLength()));
      trail.add("continuous run ended: " + r.merges().size() + " merges, " + r.stoppedBecause());
    } catch (RuntimeException e) {
      trail.add("continuous run died after " + merges[0] + " merges (" + firstLine(e) + ")");
    }
    faults.clear();
    checkTableMatchesItsCheckpoints("after a continuous run");
  }

  // ------------------------------------------------------------------ maintenance

  private Maintenance maintenance(Clock clock) {
    return new Maintenance(catalog.loadTable(id),
        settings.options().withTargetFileSize(1L << 20).withManifestThreshold(3),
        "s3://" + settings.staging().bucket() + "/" + settings.staging().stagingPrefix(), clock);
  }

  private void maintain(boolean withFaults) {
    if (!catalog.tableExists(id)) {
      return;
    }
    recordApplied(); // before expiry can remove the snapshots that say what was applied
    int mode = withFaults ? random.nextInt(100) : 99;
    // Sometimes days later, so snapshots expire and unreferenced files count as orphans.
    Clock clock = random.nextInt(3) == 0
        ? Clock.fixed(Instant.now().plus(Duration.ofDays(10)), ZoneOffset.UTC) : Clock.systemUTC();
    Maintenance m = maintenance(clock);
    String kind = "maintenance";
    if (mode < 15) {
      kind = "maintenance crashes in the middle of compaction";
      m.beforeCompactionCommit(t -> {
        throw new InjectedCrash("between compaction's writes and its commit");
      });
    } else if (mode < 25) {
      faults.failFrom(FaultInjectingBlobStore.Operation.DELETE, 1 + random.nextInt(3));
      kind = "S3 DELETE errors during maintenance";
    } else if (mode < 35) {
      faults.failFrom(FaultInjectingBlobStore.Operation.GET, 1 + random.nextInt(20), k -> k.contains("/data/"));
      kind = "S3 GET errors during compaction";
    } else if (mode < 45) {
      kind = "a merge commits while compaction is rewriting";
      m.beforeCompactionCommit(t -> racingMerger());
    }
    if (!kind.equals("maintenance")) {
      stats.count(kind);
    }
    try {
      m.run(EnumSet.allOf(MaintenanceTask.class), false);
      if (withHistory && catalog.tableExists(historyId)) {
        // The history's maintenance, under the same faults: compaction must not lose or repeat a change.
        new Maintenance(catalog.loadTable(historyId),
            settings.options().forHistory().withTargetFileSize(1L << 20).withManifestThreshold(3),
            "s3://" + settings.staging().bucket() + "/" + settings.staging().stagingPrefix(), clock)
            .run(EnumSet.allOf(MaintenanceTask.class), false);
      }
      trail.add(kind + (clock.instant().isAfter(Instant.now().plus(Duration.ofDays(1))) ? " (10 days later)" : ""));
    } catch (RuntimeException e) {
      trail.add(kind + ": failed (" + firstLine(e) + ")");
    }
    faults.clear();
    checkTableMatchesItsCheckpoints("after " + kind);
  }

  // ------------------------------------------------------------------ the initial load

  /** Items from before the stream, some early stream changes, and an export of the table as it then is. */
  private void writeExport() {
    for (int i = 0; i < 40; i++) {
      if (exportRandom.nextBoolean()) {
        Map<String, DdbValue> image = new LinkedHashMap<>(source.key(i));
        image.put("status", new DdbValue.S("legacy"));
        image.put("total", new DdbValue.N(Integer.toString(exportRandom.nextInt(10_000))));
        history.add(new Change(source.key(i), Operation.INSERT, image, "1", 0, false));
      }
    }
    source.change(1 + exportRandom.nextInt(40)); // in the stream as well as in the export: overlap
    ExpectedTable atExport = new ExpectedTable();
    atExport.apply(history);
    atExport.apply(source.changes());
    Instant time = Instant.now();
    List<Map<String, DdbValue>> items = new ArrayList<>(atExport.items().values());
    for (Map<String, DdbValue> item : items) {
      Map<String, DdbValue> key = new LinkedHashMap<>();
      source.key(0).keySet().forEach(k -> key.put(k, item.get(k)));
      exported.add(new Change(key, Operation.INSERT, item,
          Long.toString(time.toEpochMilli() * 1000), time.toEpochMilli(), false));
    }
    exportLocation = new DynamoDbExportFiles(server.newClient(), settings.staging().bucket(), "exports/")
        .writeFull("0176446080000" + seed % 10 + "-seed" + seed, time, items, EXPORT_FILES);
    trail.add("export of " + items.size() + " items (" + history.size() + " from before the stream)");
    stats.count("seeds with an initial load");
  }

  /** One chunk of the export, sometimes with a fault. */
  private void loadExportChunk(boolean withFaults) {
    int mode = withFaults ? exportRandom.nextInt(100) : 99;
    boolean tableExists = catalog.tableExists(id);
    ExportLoader loader = new ExportLoader(catalog, settings.table(), store,
        defaults.withMaxChanges(1 + exportRandom.nextInt(30)), server.newClient());
    String kind = "export chunk";
    if (mode < 10) {
      faults.failFrom(FaultInjectingBlobStore.Operation.GET, 1 + exportRandom.nextInt(3), k -> k.startsWith("exports/"));
      kind = "S3 GET errors reading the export";
    } else if (mode < 20) {
      faults.failFrom(FaultInjectingBlobStore.Operation.PUT, 1 + exportRandom.nextInt(3), k -> k.contains("/data/"));
      kind = "S3 PUT errors writing a loaded chunk";
    } else if (mode < 30) {
      kind = "loader crashes before a chunk's commit";
      loader.beforeCommit(t -> {
        throw new InjectedCrash("before the export chunk's commit");
      });
    } else if (mode < 40 && tableExists) {
      kind = "a merge commits while a chunk is planned";
      loader.beforeCommit(onFirstAttempt(this::racingMerger));
    } else if (mode < 50 && tableExists) {
      kind = "maintenance commits while a chunk is planned";
      loader.beforeCommit(onFirstAttempt(this::racingMaintenance));
    }
    if (!kind.equals("export chunk")) {
      stats.count(kind);
    }
    try {
      // A deadline already past: one chunk per call, as a Lambda running out of time would.
      ExportLoadResult r = loader.run(new ExportLoader.Request(ExportLocation.parse(exportLocation),
          List.copyOf(source.key(0).keySet()), Duration.ofMinutes(5), true), Instant.now());
      exportLoaded = r.done();
      stats.add("export items loaded", r.itemsThisRun());
      trail.add(kind + ": " + r.itemsThisRun() + " items, " + r.itemsLoaded() + " of " + r.itemsInExport()
          + (r.done() ? ", done" : ""));
    } catch (RuntimeException e) {
      trail.add(kind + ": failed (" + firstLine(e) + ")");
    }
    faults.clear();
    recordApplied();
    checkTableMatchesItsCheckpoints("after " + kind);
  }

  /** The export items the table's load cursor says are in: whole files before it, lines before it in its file. */
  private List<Change> loadedExportItems(Table table) {
    if (!withExport) {
      return List.of();
    }
    ExportProgress.Load load = ExportProgress.read(table).get(ExportLocation.parse(exportLocation).exportId());
    if (load == null) {
      return List.of();
    }
    List<Change> loaded = new ArrayList<>();
    for (int i = 0; i < exported.size(); i++) { // DynamoDbExportFiles puts item i in file i % files, line i / files
      int file = i % EXPORT_FILES;
      if (file < load.file() || (file == load.file() && i / EXPORT_FILES < load.line())) {
        loaded.add(exported.get(i));
      }
    }
    return loaded;
  }

  // ------------------------------------------------------------------ checks

  /** Adds the objects every merger snapshot still in the table says it applied. */
  private void recordApplied() {
    if (withHistory && catalog.tableExists(historyId)) {
      for (Snapshot s : catalog.loadTable(historyId).snapshots()) {
        String tokens = s.summary().get(PipelineProperties.APPLIED);
        if (tokens != null) {
          inHistory.addAll(Checkpoint.decode(tokens));
        }
      }
    }
    if (!catalog.tableExists(id)) {
      return;
    }
    Table table = catalog.loadTable(id);
    for (Snapshot s : table.snapshots()) {
      String tokens = s.summary().get(PipelineProperties.APPLIED);
      if (tokens != null) {
        applied.addAll(Checkpoint.decode(tokens));
      }
    }
  }

  /** The table holds exactly the changes of the staged objects applied so far: no more, no less. */
  private void checkTableMatchesItsCheckpoints(String when) {
    recordApplied();
    if (!catalog.tableExists(id)) {
      return;
    }
    ExpectedTable expected = new ExpectedTable();
    List<Change> changes = new ArrayList<>();
    for (String token : applied) {
      List<Change> object = stagedObjects.get(token);
      if (object == null) {
        throw failure(when + ": the table says it applied staged object " + token + ", which the stager never wrote");
      }
      changes.addAll(object);
    }
    changes.addAll(loadedExportItems(catalog.loadTable(id)));
    expected.apply(changes, policy); // each key's changes in sequence order, as the merger keeps them
    compare(expected, when);
    checkOneDeleteFilePerDataFile(when);
    checkHistory(when);
  }

  /**
   * The table's shape: no data file carries two delete files (format v2: its file-scoped position
   * deletes are carried into one new file by every merge that touches it) or two deletion vectors (v3).
   */
  private void checkOneDeleteFilePerDataFile(String when) {
    Table table = catalog.loadTable(id);
    if (table.currentSnapshot() == null) {
      return;
    }
    try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
      for (FileScanTask task : tasks) {
        if (task.deletes().size() > 1) {
          throw failure(when + ": data file " + task.file().location() + " carries " + task.deletes().size()
              + " delete files, expected at most one: " + task.deletes().stream().map(d -> d.location()).toList());
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * The change history holds each change of the staged objects its checkpoints name exactly once:
   * none twice (a redelivered batch, a crash between its commit and the table's, a retry), none
   * missing, each as the stream carried it.
   */
  private void checkHistory(String when) {
    if (!withHistory || !catalog.tableExists(historyId)) {
      return;
    }
    Map<String, Change> expected = new HashMap<>();
    for (String token : inHistory) {
      List<Change> object = stagedObjects.get(token);
      if (object == null) {
        throw failure(when + ": the history says it covered staged object " + token + ", which the stager never wrote");
      }
      object.forEach(c -> expected.put(c.sequenceNumber(), c));
    }
    checkHistoryHolds(expected, when);
  }

  private void checkHistoryHolds(Map<String, Change> expected, String when) {
    Map<String, Change> actual = new HashMap<>();
    for (Change c : ChangeHistory.changes(catalog.loadTable(historyId))) {
      if (actual.put(c.sequenceNumber(), c) != null) {
        throw failure(when + ": the change history holds change " + c.sequenceNumber() + " twice");
      }
    }
    if (!expected.equals(actual)) {
      List<String> diff = new ArrayList<>();
      expected.keySet().stream().filter(k -> !actual.containsKey(k)).limit(5).forEach(k -> diff.add("missing " + k));
      actual.keySet().stream().filter(k -> !expected.containsKey(k)).limit(5).forEach(k -> diff.add("unexpected " + k));
      expected.keySet().stream().filter(k -> actual.containsKey(k) && !actual.get(k).equals(expected.get(k))).limit(5)
          .forEach(k -> diff.add("differs " + k + ": expected " + expected.get(k) + " but was " + actual.get(k)));
      throw failure(when + ": the change history (" + actual.size() + " changes) differs from the model's change log ("
          + expected.size() + " changes): " + diff);
    }
    stats.count("change history checks");
  }

  private void compare(ExpectedTable model, String when) {
    Map<Map<String, DdbValue>, Map<String, DdbValue>> expected = model.items();
    Table table = catalog.loadTable(id);
    Map<Map<String, DdbValue>, Map<String, DdbValue>> actual = TableItems.read(table);
    long rows = 0;
    try (CloseableIterable<Record> all = IcebergGenerics.read(table).build()) {
      for (Record ignored : all) {
        rows++;
      }
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    if (rows != actual.size()) {
      throw failure(when + ": " + rows + " rows for " + actual.size() + " keys: duplicated rows");
    }
    if (!expected.equals(actual)) {
      throw failure(when + ": the table differs from the model: " + ExpectedTable.diff(expected, actual));
    }
    if (!policy.equals(RemovalPolicy.DEFAULT)) {
      var marks = TableItems.marks(table);
      if (!model.marks().equals(marks)) {
        throw failure(when + ": the removal marks differ from the model's: expected " + model.marks() + " but were "
            + marks);
      }
    }
  }

  /** No more faults: deliver everything, merge until nothing waits, maintain, compare with the source. */
  private void drain() {
    for (int i = 0; withExport && !exportLoaded && i < 1000; i++) {
      loadExportChunk(false);
    }
    if (withExport && !exportLoaded) {
      throw failure("the export is still not loaded after the drain");
    }
    source.closeAll();
    while (source.shards().stream().anyMatch(SourceTable.Shard::readable)) {
      deliverOneBatch(false);
    }
    for (int i = 0; i < 50; i++) {
      merge(false);
      if (store.list().isEmpty()) {
        break;
      }
    }
    if (!store.list().isEmpty()) {
      throw failure("staged objects still waiting after the drain: " + store.list().size());
    }
    maintain(false);
    ExpectedTable all = new ExpectedTable();
    all.apply(history, policy);
    all.apply(source.changes(), policy);
    if (withHistory && !source.changes().isEmpty()) {
      Map<String, Change> everyChange = new HashMap<>();
      source.changes().forEach(c -> everyChange.put(c.sequenceNumber(), c));
      checkHistoryHolds(everyChange, "at the end: every change of the stream");
    }
    if (catalog.tableExists(id)) {
      compare(all, "at the end");
    } else if (!all.items().isEmpty()) {
      throw failure("no table at the end, but the source has " + all.items().size() + " items");
    }
    stats.add("changes made at the source", source.changes().size());
    stats.add("items in the final table", all.items().size());
    stats.add("items near 400 KB", source.bigItems);
    stats.count("seeds");
  }

  private AssertionError failure(String what) {
    return new AssertionError("seed " + seed + " (rerun: mvn -pl faults test -Dtest=PipelineUnderFaultsTest -Dfaults.seed=" + seed + "): " + what
        + "\nsteps:\n  " + String.join("\n  ", trail));
  }

  private static String describe(List<Change> batch) {
    return batch.size() + " records " + batch.get(0).sequenceNumber() + ".." + batch.get(batch.size() - 1).sequenceNumber();
  }

  private static String firstLine(Throwable e) {
    String m = e.getClass().getSimpleName() + ": " + e.getMessage();
    int nl = m.indexOf('\n');
    return nl < 0 ? m : m.substring(0, nl);
  }
}
