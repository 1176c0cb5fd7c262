package dev.ddb2iceberg.embedded;

import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * JUnit 5 extension: one embedded S3 server for the whole test run (started on first use, stopped
 * when the run ends), injected as an {@link EmbeddedS3Server} parameter. Faults are cleared after
 * every test; tests keep apart by using their own bucket ({@link #newBucket}).
 */
public final class S3ServerExtension implements ParameterResolver, AfterEachCallback {
    private static final AtomicInteger BUCKETS = new AtomicInteger();

    @Override
    public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
        return parameter.getParameter().getType() == EmbeddedS3Server.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
        return server(context);
    }

    @Override
    public void afterEach(ExtensionContext context) {
        server(context).faults().clear();
    }

    private static EmbeddedS3Server server(ExtensionContext context) {
        return context.getRoot()
                .getStore(ExtensionContext.Namespace.GLOBAL)
                .getOrComputeIfAbsent(
                        ServerResource.class,
                        k -> new ServerResource(EmbeddedS3Server.inMemory()),
                        ServerResource.class)
                .server;
    }

    /** A fresh bucket with a unique name, created on the server. */
    public static String newBucket(EmbeddedS3Server server) {
        String bucket = "test-" + BUCKETS.incrementAndGet() + "-"
                + ProcessHandle.current().pid();
        server.createBucket(bucket);
        return bucket;
    }

    private record ServerResource(EmbeddedS3Server server)
            implements ExtensionContext.Store.CloseableResource, AutoCloseable {
        @Override
        public void close() {
            server.close();
        }
    }
}
