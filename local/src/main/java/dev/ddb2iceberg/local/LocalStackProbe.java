package dev.ddb2iceberg.local;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Whether the S3 endpoint an environment names answers, checked before a command or a function
 * uses it, and when it is the local stack's, the {@code up} command that starts it. Without the
 * check a stager run reports every record failed and a merger run ends in the SDK's stack trace.
 */
final class LocalStackProbe {
    private LocalStackProbe() {}

    /**
     * Fails with a one-line UserError when {@code S3_ENDPOINT} is set and nothing accepts a
     * connection there; {@code source} says where the settings came from (an env-vars file).
     */
    static void requireRunning(Map<String, String> env, Object source) {
        String endpoint = env.get("S3_ENDPOINT");
        if (endpoint == null || endpoint.isBlank()) {
            return; // AWS's own endpoints
        }
        URI uri = URI.create(endpoint.trim());
        String why = refusal(uri);
        if (why != null) {
            throw new UserError(notRunning(env, uri, why, source));
        }
    }

    /** Why nothing answers at {@code uri} (the connection's error), or null when something does. */
    static String refusal(URI uri) {
        if (uri.getHost() == null) {
            return "it names no host";
        }
        int port = uri.getPort() != -1 ? uri.getPort() : "https".equals(uri.getScheme()) ? 443 : 80;
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(uri.getHost(), port), 2_000);
            return null;
        } catch (IOException e) {
            return e.getMessage();
        }
    }

    static String notRunning(Map<String, String> env, URI endpoint, String why, Object source) {
        String where = "nothing answers at " + endpoint + " (" + why + "), the S3_ENDPOINT"
                + (source == null ? "" : " of " + source);
        if (!isLoopback(endpoint)) {
            return where + ": is that S3 server running?";
        }
        return where + ": the local stack is not running. Start it first, in another terminal: " + upCommand(env);
    }

    /** The {@code up} command that serves these settings: the options that differ from up's defaults. */
    static String upCommand(Map<String, String> env) {
        List<String> command = new ArrayList<>(List.of("./ddb2iceberg", "up"));
        String workDir = workDir(env.get("CATALOG_URI"));
        if (workDir != null && !workDir.equals(UpCommand.DEFAULT_WORK_DIR)) {
            command.addAll(List.of("--work-dir", workDir));
        }
        URI endpoint = URI.create(env.get("S3_ENDPOINT").trim());
        if (endpoint.getPort() != -1 && endpoint.getPort() != UpCommand.DEFAULT_PORT) {
            command.addAll(List.of("--port", Integer.toString(endpoint.getPort())));
        }
        option(command, "--bucket", env.get("STAGING_BUCKET"), UpCommand.DEFAULT_BUCKET);
        option(command, "--table", env.get("TABLE_NAME"), UpCommand.DEFAULT_TABLE);
        return String.join(" ", command);
    }

    private static void option(List<String> command, String option, String value, String byDefault) {
        if (value != null && !value.isBlank() && !value.equals(byDefault)) {
            command.addAll(List.of(option, value));
        }
    }

    /** The folder of a local catalog, jdbc:sqlite:DIR/catalog.db (as up writes it), relative to here when inside. */
    private static String workDir(String catalogUri) {
        String prefix = "jdbc:sqlite:";
        if (catalogUri == null || !catalogUri.startsWith(prefix) || !catalogUri.endsWith("/catalog.db")) {
            return null;
        }
        Path dir = Path.of(catalogUri.substring(prefix.length())).getParent();
        Path here = Path.of("").toAbsolutePath();
        return dir.isAbsolute() && dir.startsWith(here) ? here.relativize(dir).toString() : dir.toString();
    }

    private static boolean isLoopback(URI endpoint) {
        String host = endpoint.getHost();
        return host.equals("localhost") || host.startsWith("127.") || host.equals("[::1]");
    }
}
