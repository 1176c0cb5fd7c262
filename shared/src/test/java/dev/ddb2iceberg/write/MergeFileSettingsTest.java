package dev.ddb2iceberg.write;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Map;
import org.apache.iceberg.TableProperties;
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
    void aDictionaryBudgetTheTableSetsIsKept() {
        assertEquals(
                Map.of(LEVEL, "1", DELETE_LEVEL, "1"),
                MergeWriter.mergeFileSettings(Map.of(DICT, "4194304")),
                "the table's own dictionary budget");
    }
}
