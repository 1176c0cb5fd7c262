package dev.ddb2iceberg.local;

import com.amazonaws.services.lambda.runtime.Context;
import com.amazonaws.services.lambda.runtime.RequestHandler;
import com.amazonaws.services.lambda.runtime.RequestStreamHandler;
import com.amazonaws.services.lambda.runtime.serialization.PojoSerializer;
import com.amazonaws.services.lambda.runtime.serialization.events.LambdaEventSerializers;
import com.amazonaws.services.lambda.runtime.serialization.factories.JacksonFactory;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.embedded.LocalContext;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs a function's handler in this process the way the Lambda Java runtime does: the event is
 * decoded, and the response encoded, with the runtime's own serializers
 * (aws-lambda-java-serialization); stream handlers get the raw bytes.
 *
 * <p>A process cannot change its own environment variables, so a handler that has a public
 * constructor taking an {@link Environment} gets the function's environment through it; the
 * no-argument constructor Lambda uses reads the real environment instead.
 */
final class LocalInvoker {
    private static final Logger LOG = LoggerFactory.getLogger(LocalInvoker.class);
    private static final ObjectMapper STEP_JSON = new ObjectMapper();

    private LocalInvoker() {}

    static Object newHandler(String handler, Map<String, String> env) {
        String className = handler.contains("::") ? handler.substring(0, handler.indexOf("::")) : handler;
        Class<?> type;
        try {
            type = Class.forName(className);
        } catch (ClassNotFoundException e) {
            throw new UserError("handler class " + className + " is not on the local runtime's classpath");
        }
        try {
            try {
                Constructor<?> withEnv = type.getConstructor(Environment.class);
                return withEnv.newInstance(new Environment(env));
            } catch (NoSuchMethodException noEnvConstructor) {
                return type.getConstructor().newInstance();
            }
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            throw new UserError("function failed to start (init error): " + cause.getMessage());
        } catch (ReflectiveOperationException e) {
            throw new UserError("cannot create handler " + className + ": " + e);
        }
    }

    /**
     * Closes what the handler built for itself (its catalog, its S3 client), as a container's end
     * would; a failure to close is cleanup's, so it is logged, not thrown over the function's result.
     */
    static void close(Object handler) {
        if (handler instanceof AutoCloseable closeable) {
            try {
                closeable.close();
            } catch (Exception e) {
                LOG.warn("Could not close {}: {}", handler.getClass().getSimpleName(), rootMessage(e));
            }
        }
    }

    /** Invokes the handler on the event's JSON; returns the response's JSON. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static byte[] invoke(Object handler, byte[] event, Context context) throws IOException {
        if (handler instanceof RequestStreamHandler stream) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            stream.handleRequest(new ByteArrayInputStream(event), out, context);
            return out.toByteArray();
        }
        if (!(handler instanceof RequestHandler requestHandler)) {
            throw new UserError(
                    handler.getClass().getName() + " implements neither RequestHandler nor RequestStreamHandler");
        }
        Class<?>[] io = requestHandlerTypes(handler.getClass());
        Object input;
        try {
            input = serializer(io[0]).fromJson(new ByteArrayInputStream(event));
        } catch (RuntimeException e) {
            throw new UserError("the event is not a valid " + io[0].getSimpleName() + ": " + rootMessage(e));
        }
        Object output = requestHandler.handleRequest(input, context);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        if (output != null) {
            ((PojoSerializer<Object>) serializer(output.getClass())).toJson(output, out);
        }
        return out.toByteArray();
    }

    private static PojoSerializer<?> serializer(Class<?> type) {
        ClassLoader loader = LocalInvoker.class.getClassLoader();
        return LambdaEventSerializers.isLambdaSupportedEvent(type.getName())
                ? LambdaEventSerializers.serializerFor(type, loader)
                : JacksonFactory.getInstance().getSerializer(type);
    }

    /** The input and output classes of a RequestHandler implementation. */
    private static Class<?>[] requestHandlerTypes(Class<?> handlerClass) {
        for (Class<?> c = handlerClass; c != null; c = c.getSuperclass()) {
            for (Type t : c.getGenericInterfaces()) {
                if (t instanceof ParameterizedType p && p.getRawType() == RequestHandler.class) {
                    Type[] args = p.getActualTypeArguments();
                    return new Class<?>[] {raw(args[0]), raw(args[1])};
                }
            }
        }
        return new Class<?>[] {Object.class, Object.class};
    }

    private static Class<?> raw(Type t) {
        return t instanceof Class<?> c
                ? c
                : t instanceof ParameterizedType p ? (Class<?>) p.getRawType() : Object.class;
    }

    /**
     * A state machine's task, as Step Functions invokes the function: one step's input as JSON in,
     * its result out; what the handler throws is rethrown.
     */
    static Function<ObjectNode, JsonNode> steps(Object handler, String function, int memoryMb) {
        return step -> {
            try {
                return STEP_JSON.readTree(
                        invoke(handler, STEP_JSON.writeValueAsBytes(step), new LocalContext(function, memoryMb, 900)));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        };
    }

    /** Progress lines to {@code out}, one whole line at a time (steps run on several threads). */
    static Consumer<String> lines(PrintWriter out) {
        return line -> {
            synchronized (out) {
                out.println(line);
                out.flush();
            }
        };
    }

    static String rootMessage(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        String m = t.getMessage() == null ? t.getClass().getSimpleName() : t.getMessage();
        return m.lines().findFirst().orElse(m);
    }
}
