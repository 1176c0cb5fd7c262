package dev.ddb2iceberg.storage;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.FaultInjectingBlobStore;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.function.MergerSettings;
import dev.ddb2iceberg.testkit.LocalStack;
import java.io.Closeable;
import java.io.File;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.AlreadyExistsException;
import org.apache.iceberg.io.PositionOutputStream;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;

/**
 * The FileIO the functions write the table with, against the embedded S3 server: what it uploads
 * from memory arrives byte for byte with no local staging file, a file past the limit goes through
 * S3FileIO's own staged stream and arrives whole, and any S3FileIO setting that changes the upload
 * sends every file through S3FileIO's own stream.
 */
@ExtendWith(S3ServerExtension.class)
class BufferedS3FileIOTest {
    @TempDir
    Path dir;

    private BufferedS3FileIO io;

    @AfterEach
    void closeIo() {
        if (io != null) {
            io.close();
        }
    }

    private BufferedS3FileIO open(EmbeddedS3Server server, int limit, Map<String, String> extra) {
        Map<String, String> props = new HashMap<>();
        props.put("s3.endpoint", server.endpoint().toString());
        props.put("s3.path-style-access", "true");
        props.put("s3.chunked-encoding-enabled", "false");
        props.put("s3.access-key-id", EmbeddedS3Server.ACCESS_KEY);
        props.put("s3.secret-access-key", EmbeddedS3Server.SECRET_KEY);
        props.put("client.region", EmbeddedS3Server.REGION);
        props.put("http-client.type", "urlconnection");
        props.put("s3.staging-dir", staging().getAbsolutePath());
        props.putAll(extra);
        io = new BufferedS3FileIO(limit);
        io.initialize(props);
        return io;
    }

    private File staging() {
        return dir.resolve("staging").toFile();
    }

    private int stagingFiles() {
        String[] names = staging().list();
        return names == null ? 0 : names.length;
    }

    private static byte[] randomBytes(int n, long seed) {
        byte[] bytes = new byte[n];
        new Random(seed).nextBytes(bytes);
        return bytes;
    }

    private static byte[] stored(EmbeddedS3Server server, String bucket, String key) {
        return server.newClient()
                .getObjectAsBytes(
                        GetObjectRequest.builder().bucket(bucket).key(key).build())
                .asByteArray();
    }

    /** Writes {@code bytes} in uneven pieces, single bytes among them, as Parquet's writer does. */
    private static void writeInPieces(PositionOutputStream out, byte[] bytes) throws IOException {
        Random sizes = new Random(7);
        int at = 0;
        while (at < bytes.length) {
            if (sizes.nextInt(10) == 0) {
                out.write(bytes[at++]);
            } else {
                int n = Math.min(bytes.length - at, 1 + sizes.nextInt(40_000));
                out.write(bytes, at, n);
                at += n;
            }
            assertEquals(at, out.getPos(), "the stream's position after " + at + " bytes");
        }
    }

    @Test
    void aSmallFileIsUploadedFromMemoryWithoutALocalStagingFile(EmbeddedS3Server server) throws IOException {
        String bucket = S3ServerExtension.newBucket(server);
        BufferedS3FileIO io = open(server, BufferedS3FileIO.DEFAULT_MEMORY_LIMIT, Map.of());
        assertTrue(io.uploadsFromMemory(), "no setting of S3FileIO's changes its uploads here");
        byte[] bytes = randomBytes(300_000, 1);

        PositionOutputStream out =
                io.newOutputFile("s3://" + bucket + "/warehouse/a.parquet").create();
        writeInPieces(out, bytes);
        assertEquals(0, stagingFiles(), "local staging files while writing a file under the limit");
        out.close();
        out.close(); // a second close uploads nothing more and does not fail

        assertArrayEquals(bytes, stored(server, bucket, "warehouse/a.parquet"));
        assertEquals(0, stagingFiles(), "local staging files after the upload");
    }

    @Test
    void aFilePastTheLimitGoesThroughS3FileIOsOwnStreamAndArrivesWhole(EmbeddedS3Server server) throws IOException {
        String bucket = S3ServerExtension.newBucket(server);
        BufferedS3FileIO io = open(server, 64 << 10, Map.of());
        byte[] bytes = randomBytes(1 << 20, 2);

        PositionOutputStream out =
                io.newOutputFile("s3a://" + bucket + "/warehouse/big.parquet").createOrOverwrite();
        writeInPieces(out, bytes);
        assertEquals(1, stagingFiles(), "S3FileIO's staging files once the file passed the 64 KB limit");
        out.close();

        assertArrayEquals(bytes, stored(server, bucket, "warehouse/big.parquet"));
        assertEquals(0, stagingFiles(), "local staging files after the upload");
    }

    @Test
    void aFileExactlyAtTheLimitStaysInMemoryAndOneByteMoreIsHandedOver(EmbeddedS3Server server) throws IOException {
        String bucket = S3ServerExtension.newBucket(server);
        BufferedS3FileIO io = open(server, 1000, Map.of());
        byte[] bytes = randomBytes(1001, 5);

        PositionOutputStream atLimit =
                io.newOutputFile("s3://" + bucket + "/at-limit").create();
        atLimit.write(bytes, 0, 1000);
        assertEquals(0, stagingFiles(), "staging files with 1,000 bytes written under a limit of 1,000");
        atLimit.close();
        assertArrayEquals(Arrays.copyOf(bytes, 1000), stored(server, bucket, "at-limit"));

        PositionOutputStream past =
                io.newOutputFile("s3://" + bucket + "/past-limit").create();
        past.write(bytes, 0, 1000);
        past.write(bytes[1000]);
        assertEquals(1, stagingFiles(), "staging files once one byte more passed the limit");
        assertEquals(1001, past.getPos());
        past.close();
        assertArrayEquals(bytes, stored(server, bucket, "past-limit"));
    }

    @Test
    void anEmptyFileIsUploadedEmpty(EmbeddedS3Server server) throws IOException {
        String bucket = S3ServerExtension.newBucket(server);
        BufferedS3FileIO io = open(server, BufferedS3FileIO.DEFAULT_MEMORY_LIMIT, Map.of());
        io.newOutputFile("s3://" + bucket + "/empty").create().close();
        assertEquals(0, stored(server, bucket, "empty").length);
    }

    @Test
    void aLocationWithAnEmptyPathSegmentIsRefusedNamingIt(EmbeddedS3Server server) {
        String bucket = S3ServerExtension.newBucket(server);
        BufferedS3FileIO io = open(server, BufferedS3FileIO.DEFAULT_MEMORY_LIMIT, Map.of());
        String doubled = "s3://" + bucket + "/warehouse/t/data//00000-1-deletes.parquet";
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> io.newOutputFile(doubled));
        assertTrue(e.getMessage().contains(doubled), e.getMessage());
        assertTrue(
                server.newClient()
                        .listObjectsV2(b -> b.bucket(bucket))
                        .contents()
                        .isEmpty(),
                "nothing was written");
        assertFalse(ObjectPaths.hasEmptySegment("s3://" + bucket + "/warehouse/t/data/x.parquet"));
        assertTrue(ObjectPaths.hasEmptySegment("s3a://" + bucket + "//x"), "right after the bucket too");
    }

    @Test
    void createRefusesAnObjectThatExistsAndCreateOrOverwriteReplacesIt(EmbeddedS3Server server) throws IOException {
        String bucket = S3ServerExtension.newBucket(server);
        BufferedS3FileIO io = open(server, BufferedS3FileIO.DEFAULT_MEMORY_LIMIT, Map.of());
        String location = "s3://" + bucket + "/metadata/v1.json";
        try (PositionOutputStream out = io.newOutputFile(location).create()) {
            out.write(new byte[] {1, 2, 3});
        }

        assertThrows(
                AlreadyExistsException.class, () -> io.newOutputFile(location).create());
        try (PositionOutputStream out = io.newOutputFile(location).createOrOverwrite()) {
            out.write(new byte[] {4, 5});
        }
        assertArrayEquals(new byte[] {4, 5}, stored(server, bucket, "metadata/v1.json"));
        assertTrue(io.newOutputFile(location).toInputFile().exists());
    }

    @Test
    void aFailedUploadFailsTheCloseAndLeavesNoObject(EmbeddedS3Server server) throws IOException {
        String bucket = S3ServerExtension.newBucket(server);
        BufferedS3FileIO io = open(
                server,
                BufferedS3FileIO.DEFAULT_MEMORY_LIMIT,
                Map.of("s3.retry.num-retries", "1", "s3.retry.min-wait-ms", "10", "s3.retry.max-wait-ms", "50"));
        server.faults().failFrom(FaultInjectingBlobStore.Operation.PUT, 1, key -> key.equals("warehouse/lost.parquet"));
        try {
            PositionOutputStream out = io.newOutputFile("s3://" + bucket + "/warehouse/lost.parquet")
                    .create();
            out.write(randomBytes(1000, 3));
            assertThrows(SdkException.class, out::close, "the PUT's failure, at close");
        } finally {
            server.faults().clear();
        }
        assertFalse(
                io.newInputFile("s3://" + bucket + "/warehouse/lost.parquet").exists());
    }

    @Test
    void aSettingThatChangesTheUploadSendsEveryFileThroughS3FileIO(EmbeddedS3Server server) throws IOException {
        String bucket = S3ServerExtension.newBucket(server);
        // A Content-MD5 header on each upload: only S3FileIO's own stream computes it.
        BufferedS3FileIO io =
                open(server, BufferedS3FileIO.DEFAULT_MEMORY_LIMIT, Map.of("s3.checksum-enabled", "true"));
        assertFalse(io.uploadsFromMemory(), "with s3.checksum-enabled, uploads are S3FileIO's");
        byte[] bytes = randomBytes(10_000, 4);

        PositionOutputStream out =
                io.newOutputFile("s3://" + bucket + "/warehouse/md5.parquet").create();
        out.write(bytes);
        assertEquals(1, stagingFiles(), "S3FileIO's staging file while writing");
        out.close();
        assertArrayEquals(bytes, stored(server, bucket, "warehouse/md5.parquet"));
    }

    @Test
    void onlyS3LocationsWithABucketAndAKeyAreUploadedFromMemory() {
        assertEquals(
                new BufferedS3FileIO.ObjectKey("b", "k/x.parquet"),
                BufferedS3FileIO.ObjectKey.of("s3://b/k/x.parquet"));
        assertEquals(new BufferedS3FileIO.ObjectKey("b", "x"), BufferedS3FileIO.ObjectKey.of("s3n://b/x"));
        assertNull(BufferedS3FileIO.ObjectKey.of("gs://b/x"), "another scheme");
        assertNull(BufferedS3FileIO.ObjectKey.of("s3://b/"), "no key");
        assertNull(BufferedS3FileIO.ObjectKey.of("s3:///x"), "no bucket");
        assertNull(BufferedS3FileIO.ObjectKey.of("/local/x"), "no scheme");
    }

    @Test
    void theFunctionsTablesAreWrittenThroughIt(EmbeddedS3Server server) throws IOException {
        Map<String, String> env =
                new LocalStack(server, S3ServerExtension.newBucket(server), dir).environment("orders");
        Catalog catalog = MergerSettings.from(new Environment(env)).catalog().load();
        try (Closeable closing = (Closeable) catalog) {
            Table table = catalog.buildTable(
                            TableIdentifier.of("ddb2iceberg", "io_check"),
                            new Schema(Types.NestedField.required(1, "pk", Types.StringType.get())))
                    .create();
            assertTrue(
                    table.io() instanceof BufferedS3FileIO buffered && buffered.uploadsFromMemory(),
                    "the table's FileIO: " + table.io().getClass().getName());
        }
    }
}
