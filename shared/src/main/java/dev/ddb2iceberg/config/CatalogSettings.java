package dev.ddb2iceberg.config;

import dev.ddb2iceberg.storage.BufferedS3FileIO;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.catalog.Catalog;

/**
 * The Iceberg catalog, described by Iceberg's own catalog properties. Storage is always Iceberg's
 * S3FileIO with the URL-connection client, as {@link BufferedS3FileIO}: small files are uploaded from
 * memory instead of a local staging file.
 *
 * <ul>
 *   <li>{@code glue} (the default): the AWS Glue Data Catalog through Glue's Iceberg REST endpoint,
 *       {@code https://glue.<region>.amazonaws.com/iceberg}, with SigV4-signed requests. Glue checks
 *       each commit against the table's current metadata, as the Glue SDK catalog does, and the
 *       functions need no Glue SDK (10 MB less in each package).
 *   <li>{@code s3tables}: an Amazon S3 table bucket ({@code TABLE_BUCKET_ARN}) through S3 Tables'
 *       Iceberg REST endpoint, SigV4-signed for {@code s3tables}; S3 Tables maintains the table.
 *   <li>{@code rest}: any other Iceberg REST catalog (Polaris, ...), CATALOG_URI required.
 *   <li>{@code jdbc}: PostgreSQL, or SQLite for local runs, CATALOG_URI required.
 * </ul>
 *
 * <p>{@code CATALOG_NAME} (default {@code ddb2iceberg}) is the catalog's name. A JDBC catalog files
 * every table under its name, so it must equal the name another engine gives the same database
 * (Spark's {@code spark.sql.catalog.<name>}); for REST catalogs it only labels log lines.
 *
 * @param name the catalog's name
 * @param type {@code CATALOG_TYPE}: glue, s3tables, rest or jdbc
 * @param properties Iceberg catalog properties
 */
public record CatalogSettings(String name, String type, Map<String, String> properties) {
    public static final String DEFAULT_NAME = Settings.CATALOG_NAME.defaultValue();

    public static CatalogSettings from(Environment env, StagingSettings staging, S3Settings s3) {
        Map<String, String> props = new LinkedHashMap<>();
        String type = env.choice(Settings.CATALOG_TYPE);
        switch (type) {
            case "glue" -> {
                props.put(CatalogUtil.ICEBERG_CATALOG_TYPE, CatalogUtil.ICEBERG_CATALOG_TYPE_REST);
                props.put(
                        CatalogProperties.URI,
                        env.string(Settings.CATALOG_URI, "https://glue." + s3.region() + ".amazonaws.com/iceberg"));
                // Glue's REST endpoint names the catalog by the account that owns it.
                props.put(CatalogProperties.WAREHOUSE_LOCATION, env.required(Settings.GLUE_CATALOG_ID));
                props.put("rest.auth.type", "sigv4");
                props.put("rest.signing-name", "glue");
                props.put("rest.signing-region", s3.region());
                // Scan and commit reports would cost a signed round trip each; the functions log their own.
                props.put("rest-metrics-reporting-enabled", "false");
            }
            case "s3tables" -> {
                // https://docs.aws.amazon.com/AmazonS3/latest/userguide/s3-tables-integrating-open-source.html:
                // the endpoint is https://s3tables.<region>.amazonaws.com/iceberg, the warehouse is the table
                // bucket's ARN, and requests are SigV4-signed for the service name "s3tables".
                TableBucketArn bucket = TableBucketArn.parse(env.required(Settings.TABLE_BUCKET_ARN));
                props.put(CatalogUtil.ICEBERG_CATALOG_TYPE, CatalogUtil.ICEBERG_CATALOG_TYPE_REST);
                props.put(
                        CatalogProperties.URI,
                        env.string(
                                Settings.CATALOG_URI,
                                "https://s3tables." + bucket.region() + ".amazonaws.com/iceberg"));
                props.put(CatalogProperties.WAREHOUSE_LOCATION, bucket.arn());
                props.put("rest.auth.type", "sigv4");
                props.put("rest.signing-name", "s3tables");
                props.put("rest.signing-region", bucket.region());
                props.put("rest-metrics-reporting-enabled", "false");
            }
            case "rest" -> {
                props.put(CatalogUtil.ICEBERG_CATALOG_TYPE, CatalogUtil.ICEBERG_CATALOG_TYPE_REST);
                props.put(CatalogProperties.URI, env.required(Settings.CATALOG_URI, "the REST catalog's endpoint"));
                String warehouse = env.string(Settings.CATALOG_WAREHOUSE, "");
                if (!warehouse.isEmpty()) {
                    props.put(CatalogProperties.WAREHOUSE_LOCATION, warehouse);
                }
            }
            case "jdbc" -> {
                props.put(CatalogUtil.ICEBERG_CATALOG_TYPE, CatalogUtil.ICEBERG_CATALOG_TYPE_JDBC);
                props.put(
                        CatalogProperties.URI,
                        env.required(
                                Settings.CATALOG_URI,
                                "the catalog database, e.g. jdbc:postgresql://host/db or jdbc:sqlite:/path/catalog.db"));
                props.put(
                        CatalogProperties.WAREHOUSE_LOCATION,
                        env.string(Settings.CATALOG_WAREHOUSE, "s3://" + staging.bucket() + "/warehouse"));
                props.put("jdbc.schema-version", "V1");
            }
            default -> throw new IllegalStateException(type); // Environment.choice allows only the four
        }
        props.put(CatalogProperties.FILE_IO_IMPL, BufferedS3FileIO.class.getName());
        props.put("http-client.type", "urlconnection");
        props.put("client.region", s3.region());
        if (s3.endpoint() != null) {
            props.put("s3.endpoint", s3.endpoint().toString());
            props.put("s3.path-style-access", Boolean.toString(s3.pathStyle()));
            props.put("s3.chunked-encoding-enabled", "false"); // plain uploads, as S3Settings explains
        }
        String extra = env.string(Settings.CATALOG_PROPERTIES);
        if (!extra.isEmpty()) {
            for (String pair : extra.split(",")) {
                int eq = pair.indexOf('=');
                if (eq <= 0) {
                    throw Environment.invalid(
                            Settings.CATALOG_PROPERTIES,
                            extra,
                            "key=value pairs: it has '" + pair
                                    + "', which is not key=value (write e.g. 's3.sse.type=kms,s3.sse.key=arn:aws:kms:...')");
                }
                props.put(pair.substring(0, eq).trim(), pair.substring(eq + 1).trim());
            }
        }
        return new CatalogSettings(env.string(Settings.CATALOG_NAME), type, Map.copyOf(props));
    }

    /** True for the Glue Data Catalog, which keeps a table version for each commit. */
    public boolean isGlue() {
        return type.equals("glue");
    }

    /** The account that owns the Glue Data Catalog (GLUE_CATALOG_ID, which Glue's REST endpoint takes as the warehouse). */
    public String glueCatalogId() {
        return properties.get(CatalogProperties.WAREHOUSE_LOCATION);
    }

    /** True for an S3 table bucket, whose storage only S3 Tables' own maintenance may list or delete from. */
    public boolean isS3Tables() {
        return type.equals("s3tables");
    }

    public Catalog load() {
        return CatalogUtil.buildIcebergCatalog(name, properties, null);
    }
}
