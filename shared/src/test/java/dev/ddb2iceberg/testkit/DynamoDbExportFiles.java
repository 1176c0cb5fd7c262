package dev.ddb2iceberg.testkit;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbJson;
import dev.ddb2iceberg.model.DdbValue;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.function.LongFunction;
import java.util.zip.GZIPOutputStream;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Writes a DynamoDB export to S3 in the documented DYNAMODB_JSON layout, as DynamoDB's
 * export-table-to-point-in-time does: {@code <prefix>AWSDynamoDB/<id>/manifest-summary.json},
 * {@code manifest-files.json} (one line per data file with item count and Base64 MD5), {@code _started}
 * and gzip data files under {@code data/}, one of them empty (an empty partition). For tests and
 * the local CLI; DynamoDB itself cannot run here.
 */
public final class DynamoDbExportFiles {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final S3Client s3;
    private final String bucket;
    private final String prefix;

    public DynamoDbExportFiles(S3Client s3, String bucket, String prefix) {
        this.s3 = s3;
        this.bucket = bucket;
        this.prefix = prefix;
    }

    /** A full export of {@code items} as of {@code time}, spread over {@code files} data files plus an empty one. */
    public String writeFull(String exportId, Instant time, List<Map<String, DdbValue>> items, int files) {
        List<String> lines = new ArrayList<>();
        for (Map<String, DdbValue> item : items) {
            lines.add("{\"Item\":" + DdbJson.writeItem(item) + "}");
        }
        return write(exportId, summary(exportId, "FULL_EXPORT").put("exportTime", time.toString()), lines, files);
    }

    /**
     * A full export of {@code count} generated items ({@code item} makes the i-th), written one data
     * file at a time so that an export of millions of items never sits in memory (benchmarks); item i
     * goes to file i % files, and one more file stays empty.
     */
    public String writeFull(
            String exportId, Instant time, long count, int files, LongFunction<Map<String, DdbValue>> item) {
        return write(
                exportId,
                summary(exportId, "FULL_EXPORT").put("exportTime", time.toString()),
                count,
                files,
                i -> "{\"Item\":" + DdbJson.writeItem(item.apply(i)) + "}");
    }

    /**
     * An incremental export of {@code changes} between {@code from} and {@code to}, with the
     * NEW_AND_OLD_IMAGES view: each change's write time is its approximate creation time.
     */
    public String writeIncremental(String exportId, Instant from, Instant to, List<Change> changes, int files) {
        List<String> lines = new ArrayList<>();
        for (Change c : changes) {
            StringBuilder line = new StringBuilder("{\"Metadata\":{\"WriteTimestampMicros\":{\"N\":\"")
                    .append(c.approximateCreationMillis() * 1000)
                    .append("\"}},\"Keys\":")
                    .append(DdbJson.writeItem(c.keys()));
            if (c.newImage() != null) {
                line.append(",\"NewImage\":").append(DdbJson.writeItem(c.newImage()));
            }
            lines.add(line.append("}").toString());
        }
        ObjectNode summary = summary(exportId, "INCREMENTAL_EXPORT")
                .put("exportFromTime", from.toString())
                .put("exportToTime", to.toString())
                .put("outputView", "NEW_AND_OLD_IMAGES");
        return write(exportId, summary, lines, files);
    }

    private ObjectNode summary(String exportId, String type) {
        ObjectNode s = JSON.createObjectNode();
        s.put("version", "2023-08-01");
        s.put("exportArn", "arn:aws:dynamodb:us-east-1:123456789012:table/orders/export/" + exportId);
        s.put("startTime", Instant.now().toString());
        s.put("endTime", Instant.now().toString());
        s.put("tableArn", "arn:aws:dynamodb:us-east-1:123456789012:table/orders");
        s.put("tableId", "00000000-0000-0000-0000-000000000000");
        s.put("s3Bucket", bucket);
        s.put("s3Prefix", prefix);
        s.put("s3SseAlgorithm", "AES256");
        s.putNull("s3SseKmsKeyId");
        s.put("billedSizeBytes", 0);
        s.put("outputFormat", "DYNAMODB_JSON");
        s.put("exportType", type);
        return s;
    }

    private String write(String exportId, ObjectNode summary, List<String> lines, int files) {
        return write(exportId, summary, lines.size(), files, i -> lines.get((int) i));
    }

    /**
     * Writes the data files (line i, made by {@code line}, into file i % files, compressed as it
     * comes) and the manifests; returns the export's s3:// folder.
     */
    private String write(String exportId, ObjectNode summary, long count, int files, LongFunction<String> line) {
        String folder = prefix + "AWSDynamoDB/" + exportId + "/";
        StringBuilder manifest = new StringBuilder();
        for (int f = 0; f <= files; f++) { // the last file stays empty, like an empty partition
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            long n = 0;
            try (GZIPOutputStream gz = new GZIPOutputStream(out, 1 << 16)) {
                for (long i = f; f < files && i < count; i += files) {
                    gz.write((line.apply(i) + "\n").getBytes(StandardCharsets.UTF_8));
                    n++;
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            byte[] gz = out.toByteArray();
            String key = folder + "data/" + String.format("%05d-%s.json.gz", f, exportId);
            put(key, gz);
            manifest.append(JSON.createObjectNode()
                            .put("itemCount", n)
                            .put("md5Checksum", md5(gz))
                            .put("etag", "0")
                            .put("dataFileS3Key", key))
                    .append('\n');
        }
        put(folder + "manifest-files.json", manifest.toString().getBytes(StandardCharsets.UTF_8));
        summary.put("manifestFilesS3Key", folder + "manifest-files.json");
        summary.put("itemCount", count);
        put(folder + "manifest-summary.json", summary.toString().getBytes(StandardCharsets.UTF_8));
        put(folder + "_started", new byte[0]);
        return "s3://" + bucket + "/" + folder;
    }

    /** Replaces an object of the export (tests damage exports this way). */
    public void put(String key, byte[] bytes) {
        s3.putObject(b -> b.bucket(bucket).key(key), RequestBody.fromBytes(bytes));
    }

    public static byte[] gzip(byte[] bytes) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (GZIPOutputStream gz = new GZIPOutputStream(out)) {
            gz.write(bytes);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toByteArray();
    }

    private static String md5(byte[] bytes) {
        try {
            return Base64.getEncoder()
                    .encodeToString(MessageDigest.getInstance("MD5").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
