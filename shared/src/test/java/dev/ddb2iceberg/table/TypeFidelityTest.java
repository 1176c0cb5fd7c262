package dev.ddb2iceberg.table;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.function.MergerSettings;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbJson;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.testkit.ExpectedTable;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.RandomValues;
import dev.ddb2iceberg.testkit.StreamEvents;
import dev.ddb2iceberg.testkit.TableItems;
import java.math.BigDecimal;
import java.nio.file.Path;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.iceberg.PartitionField;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.variants.PhysicalType;
import org.apache.iceberg.variants.Variant;
import org.apache.iceberg.variants.VariantObject;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Values of every DynamoDB type and nesting depth, through the whole merge to Parquet files on the
 * S3 server and back: each must come back bit for bit, however the schema evolved around it.
 */
@ExtendWith(S3ServerExtension.class)
class TypeFidelityTest {
    @TempDir
    Path dir;

    private EmbeddedS3Server server;
    private final Map<String, String> env = new HashMap<>();
    private final ExpectedTable model = new ExpectedTable();
    private long seq = 700_000_000_000_000_000L;

    @BeforeEach
    void setUp(EmbeddedS3Server server) {
        this.server = server;
        env.putAll(new LocalStack(server, S3ServerExtension.newBucket(server), dir).environment("types"));
    }

    private MergerSettings settings() {
        return MergerSettings.from(new Environment(env));
    }

    private void stageAndMerge(MergerSettings settings, Catalog catalog, List<Change> changes) {
        StagingStore store = new StagingStore(server.newClient(), settings.staging());
        BatchStager.Result r =
                new BatchStager(store).stage(StreamEvents.batch(changes).getRecords());
        assertTrue(r.complete(), r.failure());
        model.apply(changes);
        new Merger(catalog, settings.table(), store, settings.options()).run();
    }

    private Change upsert(String id, Map<String, DdbValue> attributes) {
        Map<String, DdbValue> key = Map.of("id", new DdbValue.S(id));
        Map<String, DdbValue> image = new LinkedHashMap<>(key);
        image.putAll(attributes);
        return new Change(key, Operation.MODIFY, image, Long.toString(++seq), 1_764_460_800_000L, false);
    }

    private Table table(Catalog catalog) {
        return catalog.loadTable(TableIdentifier.of("ddb2iceberg", "types"));
    }

    private void assertTableEqualsModel(Table table) {
        var actual = TableItems.read(table);
        assertTrue(model.items().equals(actual), () -> ExpectedTable.diff(model.items(), actual));
    }

    @Test
    void valuesOfEveryTypeAndDepthSurviveTwentyMergesOfAnEvolvingSchemaBitForBit() {
        env.put("PARTITION_SPEC", "none"); // one file per merge: the types are under test, not the layout
        MergerSettings settings = settings();
        Catalog catalog = settings.catalog().load();
        Random random = new Random(7);
        RandomValues values = new RandomValues(random);
        for (int run = 0; run < 20; run++) {
            List<Change> changes = new ArrayList<>();
            for (int i = 0; i < 40; i++) {
                Map<String, DdbValue> attributes = new LinkedHashMap<>();
                for (int a = random.nextInt(5); a > 0; a--) {
                    attributes.put("a" + random.nextInt(15), values.any(1 + random.nextInt(4)));
                }
                changes.add(upsert("item-" + random.nextInt(60), attributes));
            }
            stageAndMerge(settings, catalog, changes);
            assertTableEqualsModel(table(catalog));
        }
        Table table = table(catalog);
        assertTrue(
                table.schema().columns().size() > 12, "columns were added as attributes appeared: " + table.schema());
    }

    @Test
    void hintedColumnsAreTypedFromTheStartAndTheTableCanBePartitionedByDay() throws Exception {
        env.put("COLUMN_TYPES", "created_at=timestamp(epoch_millis), price=decimal(12,2)");
        env.put("PARTITION_SPEC", "day(created_at)");
        env.put("ITEM_JSON_COLUMN", "true");
        MergerSettings settings = settings();
        Catalog catalog = settings.catalog().load();
        List<Change> changes = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            Map<String, DdbValue> attributes = new LinkedHashMap<>();
            attributes.put("created_at", new DdbValue.N(Long.toString(1_700_000_000_000L + i * 43_200_000L)));
            attributes.put("price", new DdbValue.N(i % 7 == 0 ? "10.005" : "10." + (i % 100)));
            changes.add(upsert("order-" + i, attributes));
        }
        stageAndMerge(settings, catalog, changes);
        Table table = table(catalog);
        assertEquals(
                Types.TimestampType.withZone(),
                table.schema().findField("created_at").type());
        assertEquals(
                Types.DecimalType.of(12, 2), table.schema().findField("price").type());
        PartitionField day = table.spec().fields().get(0);
        assertEquals("day", day.transform().toString());
        assertTrue(table.currentSnapshot().addedDataFiles(table.io()).iterator().hasNext());
        assertTableEqualsModel(table);

        try (CloseableIterable<Record> rows = IcebergGenerics.read(table).build()) {
            for (Record row : rows) {
                String id = row.getField("id").toString();
                int i = Integer.parseInt(id.substring("order-".length()));
                assertEquals(
                        OffsetDateTime.parse("2023-11-14T22:13:20Z").plusHours(12L * i), row.getField("created_at"));
                if (i % 7 == 0) {
                    assertNull(row.getField("price"), "10.005 does not fit decimal(12,2): not rounded");
                    assertEquals("{\"N\":\"10.005\"}", ((Map<?, ?>) row.getField(TableLayout.OVERFLOW)).get("price"));
                }
                assertEquals(
                        DdbJson.writeItem(model.items().get(Map.of("id", new DdbValue.S(id)))),
                        row.getField(TableLayout.ITEM),
                        "the whole item as DynamoDB JSON");
            }
        }
    }

    @Test
    void onFormatV3TheWholeItemIsAlsoAVariantColumn() throws Exception {
        env.put("TABLE_FORMAT_VERSION", "3");
        env.put("ITEM_VARIANT_COLUMN", "true");
        MergerSettings settings = settings();
        Catalog catalog = settings.catalog().load();
        Map<String, DdbValue> address = new LinkedHashMap<>();
        address.put("city", new DdbValue.S("Lyon"));
        address.put("floors", new DdbValue.L(List.of(new DdbValue.N("1"), new DdbValue.N("2.5"))));
        Map<String, DdbValue> attributes = new LinkedHashMap<>();
        attributes.put("address", new DdbValue.M(address));
        attributes.put("price", new DdbValue.N("12.50"));
        attributes.put("gone", DdbValue.Null.INSTANCE);
        stageAndMerge(settings, catalog, List.of(upsert("v-1", attributes)));
        Table table = table(catalog);
        assertEquals(
                Types.VariantType.get(),
                table.schema().findField(TableLayout.VARIANT).type());
        assertTableEqualsModel(table);
        try (CloseableIterable<Record> rows = IcebergGenerics.read(table).build()) {
            Variant variant = (Variant) rows.iterator().next().getField(TableLayout.VARIANT);
            VariantObject item = variant.value().asObject();
            assertEquals("v-1", item.get("id").asPrimitive().get());
            assertEquals(
                    new BigDecimal("12.50"), item.get("price").asPrimitive().get());
            VariantObject a = item.get("address").asObject();
            assertEquals("Lyon", a.get("city").asPrimitive().get());
            assertEquals(2, a.get("floors").asArray().numElements());
            assertEquals(PhysicalType.NULL, item.get("gone").type());
        }
    }

    @Test
    void aDecimalColumnIsWidenedWhenALaterMergeBringsLargerValues() {
        env.put("COLUMN_TYPES", "price=decimal(12,2)");
        MergerSettings settings = settings();
        Catalog catalog = settings.catalog().load();
        stageAndMerge(settings, catalog, List.of(upsert("p-1", Map.of("price", new DdbValue.N("19.99")))));
        stageAndMerge(settings, catalog, List.of(upsert("p-2", Map.of("price", new DdbValue.N("123456789012345.25")))));
        Table table = table(catalog);
        assertEquals(
                Types.DecimalType.of(17, 2), table.schema().findField("price").type(), "decimal(12,2) widened");
        assertTableEqualsModel(table);
    }

    @Test
    void aVariantColumnOnFormatV2IsRefusedWithTheReason() {
        env.put("ITEM_VARIANT_COLUMN", "true");
        var e = Assertions.assertThrows(dev.ddb2iceberg.config.ConfigurationException.class, this::settings);
        assertTrue(e.getMessage().contains("TABLE_FORMAT_VERSION=3"), e.getMessage());
    }
}
