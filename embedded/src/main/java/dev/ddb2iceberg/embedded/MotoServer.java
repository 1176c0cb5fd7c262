package dev.ddb2iceberg.embedded;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * moto_server (moto 5.2.1) on 127.0.0.1, on a port the system picks, in its own process. Its log
 * is kept: moto says there which resource types its CloudFormation does not know.
 */
public final class MotoServer implements AutoCloseable {
    private static final Pattern LISTENING = Pattern.compile("Running on http://127\\.0\\.0\\.1:(\\d+)");
    private static final Pattern UNSUPPORTED = Pattern.compile("No Moto CloudFormation support for (\\S+)");

    private final Process process;
    private final List<String> log = new ArrayList<>();
    private final String endpoint;

    public MotoServer() {
        AwsTools.ensureInstalled();
        try {
            process = new ProcessBuilder("python3", "-m", "moto.server", "-H", "127.0.0.1", "-p", "0")
                    .redirectErrorStream(true)
                    .start();
        } catch (IOException e) {
            throw new UncheckedIOException("python3 -m moto.server", e);
        }
        CompletableFuture<Integer> port = new CompletableFuture<>();
        Thread reader = new Thread(() -> read(port), "moto_server log");
        reader.setDaemon(true);
        reader.start();
        try {
            // Port 0: the server binds a free port and prints it, so no other process can take it first.
            endpoint = "http://127.0.0.1:" + port.get(60, TimeUnit.SECONDS);
        } catch (Exception e) {
            process.destroyForcibly();
            throw new IllegalStateException("moto_server did not say where it listens within 60 s:\n" + log(), e);
        }
    }

    private void read(CompletableFuture<Integer> port) {
        try (BufferedReader in =
                new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = in.readLine()) != null; ) {
                synchronized (log) {
                    log.add(line);
                }
                Matcher m = LISTENING.matcher(line);
                if (m.find()) {
                    port.complete(Integer.parseInt(m.group(1)));
                }
            }
            port.completeExceptionally(new IllegalStateException("moto_server exited"));
        } catch (IOException e) {
            port.completeExceptionally(e);
        }
    }

    public String endpoint() {
        return endpoint;
    }

    /** The resource types moto's CloudFormation said it skipped ("No Moto CloudFormation support for …"). */
    public Set<String> unsupportedTypes() {
        Set<String> types = new TreeSet<>();
        synchronized (log) {
            for (String line : log) {
                Matcher m = UNSUPPORTED.matcher(line);
                if (m.find()) {
                    types.add(m.group(1));
                }
            }
        }
        return types;
    }

    public String log() {
        synchronized (log) {
            return String.join("\n", log.subList(Math.max(0, log.size() - 40), log.size()));
        }
    }

    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
        }
        if (process.isAlive()) {
            fail("moto_server did not stop");
        }
    }
}
