package dev.ddb2iceberg.catalog;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.http.ContentStreamProvider;
import software.amazon.awssdk.http.HttpExecuteRequest;
import software.amazon.awssdk.http.HttpExecuteResponse;
import software.amazon.awssdk.http.SdkHttpClient;
import software.amazon.awssdk.http.SdkHttpFullRequest;
import software.amazon.awssdk.http.SdkHttpMethod;
import software.amazon.awssdk.http.auth.aws.signer.AwsV4HttpSigner;
import software.amazon.awssdk.http.auth.spi.signer.SignedRequest;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;

/**
 * Calls to the AWS Glue API (not its Iceberg REST endpoint), as SigV4-signed JSON requests (AWS
 * JSON 1.1: a POST to the service's root with {@code X-Amz-Target: AWSGlue.<operation>}). The Glue
 * SDK would do the same, but its jar is 10 MB and the maintenance package has less than 1 MB of room
 * under its 40 MB check; the few calls the pipeline makes need only the SDK's signer and HTTP client,
 * which the package has for S3 already. One attempt a call: a failed call is the caller's to report.
 */
public final class GlueApi implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final URI endpoint;
    private final String region;
    private final AwsCredentialsProvider credentials;
    private final SdkHttpClient http;

    /** @param endpoint e.g. {@code https://glue.us-east-1.amazonaws.com} ({@link #endpoint(String)}) */
    public GlueApi(URI endpoint, String region, AwsCredentialsProvider credentials) {
        this.endpoint = endpoint;
        this.region = region;
        this.credentials = credentials;
        this.http = UrlConnectionHttpClient.create();
    }

    /** Glue's API endpoint in a region. */
    public static URI endpoint(String region) {
        return URI.create("https://glue." + region + ".amazonaws.com");
    }

    /**
     * One call: the operation's request as a JSON object, its response parsed.
     *
     * @throws GlueException when Glue answers with an error
     */
    public JsonNode call(String operation, Map<String, ?> request) {
        try {
            byte[] body = JSON.writeValueAsBytes(request);
            SdkHttpFullRequest unsigned = SdkHttpFullRequest.builder()
                    .method(SdkHttpMethod.POST)
                    .uri(endpoint)
                    .encodedPath("/")
                    .putHeader("Content-Type", "application/x-amz-json-1.1")
                    .putHeader("X-Amz-Target", "AWSGlue." + operation)
                    .build();
            SignedRequest signed = AwsV4HttpSigner.create()
                    .sign(r -> r.identity(credentials.resolveCredentials())
                            .request(unsigned)
                            .payload(ContentStreamProvider.fromByteArray(body))
                            .putProperty(AwsV4HttpSigner.SERVICE_SIGNING_NAME, "glue")
                            .putProperty(AwsV4HttpSigner.REGION_NAME, region));
            HttpExecuteResponse response = http.prepareRequest(HttpExecuteRequest.builder()
                            .request(signed.request())
                            .contentStreamProvider(signed.payload().orElse(null))
                            .build())
                    .call();
            byte[] out = response.responseBody().isPresent()
                    ? readAll(response.responseBody().get())
                    : new byte[0];
            int status = response.httpResponse().statusCode();
            if (status / 100 != 2) {
                throw GlueException.of(
                        operation,
                        status,
                        response.httpResponse()
                                .firstMatchingHeader("x-amzn-ErrorType")
                                .orElse(null),
                        new String(out, StandardCharsets.UTF_8));
            }
            return out.length == 0 ? JSON.createObjectNode() : JSON.readTree(out);
        } catch (IOException e) {
            throw new UncheckedIOException("Glue " + operation + " at " + endpoint + ": " + e, e);
        }
    }

    private static byte[] readAll(InputStream in) throws IOException {
        try (in) {
            return in.readAllBytes();
        }
    }

    @Override
    public void close() {
        http.close();
    }
}
