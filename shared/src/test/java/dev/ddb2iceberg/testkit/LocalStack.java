package dev.ddb2iceberg.testkit;

import dev.ddb2iceberg.config.CatalogSettings;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.S3Settings;
import dev.ddb2iceberg.config.StagingSettings;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.RestCatalogServer;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.iceberg.catalog.Catalog;

/**
 * The pipeline's AWS surroundings, locally: a bucket on the embedded S3 server and an Iceberg
 * JdbcCatalog on an SQLite file. {@link #environment} gives the functions' environment variables
 * that point at them, exactly as {@code template.yaml} would in AWS.
 */
public final class LocalStack {
    private final EmbeddedS3Server server;
    private final String bucket;
    private final Path catalogFile;

    public LocalStack(EmbeddedS3Server server, String bucket, Path workDir) {
        this.server = server;
        this.bucket = bucket;
        this.catalogFile = workDir.resolve("catalog.db");
    }

    public EmbeddedS3Server server() {
        return server;
    }

    public String bucket() {
        return bucket;
    }

    /** Environment variables for the stager, merger and maintenance functions. */
    public Map<String, String> environment(String tableName) {
        Map<String, String> env = new LinkedHashMap<>();
        env.put("AWS_REGION", EmbeddedS3Server.REGION);
        env.put("AWS_ACCESS_KEY_ID", EmbeddedS3Server.ACCESS_KEY);
        env.put("AWS_SECRET_ACCESS_KEY", EmbeddedS3Server.SECRET_KEY);
        env.put("S3_ENDPOINT", server.endpoint().toString());
        env.put("STAGING_BUCKET", bucket);
        env.put("STAGING_PREFIX", "staging/");
        env.put("QUARANTINE_PREFIX", "quarantine/");
        env.put("CATALOG_TYPE", "jdbc");
        // SQLite allows one writer at a time; a busy timeout makes a second writer wait instead of failing.
        env.put("CATALOG_URI", "jdbc:sqlite:" + catalogFile.toAbsolutePath());
        env.put("CATALOG_WAREHOUSE", "s3://" + bucket + "/warehouse");
        env.put(
                "CATALOG_PROPERTIES",
                "jdbc.busy_timeout=30000,s3.access-key-id=" + EmbeddedS3Server.ACCESS_KEY + ",s3.secret-access-key="
                        + EmbeddedS3Server.SECRET_KEY);
        env.put("TABLE_NAMESPACE", "ddb2iceberg");
        env.put("TABLE_NAME", tableName);
        return env;
    }

    /**
     * Spark SQL settings that read this stack's tables with Iceberg's Spark runtime, as {@code up}
     * prints them and docs/getting-started/local.md shows them: a Spark catalog named like the JDBC catalog (a JDBC
     * catalog files its tables under its own name), on the same database, warehouse and S3 server.
     */
    public Map<String, String> sparkSettings() {
        Map<String, String> env = environment("unused");
        String c = "spark.sql.catalog." + CatalogSettings.DEFAULT_NAME;
        Map<String, String> conf = new LinkedHashMap<>();
        conf.put(c, "org.apache.iceberg.spark.SparkCatalog");
        conf.put(c + ".type", "jdbc");
        conf.put(c + ".uri", env.get("CATALOG_URI"));
        conf.put(c + ".jdbc.schema-version", "V1");
        conf.put(c + ".warehouse", env.get("CATALOG_WAREHOUSE"));
        conf.put(c + ".io-impl", "org.apache.iceberg.aws.s3.S3FileIO");
        conf.put(c + ".s3.endpoint", server.endpoint().toString());
        conf.put(c + ".s3.path-style-access", "true");
        conf.put(c + ".s3.access-key-id", EmbeddedS3Server.ACCESS_KEY);
        conf.put(c + ".s3.secret-access-key", EmbeddedS3Server.SECRET_KEY);
        conf.put(c + ".client.region", EmbeddedS3Server.REGION);
        return conf;
    }

    /** The account id the Glue stand-in answers for, as GLUE_CATALOG_ID. */
    public static final String GLUE_CATALOG_ID = "123456789012";

    /**
     * A stand-in for AWS Glue's Iceberg REST endpoint (Glue cannot run here): a REST catalog under
     * {@code /iceberg} for catalog id {@link #GLUE_CATALOG_ID}, keeping its tables in this stack's
     * JDBC catalog. Close it after use.
     */
    public RestCatalogServer startGlueStandIn() {
        return new RestCatalogServer(jdbcCatalog(), "/iceberg", GLUE_CATALOG_ID);
    }

    /** This stack's JDBC catalog, which the REST stand-ins keep their tables in. */
    private Catalog jdbcCatalog() {
        Environment jdbc = new Environment(environment("unused"));
        return CatalogSettings.from(jdbc, StagingSettings.from(jdbc), S3Settings.from(jdbc))
                .load();
    }

    /**
     * Environment variables for the functions with the template's default catalog, {@code glue},
     * pointed at a stand-in from {@link #startGlueStandIn}; requests are SigV4-signed with the
     * stack's credentials, as in AWS with the function role's.
     */
    public Map<String, String> glueEnvironment(String tableName, RestCatalogServer glue) {
        Map<String, String> env = restEnvironment(tableName, glue);
        env.put("CATALOG_TYPE", "glue");
        env.put("GLUE_CATALOG_ID", GLUE_CATALOG_ID);
        return env;
    }

    /** A REST stand-in's endpoint, with the stack's credentials for signing requests and for S3. */
    private Map<String, String> restEnvironment(String tableName, RestCatalogServer server) {
        Map<String, String> env = environment(tableName);
        env.put("CATALOG_URI", server.uri().toString());
        env.remove("CATALOG_WAREHOUSE");
        env.put(
                "CATALOG_PROPERTIES",
                "s3.access-key-id=" + EmbeddedS3Server.ACCESS_KEY
                        + ",s3.secret-access-key=" + EmbeddedS3Server.SECRET_KEY
                        + ",rest.access-key-id=" + EmbeddedS3Server.ACCESS_KEY
                        + ",rest.secret-access-key=" + EmbeddedS3Server.SECRET_KEY);
        return env;
    }

    /** The table bucket the S3 Tables stand-in serves, as TABLE_BUCKET_ARN. */
    public static final String TABLE_BUCKET_ARN =
            "arn:aws:s3tables:" + EmbeddedS3Server.REGION + ":" + GLUE_CATALOG_ID + ":bucket/orders-lake";

    /**
     * A stand-in for Amazon S3 Tables' Iceberg REST endpoint (it cannot run here): a REST catalog
     * under {@code /iceberg} that, like S3 Tables, answers only the table bucket's ARN as warehouse
     * and puts the URL-encoded ARN in every path; it keeps its tables in this stack's JDBC catalog.
     */
    public RestCatalogServer startS3TablesStandIn() {
        return new RestCatalogServer(
                jdbcCatalog(),
                "/iceberg",
                TABLE_BUCKET_ARN,
                URLEncoder.encode(TABLE_BUCKET_ARN, StandardCharsets.UTF_8));
    }

    /** Environment variables for the functions with {@code CATALOG_TYPE=s3tables}, pointed at the stand-in. */
    public Map<String, String> s3TablesEnvironment(String tableName, RestCatalogServer s3Tables) {
        Map<String, String> env = restEnvironment(tableName, s3Tables);
        env.put("CATALOG_TYPE", "s3tables");
        env.put("TABLE_BUCKET_ARN", TABLE_BUCKET_ARN);
        return env;
    }
}
