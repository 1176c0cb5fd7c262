package dev.ddb2iceberg.config;

import java.net.URI;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.auth.credentials.AwsSessionCredentials;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3Configuration;

/**
 * How to reach S3. In AWS only the region matters (Lambda sets AWS_REGION); locally
 * S3_ENDPOINT points at the embedded S3-compatible server, addressed path-style.
 */
public record S3Settings(String region, URI endpoint, boolean pathStyle, AwsCredentialsProvider credentials) {
    /**
     * Plain uploads for a local S3-compatible server (with checksum calculation only when required):
     * under concurrent load (about 4 in 10,000 PUTs here) s3proxy answers an {@code aws-chunked}
     * upload before reading all of it, and the client fails with "Error writing request body to
     * server" on every retry. Bodies sent whole, their SHA-256 signed, never did (0 in 50,000).
     * Real S3 keeps the SDK's defaults.
     */
    public static final S3Configuration LOCAL_UPLOADS = S3Configuration.builder()
            .chunkedEncodingEnabled(false)
            .expectContinueEnabled(false)
            .build();

    public static S3Settings from(Environment env) {
        String endpoint = env.string(Settings.S3_ENDPOINT);
        URI uri = null;
        if (!endpoint.isEmpty()) {
            try {
                uri = URI.create(endpoint);
            } catch (IllegalArgumentException e) {
                throw Environment.invalid(Settings.S3_ENDPOINT, endpoint, "a URL such as http://127.0.0.1:9000");
            }
            if (uri.getScheme() == null || uri.getHost() == null) {
                throw Environment.invalid(Settings.S3_ENDPOINT, endpoint, "a URL such as http://127.0.0.1:9000");
            }
        }
        return new S3Settings(
                env.string(Settings.AWS_REGION), uri, env.bool(Settings.S3_PATH_STYLE, uri != null), credentials(env));
    }

    /**
     * Credentials from the given environment's AWS_ACCESS_KEY_ID etc. (which is what Lambda sets and
     * what the local runtime passes in), else the SDK's default chain.
     */
    private static AwsCredentialsProvider credentials(Environment env) {
        String key = env.string(Settings.AWS_ACCESS_KEY_ID);
        String secret = env.string(Settings.AWS_SECRET_ACCESS_KEY);
        if (key.isEmpty() || secret.isEmpty()) {
            return DefaultCredentialsProvider.builder().build();
        }
        String token = env.string(Settings.AWS_SESSION_TOKEN);
        return StaticCredentialsProvider.create(
                token.isEmpty()
                        ? AwsBasicCredentials.create(key, secret)
                        : AwsSessionCredentials.create(key, secret, token));
    }

    /** A client with the URL-connection HTTP client, which starts faster in Lambda than Apache's. */
    public S3Client newClient() {
        var builder = S3Client.builder()
                .region(Region.of(region))
                .httpClient(UrlConnectionHttpClient.create())
                .credentialsProvider(credentials)
                .forcePathStyle(pathStyle);
        if (endpoint != null) {
            builder.endpointOverride(endpoint);
            builder.requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
                    .serviceConfiguration(LOCAL_UPLOADS);
        }
        return builder.build();
    }
}
