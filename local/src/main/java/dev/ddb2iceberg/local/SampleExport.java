package dev.ddb2iceberg.local;

import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.testkit.DynamoDbExportFiles;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The small DynamoDB export {@code up} puts in its bucket, so that the export-load sample events
 * (events/merger-load-export.json, events/export-load-execution.json) have an export to load. It
 * is dated when it is written: a load refuses an export more than 46 hours old.
 */
final class SampleExport {
    /** The export's id, as the sample events name it. */
    static final String ID = "01764460800000-a1b2c3d4";
    /** Where the sample events expect it: the stack's exports/ prefix, as ExportPrefix sets it in AWS. */
    static final String PREFIX = "exports/";

    static final int ITEMS = 12;

    private SampleExport() {}

    /** Writes the export to {@code bucket}; returns its folder, s3://bucket/exports/AWSDynamoDB/ID/. */
    static String write(S3Client s3, String bucket, Instant exportTime) {
        List<Map<String, DdbValue>> items = new ArrayList<>();
        for (int i = 1; i <= ITEMS; i++) {
            items.add(Map.of(
                    "customer_id", new DdbValue.S("C-30" + String.format("%02d", i)),
                    "order_id", new DdbValue.N(Integer.toString(i)),
                    "status", new DdbValue.S(i % 3 == 0 ? "SHIPPED" : "DELIVERED"),
                    "total", new DdbValue.N(i + "9.90")));
        }
        return new DynamoDbExportFiles(s3, bucket, PREFIX).writeFull(ID, exportTime, items, 2);
    }
}
