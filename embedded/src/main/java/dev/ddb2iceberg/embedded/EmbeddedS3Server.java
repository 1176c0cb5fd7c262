package dev.ddb2iceberg.embedded;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import org.gaul.s3proxy.S3Proxy;
import org.gaul.s3proxy.auth.AuthenticationType;
import org.gaul.s3proxy.blobstore.BlobStore;
import org.gaul.s3proxy.nio2blob.FilesystemNio2BlobStore;
import org.gaul.s3proxy.nio2blob.TransientNio2BlobStore;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3Configuration;

/**
 * A real S3-compatible server (s3proxy) started in-process on 127.0.0.1 and a free port. Tests and
 * the local runtime talk HTTP to it with the ordinary AWS SDK client, exactly as the functions
 * talk to S3 in AWS. Requests are signed (SigV4) with fixed local credentials.
 */
public final class EmbeddedS3Server implements AutoCloseable {
    public static final String ACCESS_KEY = "local-access-key";
    public static final String SECRET_KEY = "local-secret-key";
    public static final String REGION = "us-east-1";
    /**
     * Plain uploads (no {@code aws-chunked} bodies, no {@code Expect: 100-continue}): under concurrent
     * load s3proxy sometimes answers a chunked upload before reading all of it, and the client then
     * fails with "Error writing request body to server" on every retry. The same setting as the
     * library's {@code S3Settings.LOCAL_UPLOADS} for a local endpoint; kept here so that this module
     * needs nothing of the library.
     */
    public static final S3Configuration PLAIN_UPLOADS = S3Configuration.builder()
            .chunkedEncodingEnabled(false)
            .expectContinueEnabled(false)
            .build();

    private final S3Proxy proxy;
    private final FaultInjectingBlobStore faults;
    private final URI endpoint;

    private EmbeddedS3Server(BlobStore store, int port) throws Exception {
        this.faults = new FaultInjectingBlobStore(store);
        this.proxy = S3Proxy.builder()
                .blobStore(faults)
                .awsAuthentication(AuthenticationType.AWS_V2_OR_V4, ACCESS_KEY, SECRET_KEY)
                .endpoint(URI.create("http://127.0.0.1:" + port))
                .ignoreUnknownHeaders(true)
                .stopTimeout(0)
                .build();
        proxy.start();
        if (!"STARTED".equals(proxy.getState())) {
            throw new IllegalStateException("s3proxy did not start: state " + proxy.getState());
        }
        this.endpoint = URI.create("http://127.0.0.1:" + proxy.getPort());
    }

    /** A server that keeps objects in memory; they are gone when it stops. */
    public static EmbeddedS3Server inMemory() {
        return start(new TransientNio2BlobStore(), 0);
    }

    /** A server that keeps objects as files under {@code directory} (one sub-folder per bucket). */
    public static EmbeddedS3Server onDisk(Path directory) {
        return onDisk(directory, 0);
    }

    /** As {@link #onDisk(Path)}, on a given port (0 for any free one). */
    public static EmbeddedS3Server onDisk(Path directory, int port) {
        try {
            Files.createDirectories(directory);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create the S3 data folder " + directory, e);
        }
        return start(new FilesystemNio2BlobStore(directory.toAbsolutePath().toString()), port);
    }

    private static EmbeddedS3Server start(BlobStore store, int port) {
        try {
            return new EmbeddedS3Server(store, port);
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException("could not start the embedded S3 server", e);
        }
    }

    public URI endpoint() {
        return endpoint;
    }

    /** Switches server-side faults on and off (tests only). */
    public FaultInjectingBlobStore faults() {
        return faults;
    }

    /** An SDK client for this server: path-style addressing, local credentials. */
    public S3Client newClient() {
        return S3Client.builder()
                .endpointOverride(endpoint)
                .forcePathStyle(true)
                .region(Region.of(REGION))
                .credentialsProvider(
                        StaticCredentialsProvider.create(AwsBasicCredentials.create(ACCESS_KEY, SECRET_KEY)))
                .httpClient(UrlConnectionHttpClient.create())
                .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
                .serviceConfiguration(PLAIN_UPLOADS) // see there why
                .build();
    }

    public void createBucket(String bucket) {
        try (S3Client s3 = newClient()) {
            s3.createBucket(b -> b.bucket(bucket));
        }
    }

    /** Creates the bucket unless it is already there (a restarted on-disk server keeps its buckets). */
    public void ensureBucket(String bucket) {
        try (S3Client s3 = newClient()) {
            if (s3.listBuckets().buckets().stream().noneMatch(b -> b.name().equals(bucket))) {
                s3.createBucket(b -> b.bucket(bucket));
            }
        }
    }

    @Override
    public void close() {
        try {
            proxy.stop();
        } catch (Exception e) {
            throw new IllegalStateException("could not stop the embedded S3 server", e);
        }
    }
}
