package dev.ddb2iceberg.merger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.function.MergerSettings;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.staging.StagingStore;
import dev.ddb2iceberg.testkit.DynamoDbExportFiles;
import dev.ddb2iceberg.testkit.ExportHistory;
import dev.ddb2iceberg.testkit.LocalStack;
import dev.ddb2iceberg.testkit.TableAssertions;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.catalog.Catalog;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The merger function's {@code loadExport} input: the chunked export load through the handler. The
 * fixture is {@code dev.ddb2iceberg.load.ExportLoadTest}'s (embedded S3 server, a real catalog, an
 * export written in DynamoDB's documented layout), where the load itself is tested.
 */
@ExtendWith(S3ServerExtension.class)
class MergerHandlerExportLoadTest {
    @TempDir
    Path dir;

    private MergerSettings settings;
    private Catalog catalog;
    private S3Client s3;
    private StagingStore store;
    private DynamoDbExportFiles exports;
    private final Map<String, String> env = new HashMap<>();

    @BeforeEach
    void setUp(EmbeddedS3Server server) {
        String bucket = S3ServerExtension.newBucket(server);
        env.putAll(new LocalStack(server, bucket, dir).environment("orders"));
        settings = MergerSettings.from(new Environment(env));
        catalog = settings.catalog().load();
        s3 = server.newClient();
        store = new StagingStore(s3, settings.staging());
        exports = new DynamoDbExportFiles(s3, bucket, "exports/");
    }

    private void stage(List<Change> changes) {
        TableAssertions.stage(store, changes);
    }

    @Test
    void theMergerFunctionLoadsAnExportNamedInItsInputAndSaysWhenItIsDone() throws Exception {
        ExportHistory h = ExportHistory.of(9);
        stage(h.before());
        String location = exports.writeFull("01764000000000-j", Instant.now().minusSeconds(60), h.exported(), 2);
        MergerHandler handler = new MergerHandler(settings, catalog, s3);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        handler.handleRequest(
                new ByteArrayInputStream(("{\"loadExport\": \"" + location + "\", \"keys\": [\"pk\", \"sk\"]}")
                        .getBytes(StandardCharsets.UTF_8)),
                out,
                null);
        JsonNode result = new ObjectMapper().readTree(out.toByteArray());
        assertTrue(result.path("done").asBoolean(), result.toString());
        assertEquals(h.exported().size(), result.path("itemsLoaded").asLong(), result.toString());

        IllegalArgumentException bad = assertThrows(
                IllegalArgumentException.class,
                () -> handler.handleRequest(
                        new ByteArrayInputStream(
                                "{\"loadExport\": \"exports/AWSDynamoDB/x\"}".getBytes(StandardCharsets.UTF_8)),
                        new ByteArrayOutputStream(),
                        null));
        assertTrue(bad.getMessage().contains("is not an s3:// URI"), bad.getMessage());
    }
}
