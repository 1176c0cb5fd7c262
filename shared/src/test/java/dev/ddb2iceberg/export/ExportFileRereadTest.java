package dev.ddb2iceberg.export;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.testkit.DynamoDbExportFiles;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import software.amazon.awssdk.core.ResponseInputStream;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;

/**
 * A parallel-load worker reads an export file while it writes batches of rows; S3 closes a
 * connection left idle meanwhile. The file is read from the embedded S3 server over HTTP; the cut
 * connection is injected by wrapping the response stream (the server cannot be told to drop a
 * response midway), so the reader meets it as it would a reset from S3.
 */
@ExtendWith(S3ServerExtension.class)
class ExportFileRereadTest {

    /** The real client, except that the first {@code cuts} reads of a data file end with an IOException after 4 KB. */
    private static S3Client cutting(S3Client real, int cuts, AtomicInteger gets) {
        return new S3Client() {
            @Override
            public ResponseInputStream<GetObjectResponse> getObject(GetObjectRequest request) {
                ResponseInputStream<GetObjectResponse> in = real.getObject(request);
                if (!request.key().contains("/data/") || gets.incrementAndGet() > cuts) {
                    return in;
                }
                InputStream cut = new FilterInputStream(in) {
                    private long read;

                    @Override
                    public int read(byte[] b, int off, int len) throws IOException {
                        if (read >= 4096) {
                            throw new IOException("Connection reset (injected)");
                        }
                        int n = super.read(b, off, (int) Math.min(len, 4096 - read));
                        read += Math.max(0, n);
                        return n;
                    }
                };
                return new ResponseInputStream<>(in.response(), cut);
            }

            @Override
            public String serviceName() {
                return real.serviceName();
            }

            @Override
            public void close() {
                real.close();
            }
        };
    }

    private static List<Map<String, DdbValue>> items(int n) {
        List<Map<String, DdbValue>> items = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            items.add(Map.of(
                    "pk", new DdbValue.S("k" + i), "note", new DdbValue.S("item number " + i + " of the export")));
        }
        return items;
    }

    @Test
    void aReadCutShortIsReadAgainFromWhereItStoppedAndEveryItemComesOnce(EmbeddedS3Server server) {
        String bucket = S3ServerExtension.newBucket(server);
        String location = new DynamoDbExportFiles(server.newClient(), bucket, "exports/")
                .writeFull("01764000000000-r", Instant.now(), items(3_000), 1);
        AtomicInteger gets = new AtomicInteger();
        S3Client s3 = cutting(server.newClient(), 2, gets);
        ExportManifest manifest = ExportManifest.read(server.newClient(), ExportLocation.parse(location));
        List<String> seen = new ArrayList<>();
        long lines = new ExportFileReader(s3, bucket)
                .readAll(
                        manifest.files().get(0),
                        new ExportLines(ExportManifest.Type.FULL, List.of("pk"), 0),
                        (Change c, int bytes) -> seen.add(((DdbValue.S) c.keys().get("pk")).value()));

        assertEquals(3_000, lines);
        assertEquals(3, gets.get(), "two reads cut short, then one whole");
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < 3_000; i++) {
            expected.add("k" + i);
        }
        assertEquals(expected, seen, "each item once, in the file's order");
    }

    @Test
    void readsCutShortAgainAndAgainWithoutProgressFailNamingTheFile(EmbeddedS3Server server) {
        String bucket = S3ServerExtension.newBucket(server);
        String location = new DynamoDbExportFiles(server.newClient(), bucket, "exports/")
                .writeFull("01764000000000-s", Instant.now(), items(3_000), 1);
        AtomicInteger gets = new AtomicInteger();
        S3Client s3 = cutting(server.newClient(), Integer.MAX_VALUE, gets);
        ExportManifest manifest = ExportManifest.read(server.newClient(), ExportLocation.parse(location));
        ExportManifest.DataFile file = manifest.files().get(0);
        UncheckedIOException e = assertThrows(
                UncheckedIOException.class,
                () -> new ExportFileReader(s3, bucket)
                        .readAll(file, new ExportLines(ExportManifest.Type.FULL, List.of("pk"), 0), (c, bytes) -> {}));
        assertTrue(e.getMessage().contains(file.key()), e.getMessage());
        assertEquals(ExportFileReader.REREADS + 1, gets.get(), "reads before giving up: " + e.getMessage());
    }
}
