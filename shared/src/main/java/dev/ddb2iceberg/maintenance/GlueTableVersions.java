package dev.ddb2iceberg.maintenance;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ddb2iceberg.catalog.GlueApi;
import dev.ddb2iceberg.catalog.GlueException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Deletes a Glue table's old table versions, keeping the newest. Glue keeps a version for each
 * update of a table unless the update says SkipArchive, which Glue's Iceberg REST endpoint offers
 * no way to say; past 100,000 versions a table (1,000,000 an account) its commits fail
 * ({@code ResourceNumberLimitExceededException}).
 *
 * <p>Version ids are integers, one more for each update. The kept ones are the table's current
 * version and those just below it ({@code kept} in all), so which to delete is known from any page
 * of {@code GetTableVersions}, in whatever order Glue lists them; the current version is never one.
 * A run deletes at most {@code maxPerRun}, the oldest first, and lists only the pages that can
 * hold them; the rest wait for the next run.
 */
public final class GlueTableVersions implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(GlueTableVersions.class);
    /** BatchDeleteTableVersion takes at most 100 ids; GetTableVersions returns at most 100 a page. */
    static final int PAGE = 100;

    private final GlueApi glue;
    private final String catalogId;
    private final int kept;
    private final int maxPerRun;
    private boolean batchUnavailable;

    /**
     * @param catalogId the account that owns the Data Catalog
     * @param kept the newest versions kept, the current one among them (at least 1)
     * @param maxPerRun the most versions one call of {@link #trim} deletes
     */
    public GlueTableVersions(GlueApi glue, String catalogId, int kept, int maxPerRun) {
        if (kept < 1 || maxPerRun < 1) {
            throw new IllegalArgumentException("kept and maxPerRun must be at least 1: " + kept + ", " + maxPerRun);
        }
        this.glue = glue;
        this.catalogId = catalogId;
        this.kept = kept;
        this.maxPerRun = maxPerRun;
    }

    /**
     * Deletes the table's versions older than the newest {@code kept} (on a dry run, only counts
     * them), at most {@code maxPerRun}. Never throws: a failure is logged with what to do, and the
     * next run tries again.
     *
     * @return the versions deleted (on a dry run: that would be)
     */
    public int trim(String database, String table, boolean dryRun) {
        try {
            return trimOrThrow(database, table, dryRun);
        } catch (RuntimeException e) {
            String todo = e instanceof GlueException g && g.accessDenied()
                    ? "give the Maintenance function's role glue:GetTable, glue:GetTableVersions,"
                            + " glue:BatchDeleteTableVersion and glue:DeleteTableVersion on the catalog, the"
                            + " database and the table (template.yaml does)"
                    : "the next run tries again; if this repeats, delete old versions by hand"
                            + " (aws glue batch-delete-table-version) before the table reaches Glue's 100,000";
            LOG.warn("Glue table versions of {}.{} not deleted: {}. To do: {}", database, table, e.getMessage(), todo);
            return 0;
        }
    }

    private int trimOrThrow(String database, String table, boolean dryRun) {
        long current;
        try {
            current = glue.call("GetTable", Map.of("CatalogId", catalogId, "DatabaseName", database, "Name", table))
                    .path("Table")
                    .path("VersionId")
                    .asLong(-1);
        } catch (GlueException e) {
            if (e.notFound()) {
                return 0;
            }
            throw e;
        }
        if (current < 0) {
            LOG.info("Glue names no version of {}.{}: no table versions to delete", database, table);
            return 0;
        }
        long oldestKept = current - kept + 1;
        if (oldestKept <= 0) {
            LOG.info("{}.{} has no Glue table versions older than its newest {}", database, table, kept);
            return 0;
        }
        List<Long> old = oldVersions(database, table, oldestKept);
        int deleted = dryRun ? old.size() : delete(database, table, old);
        LOG.info(
                "{} {} Glue table versions of {}.{} below version {} (the current one is {}; {} kept)",
                dryRun ? "Found" : "Deleted",
                deleted,
                database,
                table,
                oldestKept,
                current,
                kept);
        return deleted;
    }

    /** The oldest versions below {@code oldestKept}, at most maxPerRun, from as many pages as can hold them. */
    private List<Long> oldVersions(String database, String table, long oldestKept) {
        List<Long> old = new ArrayList<>();
        int maxPages = (maxPerRun + kept) / PAGE + 2;
        String token = null;
        for (int page = 0; page < maxPages; page++) {
            Map<String, Object> request = new HashMap<>(
                    Map.of("CatalogId", catalogId, "DatabaseName", database, "TableName", table, "MaxResults", PAGE));
            if (token != null) {
                request.put("NextToken", token);
            }
            JsonNode response = glue.call("GetTableVersions", request);
            for (JsonNode v : response.path("TableVersions")) {
                long id = v.path("VersionId").asLong(-1);
                if (id >= 0 && id < oldestKept) {
                    old.add(id);
                }
            }
            token = response.path("NextToken").asText(null);
            if (token == null || token.isEmpty() || old.size() >= maxPerRun) {
                break;
            }
        }
        old.sort(null);
        return old.subList(0, Math.min(old.size(), maxPerRun));
    }

    /**
     * Deletes the versions, 100 a call; where BatchDeleteTableVersion fails (moto lacks it; a role
     * may lack its permission), one a call with DeleteTableVersion for the rest of this object's life.
     * A version already gone (another run deleted it) is not counted.
     */
    private int delete(String database, String table, List<Long> versions) {
        int deleted = 0;
        for (int from = 0; from < versions.size(); from += PAGE) {
            List<String> ids = versions.subList(from, Math.min(versions.size(), from + PAGE)).stream()
                    .map(String::valueOf)
                    .toList();
            if (!batchUnavailable) {
                try {
                    JsonNode response = glue.call(
                            "BatchDeleteTableVersion",
                            Map.of(
                                    "CatalogId", catalogId,
                                    "DatabaseName", database,
                                    "TableName", table,
                                    "VersionIds", ids));
                    deleted += ids.size() - failures(response.path("Errors"));
                    continue;
                } catch (GlueException e) {
                    batchUnavailable = true;
                    LOG.info("BatchDeleteTableVersion failed ({}): deleting one version a call", e.getMessage());
                }
            }
            for (String id : ids) {
                try {
                    glue.call(
                            "DeleteTableVersion",
                            Map.of(
                                    "CatalogId", catalogId,
                                    "DatabaseName", database,
                                    "TableName", table,
                                    "VersionId", id));
                    deleted++;
                } catch (GlueException e) {
                    if (!e.notFound()) {
                        throw e;
                    }
                }
            }
        }
        return deleted;
    }

    /** A batch's errors: each counts as not deleted; any but "already gone" is logged. */
    private static int failures(JsonNode errors) {
        for (JsonNode e : errors) {
            String code = e.path("ErrorDetail").path("ErrorCode").asText();
            if (!code.equals("EntityNotFoundException")) {
                LOG.warn(
                        "Glue did not delete table version {}: {} {}",
                        e.path("VersionId").asText(),
                        code,
                        e.path("ErrorDetail").path("ErrorMessage").asText());
            }
        }
        return errors.size();
    }

    @Override
    public void close() {
        glue.close();
    }
}
