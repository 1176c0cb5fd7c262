package dev.ddb2iceberg.export;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;

/**
 * A DynamoDB export's manifests, read and checked: {@code manifest-summary.json} (what was exported,
 * when, how many items) and {@code manifest-files.json} (one line per data file with its item count
 * and MD5). Only {@code DYNAMODB_JSON} output is read; ION exports are refused.
 *
 * @param time the export's point in time: a full export holds each item as it was then; an
 *     incremental export holds the changes up to then
 * @param from an incremental export's start (null for a full export)
 */
public record ExportManifest(
        ExportLocation location, Type type, Instant time, Instant from, long itemCount, List<DataFile> files) {
    private static final ObjectMapper JSON = new ObjectMapper();

    public enum Type {
        FULL,
        INCREMENTAL
    }

    /**
     * One data file: gzip-compressed DynamoDB JSON lines.
     *
     * @param md5 the Base64 MD5 of the file's bytes as stored, or null when the manifest gives none
     */
    public record DataFile(String key, long itemCount, String md5) {}

    public String exportId() {
        return location.exportId();
    }

    public static ExportManifest read(S3Client s3, ExportLocation location) {
        JsonNode summary = json(s3, location.bucket(), location.summaryKey(), location);
        String format = summary.path("outputFormat").asText("");
        if (!format.equals("DYNAMODB_JSON")) {
            throw new IllegalArgumentException(
                    "Export " + location + " is in '" + format + "' format; only DYNAMODB_JSON"
                            + " exports can be loaded (request one with --export-format DYNAMODB_JSON).");
        }
        Type type = summary.path("exportType").asText("FULL_EXPORT").equals("INCREMENTAL_EXPORT")
                ? Type.INCREMENTAL
                : Type.FULL;
        Instant time = instant(summary, type == Type.FULL ? "exportTime" : "exportToTime", location);
        Instant from = type == Type.FULL ? null : instant(summary, "exportFromTime", location);
        if (!summary.path("itemCount").canConvertToLong()) {
            throw new IllegalArgumentException("manifest-summary.json of export " + location + " has no itemCount.");
        }
        long itemCount = summary.path("itemCount").asLong();
        String filesKey = summary.path("manifestFilesS3Key").asText(location.folder() + "manifest-files.json");
        List<DataFile> files = new ArrayList<>();
        long listed = 0;
        String text = new String(bytes(s3, location.bucket(), filesKey, location), StandardCharsets.UTF_8);
        int lineNo = 0;
        for (String line : text.split("\n")) {
            lineNo++;
            if (line.isBlank()) {
                continue;
            }
            JsonNode f;
            try {
                f = JSON.readTree(line);
            } catch (IOException e) {
                throw new IllegalArgumentException(
                        "Line " + lineNo + " of " + filesKey + " is not JSON: " + e.getMessage());
            }
            if (!f.path("dataFileS3Key").isTextual() || !f.path("itemCount").canConvertToLong()) {
                throw new IllegalArgumentException(
                        "Line " + lineNo + " of " + filesKey + " lacks dataFileS3Key or itemCount: " + line);
            }
            String md5 =
                    f.path("md5Checksum").isTextual() ? f.path("md5Checksum").asText() : null;
            files.add(new DataFile(
                    f.path("dataFileS3Key").asText(), f.path("itemCount").asLong(), md5));
            listed += f.path("itemCount").asLong();
        }
        if (listed != itemCount) {
            throw new IllegalArgumentException("Export " + location + " is inconsistent: manifest-summary.json counts "
                    + itemCount + " items but manifest-files.json lists " + listed + " in " + files.size()
                    + " data files. Nothing was loaded; request the export again.");
        }
        return new ExportManifest(location, type, time, from, itemCount, List.copyOf(files));
    }

    private static Instant instant(JsonNode summary, String field, ExportLocation location) {
        try {
            return Instant.parse(summary.path(field).asText(""));
        } catch (DateTimeParseException e) {
            throw new IllegalArgumentException("manifest-summary.json of export " + location + " has no valid " + field
                    + " (found '" + summary.path(field).asText("") + "').");
        }
    }

    private static JsonNode json(S3Client s3, String bucket, String key, ExportLocation location) {
        try {
            return JSON.readTree(bytes(s3, bucket, key, location));
        } catch (IOException e) {
            throw new IllegalArgumentException("s3://" + bucket + "/" + key + " is not JSON: " + e.getMessage());
        }
    }

    private static byte[] bytes(S3Client s3, String bucket, String key, ExportLocation location) {
        try {
            return s3.getObjectAsBytes(b -> b.bucket(bucket).key(key)).asByteArray();
        } catch (NoSuchKeyException e) {
            throw new IllegalArgumentException(
                    "Export " + location + " has no s3://" + bucket + "/" + key
                            + ": is the export finished (aws dynamodb describe-export shows COMPLETED) and the location right?");
        } catch (SdkException e) {
            throw new IllegalStateException("Could not read s3://" + bucket + "/" + key + ": " + e.getMessage(), e);
        }
    }
}
