package dev.ddb2iceberg.function;

import com.amazonaws.services.lambda.runtime.Context;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ddb2iceberg.observe.Invocation;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.function.Consumer;
import java.util.function.Function;
import org.slf4j.Logger;

/**
 * One invocation of a handler, the same way for every function: its log lines carry the
 * function's name and request id ({@link Invocation}); a failure is logged once as an error, with
 * what it means for the pipeline, and rethrown (Lambda reports it); the result record is written
 * as JSON.
 */
public final class FunctionCall {
    /** How results are written: records by their components, as the functions always have. */
    public static final ObjectMapper JSON = new ObjectMapper();
    /**
     * Where metric lines go in Lambda: standard output, which CloudWatch reads them from. System.out
     * as it is at each print (not a method reference, which would keep the stream of construction
     * time): the local runtime points it away from its own output while functions run.
     */
    public static final Consumer<String> STANDARD_OUTPUT = line -> System.out.println(line);

    private FunctionCall() {}

    /** Reads the input, runs {@code body} on it and writes its result; {@code body} logs its own failures. */
    public static void run(InputStream input, OutputStream output, Context context, Function<byte[], Object> body)
            throws IOException {
        run(input, output, context, null, null, body);
    }

    /**
     * Reads the input, runs {@code body} on it and writes its result; a failure is logged as an error.
     *
     * @param failure the error line's message: what a failure leaves behind, e.g. "Merge run failed; ..."
     */
    public static void run(
            InputStream input,
            OutputStream output,
            Context context,
            Logger log,
            String failure,
            Function<byte[], Object> body)
            throws IOException {
        try (Invocation call = Invocation.of(context)) {
            Object result;
            try {
                result = body.apply(input.readAllBytes());
            } catch (RuntimeException e) {
                if (log != null) {
                    log.atError().setCause(e).log(failure);
                }
                throw e;
            }
            JSON.writeValue(output, result);
        }
    }
}
