package dev.ddb2iceberg.testkit;

import com.amazonaws.services.lambda.runtime.RequestStreamHandler;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.function.Function;

/** A function's handler called as Lambda calls it, for tests: JSON in, JSON out; what it throws is rethrown. */
public final class HandlerCalls {
    private static final ObjectMapper JSON = new ObjectMapper();

    private HandlerCalls() {}

    public static Function<ObjectNode, JsonNode> json(RequestStreamHandler handler) {
        return input -> {
            try {
                ByteArrayOutputStream out = new ByteArrayOutputStream();
                handler.handleRequest(new ByteArrayInputStream(JSON.writeValueAsBytes(input)), out, null);
                return JSON.readTree(out.toByteArray());
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        };
    }
}
