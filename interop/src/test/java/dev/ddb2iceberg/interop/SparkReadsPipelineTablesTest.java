package dev.ddb2iceberg.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.ProjectFiles;
import dev.ddb2iceberg.export.ExportLocation;
import dev.ddb2iceberg.load.ExportLoadResult;
import dev.ddb2iceberg.load.ExportLoader;
import dev.ddb2iceberg.load.parallel.ParallelExportLoad;
import dev.ddb2iceberg.maintenance.MaintenanceResult;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.observe.LogSettings;
import dev.ddb2iceberg.table.TableLayout;
import dev.ddb2iceberg.testkit.DynamoDbExportFiles;
import dev.ddb2iceberg.testkit.ExpectedTable;
import dev.ddb2iceberg.testkit.KeyedWorkload;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.OrderWorkload;
import dev.ddb2iceberg.testkit.RandomValues;
import dev.ddb2iceberg.testkit.RowLineageByKey;
import dev.ddb2iceberg.testkit.TeamNamesWorkload;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileContent;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Schema;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.TableUtil;
import org.apache.iceberg.UpdateProperties;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;
import org.apache.parquet.ParquetReadOptions;
import org.apache.parquet.column.Encoding;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.io.LocalInputFile;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.event.Level;

/**
 * "Readable by every engine", proven by an engine we did not write: Apache Spark 3.5 with Iceberg's
 * Spark runtime, started with the documented {@code spark-sql} packages and settings (docs/getting-started/local.md), reads
 * tables the pipeline wrote on the S3 server and the SQLite catalog, and must see exactly the
 * source table, every attribute and nested value, whether it sits in a typed column or in
 * {@code _ddb_overflow}. One table per situation a reader meets: live position delete files (in
 * Parquet's v1 pages, and in v2 pages), compacted files, format v3 deletion vectors, an evolved schema with widened numbers, and an
 * initial load from a DynamoDB export (whose files the test writes in DynamoDB's documented
 * layout: DynamoDB cannot run here).
 *
 * <p>Every table is written first and Spark then reads them all in one run, since starting Spark
 * costs seconds; each test checks one table's rows.
 */
class SparkReadsPipelineTablesTest {
    @TempDir
    static Path dir;

    private static EmbeddedS3Server server;
    private static ReadmeSparkCommand readme;
    private static final Map<String, PipelineTable> TABLES = new LinkedHashMap<>();
    private static Map<String, SparkProcess.Result> spark;

    @BeforeAll
    static void writeTablesThenReadThemWithSpark() throws Exception {
        LogSettings.defaultPipelineLevel(Level.WARN); // the pipeline's progress is not under test here
        readme = ReadmeSparkCommand.read(ProjectFiles.root().resolve(ReadmeSparkCommand.PAGE));
        server = EmbeddedS3Server.inMemory();
        server.ensureBucket("local"); // the README's warehouse, s3://local/warehouse
        LocalStack stack = new LocalStack(server, "local", dir);

        TABLES.put("orders", ordersWithLivePositionDeletes(stack));
        TABLES.put("orders_v2_pages", ordersWithDeletesInV2Pages(stack));
        TABLES.put("orders_compacted", ordersCompacted(stack));
        TABLES.put("orders_unpartitioned", ordersUnpartitionedAfterOrphanRemoval(stack));
        TABLES.put("items_v3", itemsWithDeletionVectors(stack));
        TABLES.put("items_v3_folded", itemsFoldedWithTheirLineage(stack));
        TABLES.put("evolved", evolvedWithWidenedNumbers(stack));
        TABLES.put("exported", loadedFromAnExport(stack));
        TABLES.put("loaded_in_parallel", loadedInParallel(stack));
        TABLES.put("team_orders", namedLikeTeams(stack, "team_orders", "lower", 7));
        TABLES.put("team_orders_preserve", namedLikeTeams(stack, "team_orders_preserve", "preserve", 8));
        for (PipelineTable t : TABLES.values()) {
            t.assertIcebergReadsTheModel();
        }

        Map<String, String> conf = new LinkedHashMap<>(readme.confFor(dir.resolve("catalog.db"), server.endpoint()));
        // Spark writes timestamps in its session's zone; UTC makes them ISO-8601 instants, as Iceberg keeps them.
        conf.put("spark.sql.session.timeZone", "UTC");
        conf.put("spark.ui.enabled", "false");
        conf.put("spark.sql.shuffle.partitions", "2");
        Map<String, String> queries = new LinkedHashMap<>();
        TABLES.forEach((name, t) -> queries.put(name, "SELECT * FROM " + t.sparkName()));
        queries.put("readme", readme.query());
        queries.put("describe", "DESCRIBE TABLE " + TABLES.get("orders").sparkName());
        queries.put(
                "v3 lineage",
                "SELECT pk, _row_id, _last_updated_sequence_number FROM "
                        + TABLES.get("items_v3_folded").sparkName());
        List<String> removals = docSql("docs/guides/removals.md", "# Removals");
        List<String> history = docSql("docs/guides/change-history.md", "## Queries");
        assertEquals(1, removals.size(), "SQL blocks in docs/guides/removals.md's first section");
        assertEquals(2, history.size(), "SQL blocks in docs/guides/change-history.md's Queries");
        queries.put("live", removals.get(0));
        queries.put("item history", history.get(0));
        queries.put("as of", history.get(1));
        List<String> columnNames = docSql("docs/guides/querying.md", "## Column names");
        assertEquals(1, columnNames.size(), "SQL blocks in docs/guides/querying.md's Column names");
        queries.put("column names", columnNames.get(0));
        spark = SparkProcess.run(Path.of(System.getProperty("spark.work", dir.toString())), conf, queries);
    }

    /** The ```sql blocks of the section of {@code page} under {@code heading} (to the next ## heading), as printed. */
    private static List<String> docSql(String page, String heading) {
        String text;
        try {
            text = "\n" + Files.readString(ProjectFiles.root().resolve(page));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        int start = text.indexOf("\n" + heading);
        assertTrue(start >= 0, page + " has a section " + heading);
        int end = text.indexOf("\n## ", start + heading.length() + 1);
        String section = text.substring(start, end < 0 ? text.length() : end);
        List<String> blocks = new ArrayList<>();
        Matcher m = Pattern.compile("```sql\n(.*?)```", Pattern.DOTALL).matcher(section);
        while (m.find()) {
            blocks.add(m.group(1).trim());
        }
        return blocks;
    }

    @AfterAll
    static void stopServer() {
        if (server != null) {
            server.close();
        }
    }

    /**
     * Orders merged minute by minute, never compacted: readers must apply the position delete files.
     * Their removals keep marked rows and their changes go to a change history, which the README's
     * queries read.
     */
    private static PipelineTable ordersWithLivePositionDeletes(LocalStack stack) {
        return orders(
                stack,
                "orders",
                1,
                Map.of("HISTORY_TABLE", "orders_history", "TTL_EXPIRIES", "mark", "DELETES", "soft"),
                Map.of());
    }

    /**
     * The same kind of table whose delete files are in Parquet's v2 pages (the table asks for them
     * with Iceberg's {@code write.delete.parquet.page-version}), their positions delta-encoded.
     */
    private static PipelineTable ordersWithDeletesInV2Pages(LocalStack stack) {
        PipelineTable t = orders(
                stack, "orders_v2_pages", 9, Map.of(), Map.of(TableProperties.DELETE_PARQUET_PAGE_VERSION, "v2"));
        assertTrue(liveDeleteFiles(t, d -> inV2Pages(t, d)) > 0, "the table has live delete files in v2 pages");
        return t;
    }

    /** Whether a delete file's positions are in v2 pages (delta-encoded). */
    private static boolean inV2Pages(PipelineTable t, DeleteFile d) {
        try {
            Path local = Files.createTempFile(dir, "deletes", ".parquet");
            try (InputStream in = t.table().io().newInputFile(d.location()).newStream()) {
                Files.copy(in, local, StandardCopyOption.REPLACE_EXISTING);
            }
            try (ParquetFileReader reader = ParquetFileReader.open(
                    new LocalInputFile(local), ParquetReadOptions.builder().build())) {
                return reader.getFooter().getBlocks().get(0).getColumns().stream()
                        .anyMatch(c -> c.getEncodings().contains(Encoding.DELTA_BINARY_PACKED));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** {@code tableProperties} are set on the table once its first merge has made it. */
    private static PipelineTable orders(
            LocalStack stack,
            String name,
            long seed,
            Map<String, String> settings,
            Map<String, String> tableProperties) {
        // Merges that give touched files deletes instead of folding them (REWRITE_FILES_BELOW_BYTES=0),
        // so Spark meets position deletes carried from merge to merge (one file per data file), and
        // compaction has files to rewrite. The other tables fold, as merges do by default.
        Map<String, String> unfolded = new HashMap<>(settings);
        unfolded.put("REWRITE_FILES_BELOW_BYTES", "0");
        PipelineTable t = new PipelineTable(stack, name, unfolded);
        OrderWorkload workload = new OrderWorkload(seed, 400);
        for (int minute = 0; minute < 4; minute++) {
            for (OrderWorkload.ShardChanges shard : workload.minute(1_000, 4_000)) {
                t.stage(shard.changes());
            }
            t.merge();
            if (minute == 0 && !tableProperties.isEmpty()) {
                UpdateProperties update = t.table().updateProperties();
                tableProperties.forEach(update::set);
                update.commit();
            }
        }
        assertTrue(t.summary("total-position-deletes") > 0, "the orders table has live position deletes");
        return t;
    }

    /**
     * An unpartitioned table with live position deletes, after orphan removal past its minimum age:
     * its delete files (once written under {@code data//}, and deleted by this removal) are where
     * every reader looks for them.
     */
    private static PipelineTable ordersUnpartitionedAfterOrphanRemoval(LocalStack stack) {
        PipelineTable t = orders(stack, "orders_unpartitioned", 12, Map.of("PARTITION_SPEC", "none"), Map.of());
        assertTrue(t.table().spec().isUnpartitioned());
        MaintenanceResult r = t.removeOrphans(Clock.offset(Clock.systemUTC(), Duration.ofDays(4)));
        assertEquals(List.of(), r.orphans(), "orphans removed from a table whose every file is referenced");
        assertTrue(liveDeleteFiles(t, d -> true) > 0, "the table still has live delete files");
        return t;
    }

    /** The same kind of table after maintenance compacted it: deletes applied, files rewritten. */
    private static PipelineTable ordersCompacted(LocalStack stack) {
        PipelineTable t = orders(stack, "orders_compacted", 2, Map.of(), Map.of());
        MaintenanceResult r = t.compact();
        assertTrue(r.compaction().filesRewritten() > 0, () -> "compaction rewrote files: " + r);
        assertEquals(0, t.summary("total-delete-files"), "no delete file is left after compaction");
        return t;
    }

    /**
     * Format v3: replaced and removed rows are deletion vectors in Puffin files (the merges do not
     * fold here, so the files they touch keep their vectors).
     */
    private static PipelineTable itemsWithDeletionVectors(LocalStack stack) {
        PipelineTable t = new PipelineTable(
                stack, "items_v3", Map.of("TABLE_FORMAT_VERSION", "3", "REWRITE_FILES_BELOW_BYTES", "0"));
        mergeItems(t);
        assertEquals(3, TableUtil.formatVersion(t.table()));
        assertTrue(
                liveDeleteFiles(
                                t,
                                d -> d.content() == FileContent.POSITION_DELETES
                                        && d.format().name().equals("PUFFIN"))
                        > 0,
                "the v3 table has live deletion vectors");
        return t;
    }

    /**
     * Format v3 as merges leave it by default: each merge folds the small files into its new one,
     * the moved rows with their row lineage written into it.
     */
    private static PipelineTable itemsFoldedWithTheirLineage(LocalStack stack) {
        PipelineTable t = new PipelineTable(stack, "items_v3_folded", Map.of("TABLE_FORMAT_VERSION", "3"));
        mergeItems(t);
        return t;
    }

    /** 300 new items, then three merges of 400 changes to them. */
    private static void mergeItems(PipelineTable t) {
        KeyedWorkload workload = new KeyedWorkload(3, 300);
        List<Change> first = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            first.add(workload.upsert(i, Operation.INSERT));
        }
        t.stage(first);
        t.merge();
        for (int run = 0; run < 3; run++) {
            t.stage(workload.next(400));
            t.merge();
        }
    }

    /** The table's live delete files that {@code which} picks, counted once per data file they apply to. */
    private static long liveDeleteFiles(PipelineTable t, Predicate<DeleteFile> which) {
        long n = 0;
        try (CloseableIterable<FileScanTask> tasks = t.table().newScan().planFiles()) {
            for (FileScanTask task : tasks) {
                n += task.deletes().stream().filter(which).count();
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return n;
    }

    /**
     * A schema that grew over twenty merges (attributes of every type and depth appearing), with
     * int, float and narrow decimal columns that later values widened (int to long, float to double,
     * decimal(12,2) to decimal(17,2)), while rows written before the widening stay in their files.
     */
    private static PipelineTable evolvedWithWidenedNumbers(LocalStack stack) {
        PipelineTable t = new PipelineTable(
                stack, "evolved", Map.of("COLUMN_TYPES", "price=decimal(12,2)", "PARTITION_SPEC", "none"));
        Random random = new Random(4);
        RandomValues values = new RandomValues(random);
        long[] seq = {800_000_000_000_000_000L};
        List<Change> first = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            first.add(upsert("item-" + i, Map.of("price", new DdbValue.N(i + ".25")), seq));
        }
        t.stage(first);
        t.merge();
        // int and float columns, as another engine might have made them
        t.table()
                .updateSchema()
                .addColumn("qty", Types.IntegerType.get())
                .addColumn("ratio", Types.FloatType.get())
                .addColumn("m", Types.StructType.of(Types.NestedField.optional(9001, "n", Types.IntegerType.get())))
                .commit();
        List<Change> small = new ArrayList<>();
        for (int i = 0; i < 50; i += 2) {
            small.add(upsert(
                    "item-" + i,
                    Map.of(
                            "price",
                            new DdbValue.N("7.5"),
                            "qty",
                            new DdbValue.N(Integer.toString(i)),
                            "ratio",
                            new DdbValue.N("0.5"),
                            "m",
                            new DdbValue.M(Map.of("n", new DdbValue.N("12"))),
                            "note",
                            values.any(2)),
                    seq));
        }
        t.stage(small);
        t.merge();
        List<Change> big = new ArrayList<>();
        for (int i = 0; i < 50; i += 5) {
            big.add(upsert(
                    "item-" + i,
                    Map.of(
                            "price",
                            new DdbValue.N("123456789012345.25"),
                            "qty",
                            new DdbValue.N("3000000000"),
                            "ratio",
                            new DdbValue.N("0.123456789"),
                            "m",
                            new DdbValue.M(Map.of("n", new DdbValue.N("-3000000000")))),
                    seq));
        }
        t.stage(big);
        t.merge();
        for (int run = 0; run < 17; run++) {
            List<Change> changes = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                Map<String, DdbValue> attributes = new LinkedHashMap<>();
                for (int a = random.nextInt(5); a > 0; a--) {
                    attributes.put("a" + random.nextInt(15), values.any(1 + random.nextInt(4)));
                }
                changes.add(upsert("item-" + (50 + random.nextInt(40)), attributes, seq));
            }
            t.stage(changes);
            t.merge();
        }
        Schema s = t.table().schema();
        assertEquals(Types.LongType.get(), s.findField("qty").type(), "qty widened");
        assertEquals(Types.DoubleType.get(), s.findField("ratio").type(), "ratio widened");
        assertEquals(Types.DecimalType.of(17, 2), s.findField("price").type(), "price widened");
        assertEquals(Types.LongType.get(), s.findField("m.n").type(), "m.n widened");
        return t;
    }

    /**
     * Attributes named as teams name them (camelCase keys, capitals, case twins, spaces, dots, a
     * leading digit, accents, other scripts, nested maps of the same), under a column-name rule.
     */
    private static PipelineTable namedLikeTeams(LocalStack stack, String name, String columnNames, long seed) {
        PipelineTable t =
                new PipelineTable(stack, name, Map.of("COLUMN_NAMES", columnNames, "PARTITION_KEY", "customerId"));
        TeamNamesWorkload workload = new TeamNamesWorkload(seed, 120);
        t.stage(List.of(workload.upsert(0, true)));
        t.merge();
        for (int run = 0; run < 3; run++) {
            t.stage(workload.next(150));
            t.merge();
        }
        return t;
    }

    private static Change upsert(String id, Map<String, DdbValue> attributes, long[] seq) {
        Map<String, DdbValue> key = Map.of("id", new DdbValue.S(id));
        Map<String, DdbValue> image = new LinkedHashMap<>(key);
        image.putAll(attributes);
        return new Change(key, Operation.MODIFY, image, Long.toString(++seq[0]), 1_764_460_800_000L, false);
    }

    /**
     * A new table whose source has items older than the stream (only the export has them), and stream
     * changes before and after the export, staged; returns the export's location.
     */
    private static String stagedAroundAnExport(
            LocalStack stack, PipelineTable t, long seed, String exportId, int files) {
        KeyedWorkload w = new KeyedWorkload(seed, 400);
        List<Change> older = new ArrayList<>(); // older than the stream's 24 hours: only the export has them
        for (int i = 0; i < 400; i++) {
            older.add(w.upsert(i, Operation.INSERT));
        }
        List<Change> before = w.next(300);
        List<Change> after = w.next(300);
        ExpectedTable atExport = new ExpectedTable();
        atExport.apply(older);
        atExport.apply(before);
        t.model.apply(older);
        t.stage(before);
        t.stage(after);
        DynamoDbExportFiles exports = new DynamoDbExportFiles(stack.server().newClient(), "local", "exports/");
        return exports.writeFull(
                exportId,
                Instant.now().minusSeconds(60),
                new ArrayList<>(atExport.items().values()),
                files);
    }

    /** An initial load from a DynamoDB export, with the stream before and after it merged. */
    private static PipelineTable loadedFromAnExport(LocalStack stack) {
        PipelineTable t = new PipelineTable(stack, "exported", Map.of());
        String location = stagedAroundAnExport(stack, t, 5, "01764000000000-interop", 3);
        ExportLoadResult r = new ExportLoader(
                        t.catalog,
                        t.settings.table(),
                        t.store,
                        t.settings.options(),
                        stack.server().newClient())
                .run(
                        new ExportLoader.Request(
                                ExportLocation.parse(location), List.of("pk", "sk"), Duration.ofMinutes(5), false),
                        Instant.now().plus(Duration.ofMinutes(10)));
        assertTrue(r.done(), () -> "the export load finished: " + r);
        t.merge();
        return t;
    }

    /**
     * A parallel export load into an empty table, its steps run one after another here,
     * then the stream (before and after the export) merged over it.
     */
    private static PipelineTable loadedInParallel(LocalStack stack) {
        PipelineTable t = new PipelineTable(stack, "loaded_in_parallel", Map.of());
        String location = stagedAroundAnExport(stack, t, 6, "01764000000000-parallel", 4);
        ParallelExportLoad load = new ParallelExportLoad(
                t.catalog,
                t.settings.table(),
                t.store,
                t.settings.options(),
                stack.server().newClient(),
                150);
        ParallelExportLoad.Plan plan = load.plan(
                new ExportLoader.Request(
                        ExportLocation.parse(location), List.of("pk", "sk"), Duration.ofMinutes(5), false),
                3,
                null);
        for (ParallelExportLoad.Work work : plan.work()) {
            load.loadWork(plan.loadId(), work.work());
        }
        for (int group : load.arrange(plan.loadId()).groups()) {
            load.gather(plan.loadId(), group); // the workers' small files merged, as the state machine does
        }
        for (int g = 0; g < plan.indexGroups(); g++) {
            load.buildIndex(plan.loadId(), g);
        }
        load.commit(plan.loadId());
        t.merge();
        return t;
    }

    private static void assertSparkSeesTheSource(String name) {
        PipelineTable t = TABLES.get(name);
        TableLayout layout = t.layout();
        var seen = SparkRows.items(spark.get(name).rowsOrFail(), layout);
        var expected = t.model.items();
        assertEquals(
                expected.size(),
                seen.size(),
                () -> "rows Spark sees in " + t.sparkName() + "; " + ExpectedTable.diff(expected, seen));
        assertTrue(
                expected.equals(seen),
                () -> "Spark's rows of " + t.sparkName() + " differ from the source: "
                        + ExpectedTable.diff(expected, seen));
    }

    @Test
    void sparkSeesTheSourceTableThroughLivePositionDeleteFiles() {
        assertSparkSeesTheSource("orders");
    }

    @Test
    void sparkSeesTheSourceTableThroughDeleteFilesInV2Pages() {
        assertSparkSeesTheSource("orders_v2_pages");
    }

    @Test
    void sparkSeesAnUnpartitionedTableThroughItsDeleteFilesAfterOrphanRemoval() {
        assertSparkSeesTheSource("orders_unpartitioned");
    }

    @Test
    void sparkSeesTheSourceTableAfterCompaction() {
        assertSparkSeesTheSource("orders_compacted");
    }

    @Test
    void sparkSeesTheSourceTableOnFormatV3WithDeletionVectors() {
        assertSparkSeesTheSource("items_v3");
    }

    @Test
    void sparkSeesTheSourceTableOnFormatV3WhoseMergesFoldTheirSmallFiles() {
        assertSparkSeesTheSource("items_v3_folded");
    }

    @Test
    void sparkSeesEachRowsLineageOnFormatV3AsIcebergGivesItThroughTheMergesFolds() {
        PipelineTable t = TABLES.get("items_v3_folded");
        // Each live row's id with its key's partition key and last updated sequence number.
        Map<Long, String> expected = new TreeMap<>();
        RowLineageByKey.read(t.table()).forEach((key, l) -> expected.put(l.get(0), key.get(0) + " @ " + l.get(1)));
        long oldestFile = Long.MAX_VALUE;
        try (CloseableIterable<FileScanTask> tasks = t.table().newScan().planFiles()) {
            for (FileScanTask task : tasks) {
                oldestFile = Math.min(oldestFile, task.file().dataSequenceNumber());
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        long oldestRow = expected.values().stream()
                .mapToLong(v -> Long.parseLong(v.substring(v.indexOf(" @ ") + 3)))
                .min()
                .orElseThrow();
        assertTrue(
                oldestRow < oldestFile,
                "rows older than every data file (their lineage written by a fold): row " + oldestRow + ", file "
                        + oldestFile);

        Map<Long, String> seen = new TreeMap<>();
        List<String> lines = spark.get("v3 lineage").rowsOrFail();
        assertEquals(expected.size(), lines.size(), "rows Spark read, each with its own row id");
        for (String line : lines) {
            JsonNode row = SparkRows.parse(line);
            seen.put(
                    row.path("_row_id").asLong(),
                    row.path("pk").asText() + " @ "
                            + row.path("_last_updated_sequence_number").asLong());
        }
        assertEquals(expected, seen, "row id -> partition key @ last updated sequence number, Iceberg's and Spark's");
    }

    @Test
    void sparkSeesTheSourceTableAfterSchemaEvolutionAndNumberWidening() {
        assertSparkSeesTheSource("evolved");
    }

    @Test
    void sparkSeesTheSourceTableAfterAnExportLoad() {
        assertSparkSeesTheSource("exported");
    }

    @Test
    void sparkSeesTheSourceTableAfterAParallelExportLoad() {
        assertSparkSeesTheSource("loaded_in_parallel");
    }

    @Test
    void sparkSeesTheSourceTableThroughLowerCaseColumnNames() {
        assertEquals(
                "customerid", TABLES.get("team_orders").layout().keyColumns().get(0));
        assertSparkSeesTheSource("team_orders");
    }

    @Test
    void sparkSeesTheSourceTableThroughPreservedColumnNames() {
        assertEquals(
                "customerId",
                TABLES.get("team_orders_preserve").layout().keyColumns().get(0));
        assertSparkSeesTheSource("team_orders_preserve");
    }

    @Test
    void theReadmeColumnNamesQueryReturnsTheSourcesValuesUnderTheMappedNames() {
        List<String> rows = spark.get("column names").rowsOrFail();
        var source = TABLES.get("team_orders").model.items();
        assertEquals(Math.min(10, source.size()), rows.size(), "rows of the README's LIMIT 10 query");
        for (String line : rows) {
            JsonNode row = SparkRows.parse(line);
            Map<String, DdbValue> key = Map.of(
                    "customerId",
                    new DdbValue.S(row.path("customerid").asText()),
                    "OrderDate",
                    new DdbValue.N(row.path("orderdate").asText()));
            Map<String, DdbValue> item = source.get(key);
            assertTrue(item != null, () -> "the README query returned an item the source does not have: " + line);
            DdbValue status = item.get("Status");
            assertEquals(
                    status instanceof DdbValue.S s ? s.value() : null,
                    row.path("status").isMissingNode()
                            ? null
                            : row.path("status").asText(),
                    () -> "status (the attribute Status) of " + key + ": " + line);
            DdbValue twin = item.get("status");
            assertEquals(
                    twin == null ? null : twin,
                    row.path("status_twin").isMissingNode()
                            ? null
                            : dev.ddb2iceberg.model.DdbJson.parse(
                                    row.path("status_twin").asText()),
                    () -> "status_twin (the attribute status, in _ddb_overflow) of " + key + ": " + line);
        }
    }

    @Test
    void theReadmeQueryHidingRemovedRowsCountsTheSourcesLiveItems() {
        PipelineTable t = TABLES.get("orders");
        long marked = t.model.marks().size();
        assertTrue(marked > 0, "the orders table has rows that removals kept, marked");
        List<String> rows = spark.get("live").rowsOrFail();
        assertEquals(1, rows.size(), "rows of the live-orders count");
        assertEquals(
                t.model.items().size() - marked,
                SparkRows.parse(rows.get(0)).path("live_orders").asLong(),
                "live orders: the table's rows less those removals kept");
    }

    @Test
    void theReadmeItemHistoryQueryReturnsEveryChangeOfTheItemInOrder() {
        Map<String, DdbValue> key =
                Map.of("customer_id", new DdbValue.S("C-00001"), "order_id", new DdbValue.N("100003"));
        List<Change> expected = TABLES.get("orders").streamed.stream()
                .filter(c -> c.keys().equals(key))
                .sorted((a, b) -> dev.ddb2iceberg.model.SequenceNumbers.compare(a.sequenceNumber(), b.sequenceNumber()))
                .toList();
        List<String> rows = spark.get("item history").rowsOrFail();
        assertTrue(expected.size() > 3, "the README's item is changed often: " + expected.size());
        assertEquals(expected.size(), rows.size(), "changes of " + key + " in the history: " + rows);
        for (int i = 0; i < rows.size(); i++) {
            JsonNode row = SparkRows.parse(rows.get(i));
            Change c = expected.get(i);
            String at = "change " + i + " of " + key + ": " + rows.get(i);
            assertEquals(c.operation().name(), row.path("_ddb_op").asText(), at);
            assertEquals(
                    dev.ddb2iceberg.model.SequenceNumbers.pad(c.sequenceNumber()),
                    row.path("_ddb_seq").asText(),
                    at);
            assertEquals(c.ttlExpiry(), row.path("_ddb_ttl").asBoolean(), at);
            assertEquals(
                    Instant.ofEpochMilli(c.approximateCreationMillis()),
                    OffsetDateTime.parse(row.path("_ddb_time").asText()).toInstant(),
                    at);
            if (c.newImage() == null) {
                assertTrue(
                        row.path("status").isMissingNode() || row.path("status").isNull(), at);
            } else {
                assertEquals(
                        ((DdbValue.S) c.newImage().get("status")).value(),
                        row.path("status").asText(),
                        at);
                assertEquals(
                        ((DdbValue.N) c.newImage().get("version")).text(),
                        row.path("version").asText(),
                        at);
            }
        }
    }

    @Test
    void theReadmeAsOfQueryReturnsTheSourceTableAsItWasThen() {
        String query = docSql("docs/guides/change-history.md", "## Queries").get(1);
        Matcher m = Pattern.compile("TIMESTAMP '([^']+)'").matcher(query);
        assertTrue(m.find(), "the as-of query names a time: " + query);
        long then = Instant.parse(m.group(1)).toEpochMilli();
        List<Change> upToThen = TABLES.get("orders").streamed.stream()
                .filter(c -> c.approximateCreationMillis() <= then)
                .toList();
        assertTrue(
                upToThen.size() > 100
                        && upToThen.size() < TABLES.get("orders").streamed.size(),
                "the README's time falls inside the workload: " + upToThen.size() + " changes before it");
        ExpectedTable asOf = new ExpectedTable();
        asOf.apply(upToThen); // as DynamoDB held it then
        Map<String, String> expected = new TreeMap<>();
        asOf.items()
                .forEach((k, item) -> expected.put(
                        ((DdbValue.S) k.get("customer_id")).value() + "/" + ((DdbValue.N) k.get("order_id")).text(),
                        ((DdbValue.S) item.get("status")).value() + " v" + ((DdbValue.N) item.get("version")).text()));
        Map<String, String> seen = new TreeMap<>();
        for (String line : spark.get("as of").rowsOrFail()) {
            JsonNode row = SparkRows.parse(line);
            seen.put(
                    row.path("customer_id").asText() + "/"
                            + row.path("order_id").asText(),
                    row.path("status").asText() + " v" + row.path("version").asText());
        }
        assertEquals(expected, seen, "the table as of " + m.group(1));
    }

    @Test
    void theReadmeQueryRunsAsPrintedAndReturnsSourceValues() {
        List<String> rows = spark.get("readme").rowsOrFail();
        var source = TABLES.get("orders").model.items();
        assertEquals(Math.min(10, source.size()), rows.size(), "rows of the README's LIMIT 10 query");
        for (String line : rows) {
            JsonNode row = SparkRows.parse(line);
            Map<String, DdbValue> key = Map.of(
                    "customer_id",
                    new DdbValue.S(row.path("customer_id").asText()),
                    "order_id",
                    new DdbValue.N(row.path("order_id").asText()));
            Map<String, DdbValue> item = source.get(key);
            assertTrue(item != null, () -> "the README query returned an item the source does not have: " + line);
            assertEquals(item.get("status"), new DdbValue.S(row.path("status").asText()), () -> "status of " + key);
            assertTrue(row.hasNonNull("_ddb_time"), () -> "_ddb_time of " + key);
        }
    }

    @Test
    void sparksDescribeShowsTheColumnDocs() {
        Map<String, String> comments = new HashMap<>();
        for (String line : spark.get("describe").rowsOrFail()) {
            JsonNode row = SparkRows.parse(line);
            comments.putIfAbsent(
                    row.path("col_name").asText(), row.path("comment").asText(null));
        }
        Schema schema = TABLES.get("orders").table().schema();
        int documented = 0;
        for (Types.NestedField column : schema.columns()) {
            assertTrue(comments.containsKey(column.name()), () -> "DESCRIBE lists " + column.name() + ": " + comments);
            if (column.doc() != null) {
                documented++;
                assertEquals(column.doc(), comments.get(column.name()), "DESCRIBE's comment on " + column.name());
            }
        }
        assertTrue(documented >= 3, "the metadata columns at least carry docs: " + schema);
    }

    @Test
    void theReadmeNamesThePackagesSparkRunsWithAndTheSettingsUpPrints() {
        String classpath = SparkProcess.classpath();
        for (String coordinate : readme.packages()) {
            String[] gav = coordinate.split(":");
            String jar =
                    "/" + gav[0].replace('.', '/') + "/" + gav[1] + "/" + gav[2] + "/" + gav[1] + "-" + gav[2] + ".jar";
            assertTrue(
                    classpath.contains(jar),
                    () -> "the README's package " + coordinate
                            + " is not what the Spark test runs with (interop/spark-reader/pom.xml); classpath: "
                            + classpath);
        }
        Map<String, String> printedByUp = new LocalStack(server, "local", dir).sparkSettings();
        assertEquals(
                printedByUp,
                readme.confFor(dir.resolve("catalog.db"), server.endpoint()),
                "the Spark settings `./ddb2iceberg up` prints and the README's");
    }
}
