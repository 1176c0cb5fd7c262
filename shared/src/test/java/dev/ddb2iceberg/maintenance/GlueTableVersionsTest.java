package dev.ddb2iceberg.maintenance;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ddb2iceberg.catalog.GlueApi;
import dev.ddb2iceberg.embedded.MotoServer;
import java.net.URI;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.LongStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;

/**
 * The catalog-versions cleanup against moto_server's Glue API (moto 5.2.1 on 127.0.0.1), over
 * HTTP with the same signed calls the function makes. moto keeps a table version for every
 * UpdateTable, numbered from 1, and serves GetTable, GetTableVersions and DeleteTableVersion.
 *
 * <p>What moto cannot check, so this does not: BatchDeleteTableVersion (moto lacks it and answers
 * HTTP 500, so these runs take the one-a-call fallback; the batch path's request shape is AWS's
 * documented one, untested here); GetTableVersions' paging (moto returns every version in one
 * page, oldest first; real Glue pages by 100); SkipArchive (moto ignores it); Glue's Iceberg REST
 * endpoint, whose commits are what make the versions in a deployment (moto does not serve it);
 * whether IAM allows the calls (moto does not enforce IAM here; DeployRehearsalTest matches the
 * role's statements); and Glue's quotas (no ResourceNumberLimitExceededException).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class GlueTableVersionsTest {
    private static final String ACCOUNT = "123456789012";
    private static final String DATABASE = "ddb2iceberg";

    private MotoServer moto;
    private GlueApi glue;

    @BeforeAll
    void startMoto() {
        moto = new MotoServer();
        glue = new GlueApi(
                URI.create(moto.endpoint()),
                "us-east-1",
                StaticCredentialsProvider.create(AwsBasicCredentials.create("test", "test")));
        glue.call("CreateDatabase", Map.of("CatalogId", ACCOUNT, "DatabaseInput", Map.of("Name", DATABASE)));
    }

    @AfterAll
    void stopMoto() {
        if (glue != null) {
            glue.close();
        }
        if (moto != null) {
            moto.close();
        }
    }

    /** A table with {@code versions} versions: created (version 1), then updated as a commit would. */
    private void tableWithVersions(String table, int versions) {
        glue.call(
                "CreateTable",
                Map.of("CatalogId", ACCOUNT, "DatabaseName", DATABASE, "TableInput", tableInput(table, 1)));
        for (int v = 2; v <= versions; v++) {
            glue.call(
                    "UpdateTable",
                    Map.of("CatalogId", ACCOUNT, "DatabaseName", DATABASE, "TableInput", tableInput(table, v)));
        }
    }

    private static Map<String, Object> tableInput(String table, int version) {
        return Map.of(
                "Name",
                table,
                "TableType",
                "EXTERNAL_TABLE",
                "Parameters",
                Map.of(
                        "table_type",
                        "ICEBERG",
                        "metadata_location",
                        "s3://bucket/warehouse/" + table + "/metadata/" + version + ".metadata.json"));
    }

    private List<Long> versionIds(String table) {
        List<Long> ids = new ArrayList<>();
        String token = null;
        do {
            Map<String, Object> request =
                    new HashMap<>(Map.of("CatalogId", ACCOUNT, "DatabaseName", DATABASE, "TableName", table));
            if (token != null) {
                request.put("NextToken", token);
            }
            JsonNode page = glue.call("GetTableVersions", request);
            page.path("TableVersions").forEach(v -> ids.add(v.path("VersionId").asLong()));
            token = page.path("NextToken").asText(null);
        } while (token != null && !token.isEmpty());
        ids.sort(null);
        return ids;
    }

    private long currentVersion(String table) {
        return glue.call("GetTable", Map.of("CatalogId", ACCOUNT, "DatabaseName", DATABASE, "Name", table))
                .path("Table")
                .path("VersionId")
                .asLong();
    }

    private static List<Long> range(long first, long last) {
        return LongStream.rangeClosed(first, last).boxed().toList();
    }

    @Test
    void keepsExactlyTheNewestVersionsTheCurrentOneAmongThemAndASecondRunDeletesNothing() {
        tableWithVersions("orders", 250);
        assertEquals(range(1, 250), versionIds("orders"), "moto's versions before the cleanup");
        GlueTableVersions cleanup = new GlueTableVersions(glue, ACCOUNT, 100, 2000);

        assertEquals(150, cleanup.trim(DATABASE, "orders", false), "versions deleted by the first run");
        assertEquals(range(151, 250), versionIds("orders"), "the versions left: the newest 100");
        assertEquals(250, currentVersion("orders"), "the current version");

        assertEquals(0, cleanup.trim(DATABASE, "orders", false), "versions deleted by a second run");
        assertEquals(range(151, 250), versionIds("orders"), "the versions left after a second run");
    }

    @Test
    void aRunBoundedToFewerDeletionsTakesTheOldestAndLeavesTheRestForTheNextRun() {
        tableWithVersions("payments", 250);
        GlueTableVersions bounded = new GlueTableVersions(glue, ACCOUNT, 100, 60);

        assertEquals(60, bounded.trim(DATABASE, "payments", false), "versions deleted by the first bounded run");
        assertEquals(range(61, 250), versionIds("payments"), "the oldest 60 went first");
        assertEquals(60, bounded.trim(DATABASE, "payments", false), "versions deleted by the second");
        assertEquals(30, bounded.trim(DATABASE, "payments", false), "versions deleted by the third");
        assertEquals(range(151, 250), versionIds("payments"), "the newest 100 left");
        assertEquals(0, bounded.trim(DATABASE, "payments", false), "versions deleted once none is old");
    }

    @Test
    void aDryRunCountsTheOldVersionsAndDeletesNone() {
        tableWithVersions("refunds", 130);
        GlueTableVersions cleanup = new GlueTableVersions(glue, ACCOUNT, 100, 2000);

        assertEquals(30, cleanup.trim(DATABASE, "refunds", true), "versions a dry run would delete");
        assertEquals(range(1, 130), versionIds("refunds"), "the versions after a dry run");
    }

    @Test
    void keepingOneLeavesOnlyTheCurrentVersionAndATableWithFewVersionsIsLeftAlone() {
        tableWithVersions("returns", 5);
        assertEquals(
                0, new GlueTableVersions(glue, ACCOUNT, 100, 2000).trim(DATABASE, "returns", false), "with 100 kept");
        assertEquals(range(1, 5), versionIds("returns"));

        assertEquals(4, new GlueTableVersions(glue, ACCOUNT, 1, 2000).trim(DATABASE, "returns", false), "with 1 kept");
        assertEquals(List.of(5L), versionIds("returns"), "only the current version left");
        assertEquals(5, currentVersion("returns"));
    }

    @Test
    void aMissingTableOrAFailedCallDeletesNothingAndDoesNotThrow() {
        GlueTableVersions cleanup = new GlueTableVersions(glue, ACCOUNT, 100, 2000);
        assertEquals(0, cleanup.trim(DATABASE, "no_such_table", false), "a table Glue does not have");
        assertEquals(0, cleanup.trim("no_such_database", "orders", false), "a database Glue does not have");

        // Glue at an address nothing listens on: the failure is logged, the run goes on.
        try (GlueApi nowhere = new GlueApi(
                URI.create("http://127.0.0.1:1"),
                "us-east-1",
                StaticCredentialsProvider.create(AwsBasicCredentials.create("test", "test")))) {
            assertEquals(0, new GlueTableVersions(nowhere, ACCOUNT, 100, 2000).trim(DATABASE, "orders", false));
        }
    }
}
