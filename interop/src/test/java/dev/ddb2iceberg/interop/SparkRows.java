package dev.ddb2iceberg.interop;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.table.TableLayout;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;

/**
 * Spark's rows, as its {@code Dataset.toJSON} writes them, back into DynamoDB items: each value is
 * read as the Iceberg type of its column (Spark writes decimals as exact numbers, binary as
 * base64, timestamps as ISO-8601 in the session's zone, and leaves nulls out), then the table's
 * own column mapping turns the row into an item. An item that comes out equal to the source's
 * proves Spark read every typed column and the overflow map exactly.
 */
final class SparkRows {
    private static final ObjectMapper JSON =
            new ObjectMapper().enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS); // no detour through double

    private SparkRows() {}

    static JsonNode parse(String line) {
        try {
            return JSON.readTree(line);
        } catch (IOException e) {
            throw new UncheckedIOException("Spark wrote a row that is not JSON: " + line, e);
        }
    }

    /** Items by key, as {@code TableItems.read} gives them; a key seen twice is an error. */
    static Map<Map<String, DdbValue>, Map<String, DdbValue>> items(List<String> rows, TableLayout layout) {
        Map<Map<String, DdbValue>, Map<String, DdbValue>> items = new LinkedHashMap<>();
        for (String line : rows) {
            Map<String, DdbValue> item =
                    layout.toItem(record(parse(line), layout.schema().asStruct()));
            Map<String, DdbValue> key = new LinkedHashMap<>();
            layout.keyAttributes().forEach(k -> key.put(k, item.get(k)));
            if (items.put(key, item) != null) {
                throw new AssertionError("Spark returned two rows for key " + key);
            }
        }
        return items;
    }

    static Record record(JsonNode node, Types.StructType struct) {
        GenericRecord record = GenericRecord.create(struct);
        for (Types.NestedField field : struct.fields()) {
            record.setField(field.name(), value(node.get(field.name()), field.type(), field.name()));
        }
        return record;
    }

    private static Object value(JsonNode node, Type type, String path) {
        if (node == null || node.isNull()) {
            return null;
        }
        switch (type.typeId()) {
            case STRING:
                return node.textValue();
            case BOOLEAN:
                return node.booleanValue();
            case INTEGER:
                return node.intValue();
            case LONG:
                return node.longValue();
            case FLOAT:
                return node.floatValue();
            case DOUBLE:
                return node.doubleValue();
            case DECIMAL:
                // setScale without rounding: a value Spark returned with other digits fails here, by name.
                return node.decimalValue().setScale(((Types.DecimalType) type).scale());
            case BINARY:
                return ByteBuffer.wrap(Base64.getDecoder().decode(node.textValue()));
            case TIMESTAMP:
                return ((Types.TimestampType) type).shouldAdjustToUTC()
                        ? OffsetDateTime.parse(node.textValue())
                        : LocalDateTime.parse(node.textValue());
            case STRUCT:
                return record(node, type.asStructType());
            case LIST: {
                List<Object> list = new ArrayList<>();
                Type element = type.asListType().elementType();
                node.forEach(e -> list.add(value(e, element, path + "[]")));
                return list;
            }
            case MAP: {
                Map<Object, Object> map = new LinkedHashMap<>();
                Type valueType = type.asMapType().valueType();
                for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
                    Map.Entry<String, JsonNode> e = it.next();
                    map.put(e.getKey(), value(e.getValue(), valueType, path + "." + e.getKey()));
                }
                return map;
            }
            default:
                throw new AssertionError(
                        "column " + path + " has type " + type + ", which this test cannot read from Spark");
        }
    }
}
