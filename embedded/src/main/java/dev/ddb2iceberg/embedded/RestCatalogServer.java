package dev.ddb2iceberg.embedded;

import com.fasterxml.jackson.annotation.JsonAutoDetect;
import com.fasterxml.jackson.annotation.PropertyAccessor;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.SupportsNamespaces;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.AlreadyExistsException;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.NoSuchNamespaceException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.exceptions.ValidationException;
import org.apache.iceberg.rest.CatalogHandlers;
import org.apache.iceberg.rest.RESTCatalogProperties;
import org.apache.iceberg.rest.RESTSerializers;
import org.apache.iceberg.rest.RESTUtil;
import org.apache.iceberg.rest.requests.CreateNamespaceRequest;
import org.apache.iceberg.rest.requests.CreateTableRequest;
import org.apache.iceberg.rest.requests.UpdateTableRequest;
import org.apache.iceberg.rest.responses.ConfigResponse;
import org.apache.iceberg.rest.responses.ErrorResponse;
import org.apache.iceberg.rest.responses.ErrorResponseParser;

/**
 * An Iceberg REST catalog on 127.0.0.1, for tests of the {@code glue} and {@code rest} catalog
 * settings: AWS Glue's Iceberg REST endpoint cannot run here, so this server stands in for it.
 * It serves the REST protocol's table and namespace routes under a base path (Glue's is
 * {@code /iceberg}), backed by any catalog (tests use a JDBC catalog on SQLite), using Iceberg's own
 * {@link CatalogHandlers}, so commits are checked against their requirements as a real server does.
 * Namespaces are one level, like Glue databases and S3 Tables namespaces. Its config answers only
 * the client's {@code warehouse} and names the path prefix, as Glue ({@code catalogs/<id>}) and S3
 * Tables (the encoded table bucket ARN) do. It records each request's {@code Authorization} header so a
 * test can check that requests were SigV4-signed for the right service and region.
 */
public final class RestCatalogServer implements AutoCloseable {
    // Paths as sent (raw): the prefix may hold encoded characters, such as S3 Tables' encoded ARN.
    private static final Pattern TABLE = Pattern.compile("/v1/(.+)/namespaces/([^/]+)/tables/([^/]+)");
    private static final Pattern TABLES = Pattern.compile("/v1/(.+)/namespaces/([^/]+)/tables");
    private static final Pattern NAMESPACE = Pattern.compile("/v1/(.+)/namespaces/([^/]+)");
    private static final Pattern NAMESPACES = Pattern.compile("/v1/(.+)/namespaces");

    private final Catalog backing;
    private final String basePath;
    private final String warehouse;
    private final String prefix;
    private final HttpServer http;
    private final ExecutorService executor = Executors.newFixedThreadPool(4);
    private final ObjectMapper mapper = mapper();
    private final List<String> authorizations = new CopyOnWriteArrayList<>();

    /**
     * @param backing the catalog that holds the tables (must also support namespaces)
     * @param basePath the path before {@code /v1}, e.g. {@code /iceberg}
     * @param warehouse the only warehouse (catalog id) the server answers for
     */
    public RestCatalogServer(Catalog backing, String basePath, String warehouse) {
        this(backing, basePath, warehouse, "catalogs/" + warehouse);
    }

    /**
     * @param prefix the path prefix the config tells clients to use: Glue's is {@code catalogs/<id>},
     *     S3 Tables' the URL-encoded table bucket ARN
     */
    public RestCatalogServer(Catalog backing, String basePath, String warehouse, String prefix) {
        this.backing = backing;
        this.basePath = basePath;
        this.warehouse = warehouse;
        this.prefix = prefix;
        try {
            this.http = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        } catch (IOException e) {
            throw new IllegalStateException("Cannot open a port on 127.0.0.1 for the REST catalog", e);
        }
        http.createContext(basePath + "/", this::handle);
        http.setExecutor(executor);
        http.start();
    }

    /** The catalog URI a client is given, e.g. {@code http://127.0.0.1:40123/iceberg}. */
    public URI uri() {
        return URI.create("http://127.0.0.1:" + http.getAddress().getPort() + basePath);
    }

    /** The {@code Authorization} header of every request so far, in order ("" when absent). */
    public List<String> authorizations() {
        return List.copyOf(authorizations);
    }

    /**
     * The {@code Authorization} headers so far that are not an AWS SigV4 signature for this service
     * and region with this access key (empty when every request was signed so); a test asserts it
     * is empty after checking that requests were made at all.
     */
    public List<String> requestsNotSignedFor(String service, String region, String accessKey) {
        Pattern signed = Pattern.compile("AWS4-HMAC-SHA256 Credential=" + Pattern.quote(accessKey) + "/\\d{8}/"
                + Pattern.quote(region) + "/" + Pattern.quote(service)
                + "/aws4_request, SignedHeaders=[a-z0-9;-]+, Signature=[0-9a-f]{64}");
        return authorizations.stream().filter(a -> !signed.matcher(a).matches()).toList();
    }

    private void handle(HttpExchange exchange) throws IOException {
        try (exchange) {
            authorizations.add(
                    Objects.requireNonNullElse(exchange.getRequestHeaders().getFirst("Authorization"), ""));
            String path = exchange.getRequestURI().getRawPath().substring(basePath.length());
            String method = exchange.getRequestMethod();
            try {
                Object response = route(method, path, exchange);
                if (response == null) {
                    exchange.sendResponseHeaders(204, -1);
                } else {
                    send(exchange, 200, mapper.writeValueAsBytes(response));
                }
            } catch (RuntimeException e) {
                exchange.getRequestBody().readAllBytes(); // an unread body would reset the client's connection
                sendError(exchange, e);
            }
        }
    }

    private Object route(String method, String path, HttpExchange exchange) throws IOException {
        if (path.equals("/v1/config") && method.equals("GET")) {
            String requested = RESTUtil.decodeFormData(
                            String.valueOf(exchange.getRequestURI().getRawQuery()))
                    .getOrDefault("warehouse", "");
            if (!requested.equals(warehouse)) {
                throw new NotFoundException(
                        "No catalog for warehouse '%s' (this server serves '%s')", requested, warehouse);
            }
            return ConfigResponse.builder().withOverride("prefix", prefix).build();
        }
        Matcher m;
        if ((m = TABLE.matcher(path)).matches()) {
            checkCatalog(m.group(1));
            TableIdentifier id = TableIdentifier.of(
                    Namespace.of(RESTUtil.decodeString(m.group(2))), RESTUtil.decodeString(m.group(3)));
            return switch (method) {
                case "GET" -> CatalogHandlers.loadTable(backing, id, RESTCatalogProperties.SnapshotMode.ALL);
                case "HEAD" -> {
                    CatalogHandlers.tableExists(backing, id);
                    yield null;
                }
                case "POST" -> CatalogHandlers.updateTable(backing, id, read(exchange, UpdateTableRequest.class));
                case "DELETE" -> {
                    CatalogHandlers.dropTable(backing, id);
                    yield null;
                }
                default -> throw new UnsupportedOperationException(method + " " + path);
            };
        }
        if ((m = TABLES.matcher(path)).matches() && method.equals("POST")) {
            checkCatalog(m.group(1));
            return CatalogHandlers.createTable(
                    backing, Namespace.of(RESTUtil.decodeString(m.group(2))), read(exchange, CreateTableRequest.class));
        }
        if ((m = TABLES.matcher(path)).matches() && method.equals("GET")) {
            checkCatalog(m.group(1));
            return CatalogHandlers.listTables(backing, Namespace.of(RESTUtil.decodeString(m.group(2))));
        }
        if ((m = NAMESPACE.matcher(path)).matches()) {
            checkCatalog(m.group(1));
            Namespace namespace = Namespace.of(RESTUtil.decodeString(m.group(2)));
            return switch (method) {
                case "GET" -> CatalogHandlers.loadNamespace(namespaces(), namespace);
                case "HEAD" -> {
                    CatalogHandlers.namespaceExists(namespaces(), namespace);
                    yield null;
                }
                default -> throw new UnsupportedOperationException(method + " " + path);
            };
        }
        if ((m = NAMESPACES.matcher(path)).matches() && method.equals("POST")) {
            checkCatalog(m.group(1));
            return CatalogHandlers.createNamespace(namespaces(), read(exchange, CreateNamespaceRequest.class));
        }
        throw new UnsupportedOperationException("The test REST catalog has no route for " + method + " " + path);
    }

    private void checkCatalog(String requestedPrefix) {
        if (!requestedPrefix.equals(prefix)) {
            throw new NotFoundException("No catalog at prefix '%s' (this server's is '%s')", requestedPrefix, prefix);
        }
    }

    private SupportsNamespaces namespaces() {
        return (SupportsNamespaces) backing;
    }

    private <T> T read(HttpExchange exchange, Class<T> type) throws IOException {
        try (InputStream in = exchange.getRequestBody()) {
            return mapper.readValue(in, type);
        }
    }

    /** Errors as the REST protocol's error response, with the codes Iceberg's client maps back to exceptions. */
    private static void sendError(HttpExchange exchange, RuntimeException e) throws IOException {
        int code = 500;
        if (e instanceof NoSuchTableException
                || e instanceof NoSuchNamespaceException
                || e instanceof NotFoundException) {
            code = 404;
        } else if (e instanceof AlreadyExistsException || e instanceof CommitFailedException) {
            code = 409;
        } else if (e instanceof ValidationException || e instanceof IllegalArgumentException) {
            code = 400;
        } else if (e instanceof UnsupportedOperationException) {
            code = 406;
        }
        ErrorResponse error = ErrorResponse.builder()
                .responseCode(code)
                .withType(e.getClass().getSimpleName())
                .withMessage(String.valueOf(e.getMessage()))
                .build();
        send(exchange, code, ErrorResponseParser.toJson(error).getBytes(StandardCharsets.UTF_8));
    }

    private static void send(HttpExchange exchange, int code, byte[] body) throws IOException {
        exchange.getResponseHeaders().set("Content-Type", "application/json");
        if (exchange.getRequestMethod().equals("HEAD")) {
            exchange.sendResponseHeaders(code, -1);
            return;
        }
        exchange.sendResponseHeaders(code, body.length);
        exchange.getResponseBody().write(body);
    }

    /** The REST protocol's JSON: kebab-case fields and Iceberg's serializers for its model types. */
    private static ObjectMapper mapper() {
        ObjectMapper mapper = new ObjectMapper();
        mapper.setVisibility(PropertyAccessor.FIELD, JsonAutoDetect.Visibility.ANY);
        mapper.configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);
        mapper.setPropertyNamingStrategy(new PropertyNamingStrategies.KebabCaseStrategy());
        RESTSerializers.registerAll(mapper);
        return mapper;
    }

    @Override
    public void close() {
        http.stop(0);
        executor.shutdownNow();
        if (backing instanceof AutoCloseable closeable) {
            try {
                closeable.close();
            } catch (Exception e) {
                throw new IllegalStateException("Cannot close the REST catalog's backing catalog", e);
            }
        }
    }
}
