package dev.ddb2iceberg.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.Map;
import java.util.TreeMap;
import org.apache.iceberg.Schema;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetWriter;
import org.apache.iceberg.inmemory.InMemoryOutputFile;
import org.apache.iceberg.io.FileAppender;
import org.apache.iceberg.parquet.Parquet;
import org.apache.iceberg.types.Types;
import org.apache.parquet.ParquetReadOptions;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.junit.jupiter.api.Test;

/**
 * A merge writes its short-lived files with zstd's fastest level and a small dictionary budget,
 * unless the table says otherwise.
 */
class MergeFileSettingsTest {
    private static final String LEVEL = TableProperties.PARQUET_COMPRESSION_LEVEL;
    private static final String DELETE_LEVEL = TableProperties.DELETE_PARQUET_COMPRESSION_LEVEL;
    private static final String DICT = TableProperties.PARQUET_DICT_SIZE_BYTES;
    private static final String SMALL = MergeWriter.MERGE_DICT_SIZE_BYTES;

    @Test
    void zstdWithoutALevelIsWrittenAtLevelOneForDataAndDeletes() {
        assertEquals(
                Map.of(LEVEL, "1", DELETE_LEVEL, "1", DICT, SMALL),
                MergeWriter.mergeFileSettings(Map.of(TableProperties.PARQUET_COMPRESSION, "zstd")),
                "the pipeline's tables (zstd, no level)");
        assertEquals(
                Map.of(LEVEL, "1", DELETE_LEVEL, "1", DICT, SMALL),
                MergeWriter.mergeFileSettings(Map.of()),
                "no codec set: Iceberg's default since 1.4 is zstd");
    }

    @Test
    void aLevelOrACodecTheTableSetsIsKept() {
        assertEquals(
                Map.of(DICT, SMALL),
                MergeWriter.mergeFileSettings(Map.of(TableProperties.PARQUET_COMPRESSION, "zstd", LEVEL, "9")),
                "a level the table sets applies to data and deletes");
        assertEquals(
                Map.of(LEVEL, "1", DICT, SMALL),
                MergeWriter.mergeFileSettings(Map.of(DELETE_LEVEL, "5")),
                "a delete level the table sets is kept; data files still get level 1");
        assertEquals(
                Map.of(DICT, SMALL),
                MergeWriter.mergeFileSettings(Map.of(TableProperties.PARQUET_COMPRESSION, "snappy")),
                "another codec is left to its own default");
        assertEquals(
                Map.of(DELETE_LEVEL, "1", DICT, SMALL),
                MergeWriter.mergeFileSettings(Map.of(
                        TableProperties.PARQUET_COMPRESSION,
                        "gzip",
                        TableProperties.DELETE_PARQUET_COMPRESSION,
                        "zstd")),
                "zstd deletes beside gzip data");
    }

    @Test
    void aMergesFileKeepsAFewDistinctValuesInADictionaryAndWritesDistinctOnesPlain() throws IOException {
        // A merge's file of a few thousand rows: a key column whose values are all distinct, and a
        // status of three values. The budget must leave the key plain (no dictionary built whole
        // and thrown away) and keep the status in a dictionary.
        Schema schema = new Schema(
                Types.NestedField.required(1, "id", Types.LongType.get()),
                Types.NestedField.required(2, "status", Types.StringType.get()));
        InMemoryOutputFile out = new InMemoryOutputFile();
        try (FileAppender<Record> writer = Parquet.write(out)
                .schema(schema)
                .createWriterFunc(GenericParquetWriter::create)
                .set(TableProperties.PARQUET_COMPRESSION, "zstd") // the pipeline's tables' codec
                .setAll(MergeWriter.mergeFileSettings(Map.of(TableProperties.PARQUET_COMPRESSION, "zstd")))
                .build()) {
            String[] statuses = {"PLACED", "PAID", "SHIPPED"};
            for (long id = 0; id < 5_000; id++) {
                Record row = GenericRecord.create(schema);
                row.setField("id", id * 7_919);
                row.setField("status", statuses[(int) (id % 3)]);
                writer.add(row);
            }
        }
        Map<String, ColumnChunkMetaData> chunks = new TreeMap<>();
        try (ParquetFileReader reader = ParquetFileReader.open(
                ParquetRowCopy.parquetFile(out.toInputFile()),
                ParquetReadOptions.builder().build())) {
            for (ColumnChunkMetaData column :
                    reader.getFooter().getBlocks().get(0).getColumns()) {
                chunks.put(column.getPath().toDotString(), column);
            }
        }
        assertFalse(chunks.get("id").hasDictionaryPage(), "distinct keys are written plain: " + chunks.get("id"));
        assertTrue(
                chunks.get("status").hasDictionaryPage(),
                "three statuses keep their dictionary: " + chunks.get("status"));
    }

    @Test
    void aDictionaryBudgetTheTableSetsIsKept() {
        assertEquals(
                Map.of(LEVEL, "1", DELETE_LEVEL, "1"),
                MergeWriter.mergeFileSettings(Map.of(DICT, "4194304")),
                "the table's own dictionary budget");
    }
}
