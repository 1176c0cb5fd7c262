package dev.ddb2iceberg.config;

import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.catalog.Catalog;

/**
 * The Iceberg catalog, described by Iceberg's own catalog properties: {@code glue} in AWS (the
 * default), {@code rest} (S3 Tables, Glue's Iceberg REST endpoint) or {@code jdbc} (PostgreSQL, or
 * SQLite for local runs). Storage is always Iceberg's S3FileIO with the URL-connection client.
 */
public record CatalogSettings(Map<String, String> properties) {

  public static CatalogSettings from(Environment env, StagingSettings staging, S3Settings s3) {
    Map<String, String> props = new LinkedHashMap<>();
    String type = env.optional("CATALOG_TYPE", "glue").toLowerCase();
    if (!type.equals("glue") && !type.equals("rest") && !type.equals("jdbc")) {
      throw new ConfigurationException("Environment variable CATALOG_TYPE='" + type + "' is not glue, rest or jdbc.");
    }
    props.put(CatalogUtil.ICEBERG_CATALOG_TYPE, type);
    props.put(CatalogProperties.WAREHOUSE_LOCATION,
        env.optional("CATALOG_WAREHOUSE", "s3://" + staging.bucket() + "/warehouse"));
    String uri = env.optional("CATALOG_URI", "");
    if (!uri.isEmpty()) {
      props.put(CatalogProperties.URI, uri);
    } else if (!type.equals("glue")) {
      throw new ConfigurationException("Environment variable CATALOG_URI is not set: a " + type
          + " catalog needs it (" + (type.equals("jdbc") ? "jdbc:postgresql://host/db or jdbc:sqlite:/path/catalog.db"
              : "the REST endpoint") + ").");
    }
    props.put(CatalogProperties.FILE_IO_IMPL, "org.apache.iceberg.aws.s3.S3FileIO");
    props.put("http-client.type", "urlconnection");
    props.put("client.region", s3.region());
    if (type.equals("jdbc")) {
      props.put("jdbc.schema-version", "V1");
    }
    if (s3.endpoint() != null) {
      props.put("s3.endpoint", s3.endpoint().toString());
      props.put("s3.path-style-access", Boolean.toString(s3.pathStyle()));
    }
    String extra = env.optional("CATALOG_PROPERTIES", "");
    if (!extra.isEmpty()) {
      for (String pair : extra.split(",")) {
        int eq = pair.indexOf('=');
        if (eq <= 0) {
          throw new ConfigurationException("Environment variable CATALOG_PROPERTIES has '" + pair
              + "', which is not key=value (write e.g. 'glue.skip-archive=true,s3.sse.type=kms').");
        }
        props.put(pair.substring(0, eq).trim(), pair.substring(eq + 1).trim());
      }
    }
    return new CatalogSettings(Map.copyOf(props));
  }

  public Catalog load() {
    return CatalogUtil.buildIcebergCatalog("ddb2iceberg", properties, null);
  }
}
