package dev.ddb2iceberg.embedded;

import com.amazonaws.services.lambda.runtime.RequestHandler;
import com.amazonaws.services.lambda.runtime.RequestStreamHandler;
import com.amazonaws.services.lambda.runtime.serialization.PojoSerializer;
import com.amazonaws.services.lambda.runtime.serialization.events.LambdaEventSerializers;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Runs in a child JVM whose classpath is a function's deployable jar (plus what the Lambda Java
 * runtime itself provides): creates the handler with its no-argument constructor, as Lambda does,
 * so settings come from the real environment, and invokes it once on an event file. Used by
 * {@link PackagedFunction}; it must only use classes the runtime or the function's jar provide.
 */
public final class PackagedInvoker {
    private PackagedInvoker() {}

    @SuppressWarnings({"unchecked", "rawtypes"})
    public static void main(String[] args) throws Exception {
        Object handler = Class.forName(args[0]).getConstructor().newInstance();
        byte[] event = Files.readAllBytes(Path.of(args[1]));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        if (handler instanceof RequestStreamHandler stream) {
            stream.handleRequest(new ByteArrayInputStream(event), out, null);
        } else {
            ClassLoader loader = PackagedInvoker.class.getClassLoader();
            PojoSerializer<Object> in = (PojoSerializer<Object>)
                    LambdaEventSerializers.serializerFor(inputType(handler.getClass()), loader);
            Object response =
                    ((RequestHandler) handler).handleRequest(in.fromJson(new ByteArrayInputStream(event)), null);
            PojoSerializer<Object> outSerializer =
                    (PojoSerializer<Object>) LambdaEventSerializers.serializerFor(response.getClass(), loader);
            outSerializer.toJson(response, out);
        }
        Files.write(Path.of(args[2]), out.toByteArray()); // the function logs to stdout, as in Lambda
    }

    private static Class<?> inputType(Class<?> type) {
        for (Type t : type.getGenericInterfaces()) {
            if (t instanceof ParameterizedType p && p.getRawType() == RequestHandler.class) {
                return (Class<?>) p.getActualTypeArguments()[0];
            }
        }
        throw new IllegalArgumentException(type + " is not a RequestHandler");
    }
}
