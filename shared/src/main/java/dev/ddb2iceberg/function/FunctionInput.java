package dev.ddb2iceberg.function;

import com.fasterxml.jackson.annotation.JsonSetter;
import com.fasterxml.jackson.annotation.Nulls;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.IOException;
import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.stream.Collectors;

/**
 * Reads a function's JSON input into its input record. Accepts a schedule rule's
 * {@code ScheduledEvent} (whose {@code detail} is the input), EventBridge Scheduler's or Step
 * Functions' plain JSON, or nothing (an empty record). Refuses, with a message naming the field:
 * a field the record does not have ({@code Unknown merger input field 'maxChangez'; it accepts
 * [maxChanges, ...].}), a value of the wrong type or an explicit null
 * ({@code Maintenance input dryRun="yes" is not true or false.}), input that is not a JSON object,
 * and a DynamoDB Streams batch. No value is coerced: "5" is not a number, nor "true" a flag.
 * A record component annotated {@code @JsonSetter(nulls = Nulls.SET)} takes null as absent.
 */
public final class FunctionInput {
    private static final ObjectMapper JSON = JsonMapper.builder()
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
            .disable(MapperFeature.ALLOW_COERCION_OF_SCALARS)
            .build();

    private FunctionInput() {}

    /**
     * @param function the function's name for messages, e.g. "merger"
     */
    public static <T> T read(byte[] bytes, String function, Class<T> type) {
        JsonNode input;
        try {
            input = bytes.length == 0 ? null : JSON.readTree(bytes);
        } catch (IOException e) {
            throw new IllegalArgumentException("The " + function + "'s input is not JSON: " + e.getMessage());
        }
        if (input == null || input.isNull() || input.isMissingNode()) {
            input = JSON.createObjectNode();
        }
        if (!input.isObject()) {
            throw new IllegalArgumentException(
                    "The " + function + "'s input must be a JSON object, not " + input.getNodeType());
        }
        if (input.has("Records")) {
            throw new IllegalArgumentException("The " + function
                    + " was given a DynamoDB Streams batch (it has \"Records\");"
                    + " stream batches go to the stager. The " + function + " runs on a schedule with an input of "
                    + fields(type) + ".");
        }
        return read(input.has("detail-type") ? input.path("detail") : input, function, type);
    }

    /** Reads one JSON object (already unwrapped) into {@code type}, with the same messages. */
    public static <T> T read(JsonNode input, String function, Class<T> type) {
        refuseNulls(input, function, type, "");
        try {
            return JSON.treeToValue(input, type);
        } catch (UnrecognizedPropertyException e) {
            throw new IllegalArgumentException("Unknown " + function + " input field '" + path(e) + "'; it accepts "
                    + (e.getReferringClass() != null && e.getReferringClass().isRecord()
                            ? fields(e.getReferringClass())
                            : names(e.getKnownPropertyIds()))
                    + ".");
        } catch (MismatchedInputException e) {
            String field = path(e);
            JsonNode value = input.at("/" + field.replace(".", "/"));
            throw new IllegalArgumentException(
                    Character.toUpperCase(function.charAt(0)) + function.substring(1) + " input "
                            + field + "=" + (value.isMissingNode() ? "null" : value.toString()) + " is not "
                            + expected(e.getTargetType())
                            + ".");
        } catch (IOException e) {
            throw new IllegalArgumentException("The " + function + "'s input could not be read: " + e.getMessage());
        }
    }

    /** An explicit null is refused unless the record's component takes it ({@code @JsonSetter(nulls = Nulls.SET)}). */
    private static void refuseNulls(JsonNode input, String function, Class<?> type, String path) {
        if (!type.isRecord() || !input.isObject()) {
            return;
        }
        for (RecordComponent c : type.getRecordComponents()) {
            JsonNode value = input.get(c.getName());
            JsonSetter setter = c.getAccessor().getAnnotation(JsonSetter.class);
            if (value != null && value.isNull() && (setter == null || setter.nulls() != Nulls.SET)) {
                throw new IllegalArgumentException(Character.toUpperCase(function.charAt(0)) + function.substring(1)
                        + " input " + path + c.getName() + "=null is not " + expected(c.getType()) + ".");
            } else if (value != null) {
                refuseNulls(value, function, c.getType(), path + c.getName() + ".");
            }
        }
    }

    /** The fields a record's input takes, in its order. */
    public static List<String> fields(Class<?> type) {
        List<String> names = new ArrayList<>();
        if (type.isRecord()) {
            for (var c : type.getRecordComponents()) {
                names.add(c.getName());
            }
        }
        return names;
    }

    private static String names(Collection<Object> known) {
        return known.stream().map(Object::toString).collect(Collectors.toList()).toString();
    }

    private static String path(MismatchedInputException e) {
        return e.getPath().stream()
                .map(r -> r.getFieldName() != null ? r.getFieldName() : Integer.toString(r.getIndex()))
                .collect(Collectors.joining("."));
    }

    private static String expected(Class<?> type) {
        if (type == null) {
            return "of the right type";
        } else if (type == Integer.class || type == int.class || type == Long.class || type == long.class) {
            return "a whole number";
        } else if (type == Boolean.class || type == boolean.class) {
            return "true or false";
        } else if (type == String.class) {
            return "a string";
        } else if (Collection.class.isAssignableFrom(type) || type.isArray()) {
            return "a list";
        }
        return "a JSON object";
    }
}
