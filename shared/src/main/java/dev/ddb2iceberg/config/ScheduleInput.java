package dev.ddb2iceberg.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import java.io.IOException;
import java.util.Iterator;
import java.util.Set;

/**
 * The input of a scheduled function (merger, maintenance): a schedule rule's {@code ScheduledEvent},
 * whose {@code detail} is the input; EventBridge Scheduler's plain JSON, delivered as is; or nothing.
 * Anything else is refused with a message naming what was wrong.
 */
public final class ScheduleInput {
  private static final ObjectMapper JSON = new ObjectMapper();

  private ScheduleInput() {}

  /**
   * The input's fields, checked against {@code fields}; an empty object for an empty input.
   *
   * @param function the function's name for messages, e.g. "merger"
   */
  public static JsonNode parse(byte[] bytes, String function, Set<String> fields) {
    if (bytes.length == 0) {
      return JsonNodeFactory.instance.objectNode();
    }
    JsonNode input;
    try {
      input = JSON.readTree(bytes);
    } catch (IOException e) {
      throw new IllegalArgumentException("The " + function + "'s input is not JSON: " + e.getMessage());
    }
    if (input == null || input.isNull()) {
      return JsonNodeFactory.instance.objectNode();
    }
    if (!input.isObject()) {
      throw new IllegalArgumentException("The " + function + "'s input must be a JSON object, not " + input.getNodeType());
    }
    if (input.has("Records")) {
      throw new IllegalArgumentException("The " + function + " was given a DynamoDB Streams batch (it has \"Records\");"
          + " stream batches go to the stager. The " + function + " runs on a schedule with an input of " + fields + ".");
    }
    JsonNode detail = input.has("detail-type") ? input.path("detail") : input;
    for (Iterator<String> it = detail.fieldNames(); it.hasNext(); ) {
      String field = it.next();
      if (!fields.contains(field)) {
        throw new IllegalArgumentException("Unknown " + function + " input field '" + field + "'; it accepts " + fields + ".");
      }
    }
    return detail;
  }
}
