package dev.ddb2iceberg.table;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.export.ExportLocation;
import dev.ddb2iceberg.history.ChangeHistory;
import dev.ddb2iceberg.load.ExportLoadResult;
import dev.ddb2iceberg.load.ExportLoader;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.testkit.DynamoDbExportFiles;
import dev.ddb2iceberg.testkit.ExpectedTable;
import dev.ddb2iceberg.testkit.LogCapture;
import dev.ddb2iceberg.testkit.MergerFixture;
import dev.ddb2iceberg.testkit.TableAssertions;
import dev.ddb2iceberg.testkit.TableItems;
import dev.ddb2iceberg.testkit.TeamNamesWorkload;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import org.apache.iceberg.PartitionField;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * COLUMN_NAMES: attributes named the way teams name them (camelCase keys, capitals, case twins,
 * spaces, dots, a leading digit, accents, other scripts, nested maps of the same) become columns
 * Athena, Glue and S3 Tables accept under {@code lower}, keep their names under {@code preserve},
 * and under both every item reads back exactly as DynamoDB holds it, through merges, removals
 * kept as marks, the change history and an export load. A table keeps the rule it was made with.
 */
@ExtendWith(S3ServerExtension.class)
class ColumnNamesTest {
    /** Athena's rule for a name it reads unquoted: lower-case letters, digits and _, not starting with a digit. */
    private static final Pattern ATHENA_NAME = Pattern.compile("[a-z_][a-z0-9_]*");

    @TempDir
    Path dir;

    private MergerFixture pipeline;
    private final List<Change> streamed = new ArrayList<>();

    @BeforeEach
    void setUp(EmbeddedS3Server server) {
        pipeline = new MergerFixture(server, dir, Map.of("PARTITION_KEY", "customerId"));
    }

    /** Runs with {@code COLUMN_NAMES} and the other settings given, as a redeployed function would. */
    private void use(String... settings) {
        for (int i = 0; i < settings.length; i += 2) {
            pipeline.env.put(settings[i], settings[i + 1]);
        }
        pipeline.reconfigure();
    }

    private void stageAndMerge(List<Change> changes) {
        pipeline.stage(changes);
        streamed.addAll(changes);
        pipeline.merger().run();
        assertTrue(pipeline.store().list().isEmpty(), "every staged object merged");
    }

    private Table table() {
        return pipeline.table();
    }

    @Test
    void theLowerRuleGivesNamesAthenaReadsUnquoted() {
        Map<String, String> expected = new java.util.LinkedHashMap<>();
        expected.put("customerId", "customerid");
        expected.put("OrderDate", "orderdate");
        expected.put("gift wrap", "gift_wrap");
        expected.put("ship.to", "ship_to");
        expected.put("ship-to", "ship_to");
        expected.put("2faEnabled", "_2faenabled");
        expected.put("prénom", "prenom");
        expected.put("Größe", "gro_e");
        expected.put("日本語", "___");
        expected.put("a:b,c<d>", "a_b_c_d_");
        expected.put("already_fine", "already_fine");
        expected.forEach((attribute, column) ->
                assertEquals(column, ColumnNames.LOWER.columnFor(attribute), "column of '" + attribute + "'"));
        assertNull(ColumnNames.LOWER.columnFor("_DDB_seq"), "a name that lower-cases to one of the pipeline's");
        assertNull(ColumnNames.LOWER.columnFor(""), "an empty name");
        assertNull(ColumnNames.LOWER.columnFor("x".repeat(ColumnNames.MAX_LOWER_NAME + 1)), "a name too long");
        assertNull(
                ColumnNames.LOWER.columnFor("\u0001".repeat(ColumnNames.MAX_LOWER_NAME / 6 + 1)),
                "a name too long for a Glue comment once escaped");
        assertEquals("_".repeat(30), ColumnNames.LOWER.columnFor("\u0001".repeat(30)));
        assertNull(ColumnNames.PRESERVE.columnFor("ship.to"), "preserve: a dot would read as a path");
        assertEquals("orderTotal", ColumnNames.PRESERVE.columnFor("orderTotal"));
    }

    @Test
    void keyColumnsAlwaysGetANameEvenWhenTwoKeysDifferOnlyByCase() {
        Set<String> taken = new HashSet<>();
        String first = ColumnNames.LOWER.keyColumnFor("PK", taken);
        taken.add(first);
        assertEquals("pk", first);
        assertEquals("pk_2", ColumnNames.LOWER.keyColumnFor("pk", taken));
        assertEquals("__ddb_seq", ColumnNames.LOWER.keyColumnFor("_ddb_seq", Set.of()));
    }

    @Test
    void theDocKeepsTheAttributesNameExactlyOnOneLine() {
        for (String attribute : List.of("line\nbreak", "say \"hi\"", "back\\slash", "日本語", "emoji 😀", "tab\tx")) {
            String column = ColumnNames.LOWER.columnFor(attribute);
            String doc = ColumnNames.doc("S", attribute, column);
            assertFalse(doc.contains("\n") || doc.contains("\r"), () -> "a Glue comment is one line: " + doc);
            assertTrue(doc.startsWith("ddb:S "), doc);
            Types.NestedField field = Types.NestedField.optional(1, column, Types.StringType.get(), doc);
            assertEquals(attribute, ColumnNames.attributeOf(field), "the name read back from " + doc);
            assertEquals("S", TypeMapping.shapeOf(field), "the shape read back from " + doc);
        }
        assertEquals("ddb:N", ColumnNames.doc("N", "status", "status"), "an unchanged name is not repeated");
    }

    @Test
    void underLowerEveryColumnIsAnAthenaNameAndEveryItemReadsBackExactly() {
        use("COLUMN_NAMES", "lower", "HISTORY_TABLE", "orders_history", "TTL_EXPIRIES", "mark", "DELETES", "soft");
        mergeTheWorkload(11);

        Table table = table();
        assertEquals("lower", table.properties().get(PipelineProperties.COLUMN_NAMES), "the rule is recorded");
        assertEveryNameIsAnAthenaName(table.schema().asStruct(), "");
        TableLayout layout = TableLayout.of(table);
        assertEquals(List.of("customerId", "OrderDate"), layout.keyAttributes());
        assertEquals(List.of("customerid", "orderdate"), layout.keyColumns());
        assertEquals(
                Set.of("customerid", "orderdate"),
                Set.copyOf(table.schema().identifierFieldNames()),
                "the key columns are the identifier fields");
        PartitionField bucket = table.spec().fields().get(0);
        assertEquals("customerid", table.schema().findColumnName(bucket.sourceId()), "partitioned by the key column");
        // the first of two attributes that map to one column keeps it; the others' values go to the overflow map
        assertEquals("Status", ColumnNames.attributeOf(table.schema().findField("status")));
        assertEquals("ship.to", ColumnNames.attributeOf(table.schema().findField("ship_to")));
        assertEquals("ZipCode", ColumnNames.attributeOf(table.schema().findField("address.zipcode")));
        assertNull(layout.columnOf("status"), "the case twin has no column");
        assertNull(layout.columnOf("ship_to"), "nor the name whose column ship.to took");
        assertNull(layout.columnOf("_DDB_seq"), "nor a name that lower-cases to the pipeline's own");
        assertNotNull(layout.columnOf("gift wrap"));

        assertTableAndHistoryHoldTheSource(table);
    }

    @Test
    void underPreserveColumnsTakeTheAttributeNamesAndEveryItemReadsBackExactly() {
        use("COLUMN_NAMES", "preserve", "HISTORY_TABLE", "orders_history", "TTL_EXPIRIES", "mark");
        mergeTheWorkload(12);

        Table table = table();
        assertEquals("preserve", table.properties().get(PipelineProperties.COLUMN_NAMES));
        TableLayout layout = TableLayout.of(table);
        assertEquals(List.of("customerId", "OrderDate"), layout.keyColumns(), "the keys keep their names");
        for (String attribute : List.of("Status", "orderTotal", "gift wrap", "2faEnabled", "Größe", "a:b,c<d>")) {
            Types.NestedField column = layout.columnOf(attribute);
            assertNotNull(column, () -> attribute + " has a column");
            assertEquals(attribute, column.name(), "preserve keeps the name");
            assertFalse(column.doc().contains(" name="), () -> "no name is repeated in " + column.doc());
        }
        assertNull(layout.columnOf("status"), "the case twin has no column");
        assertNull(layout.columnOf("ship.to"), "a dotted name has none");
        assertTableAndHistoryHoldTheSource(table);
    }

    @Test
    void aTableKeepsTheRuleItWasMadeWithWhenTheSettingChangesAndTheLogSaysSo() {
        use("COLUMN_NAMES", "preserve");
        TeamNamesWorkload w = new TeamNamesWorkload(13, 60);
        stageAndMerge(List.of(w.upsert(0, true)));
        use("COLUMN_NAMES", "lower");
        Map<String, DdbValue> image = new java.util.LinkedHashMap<>(w.key(1));
        image.put("newAttribute", new DdbValue.S("added after the change"));
        try (LogCapture logs = LogCapture.json()) {
            stageAndMerge(List.of(new Change(w.key(1), Operation.INSERT, image, "800000000000000000001", 0L, false)));
            List<String> messages =
                    logs.all().stream().map(l -> l.path("message").asText()).toList();
            assertTrue(
                    messages.stream()
                            .anyMatch(m -> m.startsWith("COLUMN_NAMES is lower but table")
                                    && m.contains("keeps the column names it was made with (preserve)")),
                    () -> "no log line says the table keeps its names: " + messages);
        }
        Table table = table();
        assertEquals("preserve", table.properties().get(PipelineProperties.COLUMN_NAMES));
        assertNotNull(table.schema().findField("newAttribute"), "a new column follows the table's rule");
        assertNotNull(table.schema().findField("customerId"), "the key column kept its name");
        TableAssertions.assertHolds(table, pipeline.model);
    }

    @Test
    void aTableMadeBeforeTheSettingIsRecordedAsPreserveAndKeepsItsNames() {
        use("COLUMN_NAMES", "preserve");
        TeamNamesWorkload w = new TeamNamesWorkload(14, 60);
        stageAndMerge(List.of(w.upsert(0, true)));
        table().updateProperties().remove(PipelineProperties.COLUMN_NAMES).commit(); // as tables made before it
        use("COLUMN_NAMES", "lower");
        stageAndMerge(w.next(40));
        Table table = table();
        assertEquals("preserve", table.properties().get(PipelineProperties.COLUMN_NAMES), "recorded on first use");
        assertNotNull(table.schema().findField("orderTotal"));
        assertNull(table.schema().findField("ordertotal"));
        TableAssertions.assertHolds(table, pipeline.model);
    }

    @Test
    void anExportLoadUnderLowerUsesTheAttributeNames() {
        use("COLUMN_NAMES", "lower");
        TeamNamesWorkload w = new TeamNamesWorkload(15, 120);
        List<Map<String, DdbValue>> items = new ArrayList<>();
        List<Change> asChanges = new ArrayList<>();
        for (int i = 0; i < 120; i++) {
            Change c = w.upsert(i, i == 0);
            items.add(c.newImage());
            asChanges.add(c);
        }
        pipeline.model.apply(asChanges);
        DynamoDbExportFiles exports =
                new DynamoDbExportFiles(pipeline.server().newClient(), pipeline.bucket(), "exports/");
        String location =
                exports.writeFull("01764000000000-names", Instant.now().minusSeconds(60), items, 2);
        ExportLoadResult r = new ExportLoader(
                        pipeline.catalog(),
                        pipeline.settings().table(),
                        pipeline.store(),
                        pipeline.settings().options(),
                        pipeline.server().newClient())
                .run(
                        new ExportLoader.Request(
                                ExportLocation.parse(location),
                                List.of("customerId", "OrderDate"),
                                Duration.ofMinutes(5),
                                true), // no stream here to hand off to
                        Instant.now().plus(Duration.ofMinutes(10)));
        assertTrue(r.done(), () -> "the export load finished: " + r);
        Table table = table();
        assertEquals(List.of("customerid", "orderdate"), TableLayout.of(table).keyColumns());
        assertEveryNameIsAnAthenaName(table.schema().asStruct(), "");
        TableAssertions.assertHolds(table, pipeline.model);
        stageAndMerge(w.next(100)); // and the stream merged over the load
        pipeline.assertTableHoldsModel();
    }

    /** A first item with every attribute, then merges of random changes, removals among them. */
    private void mergeTheWorkload(long seed) {
        TeamNamesWorkload w = new TeamNamesWorkload(seed, 90);
        stageAndMerge(List.of(w.upsert(0, true)));
        for (int run = 0; run < 4; run++) {
            stageAndMerge(w.next(120));
        }
    }

    private void assertTableAndHistoryHoldTheSource(Table table) {
        var actual = TableItems.read(table);
        assertEquals(
                pipeline.model.items(),
                actual,
                () -> "the table differs: " + ExpectedTable.diff(pipeline.model.items(), actual));
        assertEquals(pipeline.model.marks(), TableItems.marks(table), "removal marks (key -> column -> epoch ms)");
        Table history = pipeline.catalog()
                .loadTable(TableIdentifier.of(pipeline.settings().table().namespace(), "orders_history"));
        List<Change> held = ChangeHistory.changes(history);
        assertEquals(streamed.size(), held.size(), "changes in the history");
        for (int i = 0; i < held.size(); i++) {
            assertEquals(streamed.get(i), held.get(i), "change " + i + " read back from the history");
        }
    }

    /** Every column and struct field: an Athena name, unique once lower-cased, its doc a valid Glue comment. */
    private static void assertEveryNameIsAnAthenaName(Types.StructType struct, String path) {
        Set<String> seen = new HashSet<>();
        for (Types.NestedField f : struct.fields()) {
            String name = path + f.name();
            assertTrue(ATHENA_NAME.matcher(f.name()).matches(), () -> "'" + name + "' is not an Athena name");
            assertTrue(f.name().length() <= 255, () -> name + " is longer than Glue allows");
            assertTrue(seen.add(f.name().toLowerCase(Locale.ROOT)), () -> name + " is not unique ignoring case");
            if (f.doc() != null) {
                assertTrue(f.doc().length() <= 255, () -> "the doc of " + name + " is longer than a Glue comment");
                assertFalse(f.doc().contains("\n"), () -> "the doc of " + name + " is not one line");
            }
            Type type = f.type();
            while (type.isListType()) {
                type = type.asListType().elementType();
            }
            if (type.isStructType()) {
                assertEveryNameIsAnAthenaName(type.asStructType(), name + ".");
            }
        }
    }
}
