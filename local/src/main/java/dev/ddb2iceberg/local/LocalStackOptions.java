package dev.ddb2iceberg.local;

import dev.ddb2iceberg.config.CatalogSettings;
import dev.ddb2iceberg.config.S3Settings;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Path;
import java.util.function.Supplier;
import org.apache.iceberg.jdbc.UncheckedSQLException;
import picocli.CommandLine.Option;
import software.amazon.awssdk.core.exception.SdkClientException;

/** The options of commands that act on a deployed-like stack: its settings file and the template. */
final class LocalStackOptions {
    @Option(
            names = {"-n", "--env-vars"},
            defaultValue = "events/env-local.json",
            paramLabel = "FILE",
            description = "JSON environment overrides, in sam's shape (default: ${DEFAULT-VALUE}, the local stack)")
    Path envVars;

    @Option(
            names = {"-t", "--template"},
            defaultValue = "template.yaml",
            paramLabel = "FILE",
            description = "the SAM template (default: ${DEFAULT-VALUE})")
    Path template;

    /**
     * Runs {@code work} against the stack's catalog and S3; a catalog that cannot be opened or an S3
     * endpoint that does not answer (most often: the local stack is not running) is a one-line error.
     */
    static <T> T reach(CatalogSettings catalog, S3Settings s3, Supplier<T> work) {
        probe(s3);
        try {
            return work.get();
        } catch (UncheckedSQLException noCatalog) {
            throw new UserError(
                    "cannot open the catalog " + catalog.properties().get("uri") + " (" + noCatalog.getMessage()
                            + "); for the local stack, start it first with ./ddb2iceberg up");
        } catch (SdkClientException unreachable) {
            throw unreachable(s3, unreachable.getMessage());
        }
    }

    /**
     * Fails fast when a local S3 endpoint does not even accept a connection: otherwise Iceberg retries
     * reading table metadata for about two minutes, logging each attempt, before the same error.
     */
    private static void probe(S3Settings s3) {
        URI endpoint = s3.endpoint();
        if (endpoint == null) {
            return; // AWS itself
        }
        int port = endpoint.getPort() != -1 ? endpoint.getPort() : "https".equals(endpoint.getScheme()) ? 443 : 80;
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(endpoint.getHost(), port), 2_000);
        } catch (IOException e) {
            throw unreachable(s3, e.getMessage());
        }
    }

    private static UserError unreachable(S3Settings s3, String why) {
        return new UserError("cannot reach S3" + (s3.endpoint() == null ? "" : " at " + s3.endpoint()) + " (" + why
                + "); for the local stack, start it first with ./ddb2iceberg up");
    }
}
