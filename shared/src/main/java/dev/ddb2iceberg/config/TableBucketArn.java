package dev.ddb2iceberg.config;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * An S3 table bucket's ARN, {@code arn:<partition>:s3tables:<region>:<account>:bucket/<name>}
 * (the form and the name rules: lowercase letters, digits and hyphens, 3 to 63 characters, from
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/s3-tables-buckets-naming.html).
 */
public record TableBucketArn(String arn, String partition, String region, String account, String name) {
    private static final Pattern ARN = Pattern.compile(
            "arn:(aws[a-z-]*):s3tables:([a-z0-9-]+):(\\d{12}):bucket/([a-z0-9][a-z0-9-]{1,61}[a-z0-9])");

    public static TableBucketArn parse(String arn) {
        Matcher m = ARN.matcher(arn.trim());
        if (!m.matches()) {
            throw new ConfigurationException(
                    "TABLE_BUCKET_ARN='" + arn + "' is not a table bucket ARN: expected"
                            + " arn:aws:s3tables:<region>:<12-digit account>:bucket/<name>, as `aws s3tables list-table-buckets` shows it.");
        }
        return new TableBucketArn(arn.trim(), m.group(1), m.group(2), m.group(3), m.group(4));
    }
}
