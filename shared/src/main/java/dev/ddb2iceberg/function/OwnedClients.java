package dev.ddb2iceberg.function;

import java.util.ArrayDeque;
import java.util.Deque;

/**
 * The clients a handler built itself (a catalog, an S3 client), closed when the handler is; those a
 * caller handed in stay the caller's. In Lambda a handler lives as long as its container, so this
 * matters where one process makes many handlers: the local runtime and the tests, where a catalog
 * left open is reported later ("Unclosed S3FileIO instance") on whatever stream is current then.
 */
public final class OwnedClients implements AutoCloseable {
    private final Deque<AutoCloseable> clients = new ArrayDeque<>();

    /** Takes {@code client} into this set if it can be closed; returns it. */
    public synchronized <T> T own(T client) {
        if (client instanceof AutoCloseable closeable) {
            clients.push(closeable);
        }
        return client;
    }

    /** Closes every client taken, the last taken first; the first failure is thrown, the others suppressed. */
    @Override
    public synchronized void close() throws Exception {
        Exception failure = null;
        while (!clients.isEmpty()) {
            try {
                clients.pop().close();
            } catch (Exception e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }
}
