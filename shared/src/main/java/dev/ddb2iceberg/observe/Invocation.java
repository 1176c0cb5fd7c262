package dev.ddb2iceberg.observe;

import com.amazonaws.services.lambda.runtime.Context;
import org.slf4j.MDC;

/**
 * What every log line of one Lambda invocation carries: the function's name and the request id,
 * put in the MDC for the invocation and removed after it ({@code try (var log = Invocation.of(…))}).
 * Lambda runs one invocation at a time per instance, so one thread's MDC is the invocation's.
 */
public final class Invocation implements AutoCloseable {
    private Invocation() {}

    /** The invocation {@code context} describes; a null context (a test, a local run) adds nothing. */
    public static Invocation of(Context context) {
        return context == null ? of(null, null) : of(context.getFunctionName(), context.getAwsRequestId());
    }

    /** Either may be null: it is then left out of the lines. */
    public static Invocation of(String function, String requestId) {
        if (function != null) {
            MDC.put("function", function);
        }
        if (requestId != null) {
            MDC.put("requestId", requestId);
        }
        return new Invocation();
    }

    @Override
    public void close() {
        MDC.remove("function");
        MDC.remove("requestId");
    }
}
