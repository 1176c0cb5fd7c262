package dev.ddb2iceberg.export;

/**
 * Where one DynamoDB export lies: {@code s3://<bucket>/<prefix>AWSDynamoDB/<ExportId>/}, the folder
 * holding its {@code manifest-summary.json}. Accepts the folder with or without its trailing slash,
 * or the summary's own key.
 */
public record ExportLocation(String bucket, String folder, String exportId) {
    private static final String MARKER = "AWSDynamoDB/";

    public static ExportLocation parse(String uri) {
        String usage = " Give the export's folder, like s3://my-bucket/exports/AWSDynamoDB/01700000000000-abcd1234/"
                + " (the ExportManifest of `aws dynamodb describe-export`, without manifest-summary.json).";
        if (uri == null || !uri.startsWith("s3://")) {
            throw new IllegalArgumentException("Export location '" + uri + "' is not an s3:// URI." + usage);
        }
        String rest = uri.substring("s3://".length());
        if (rest.endsWith("manifest-summary.json")) {
            rest = rest.substring(0, rest.length() - "manifest-summary.json".length());
        }
        int slash = rest.indexOf('/');
        int marker = rest.lastIndexOf(MARKER);
        if (slash <= 0 || marker < slash) {
            throw new IllegalArgumentException(
                    "Export location '" + uri + "' has no AWSDynamoDB/<ExportId>/ folder." + usage);
        }
        String folder = rest.substring(slash + 1);
        folder = folder.endsWith("/") ? folder : folder + "/";
        String id = folder.substring(folder.lastIndexOf(MARKER) + MARKER.length(), folder.length() - 1);
        if (id.isEmpty() || id.contains("/")) {
            throw new IllegalArgumentException(
                    "Export location '" + uri + "' does not end in AWSDynamoDB/<ExportId>/." + usage);
        }
        return new ExportLocation(rest.substring(0, slash), folder, id);
    }

    public String summaryKey() {
        return folder + "manifest-summary.json";
    }

    @Override
    public String toString() {
        return "s3://" + bucket + "/" + folder;
    }
}
