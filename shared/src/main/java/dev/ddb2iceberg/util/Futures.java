package dev.ddb2iceberg.util;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

/** Waiting for work handed to a thread pool, with the task's own exception rethrown as is. */
public final class Futures {
    private Futures() {}

    /** The result of {@code f}; a runtime exception the task threw is rethrown unchanged. */
    public static <T> T join(Future<T> f, String what) {
        try {
            return f.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while " + what, e);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw new IllegalStateException(what + " failed: " + e.getCause(), e.getCause());
        }
    }
}
