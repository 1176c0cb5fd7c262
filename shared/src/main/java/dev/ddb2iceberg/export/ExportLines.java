package dev.ddb2iceberg.export;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbJson;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.Operation;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Turns the lines of an export's data files into changes the merger applies like stream changes.
 *
 * <p>Sequence numbers place export rows before every stream change: a full export's items get the
 * export time in microseconds and an incremental export's changes their {@code WriteTimestampMicros}
 * (16 digits, so exports order among themselves by time), while stream sequence numbers have 20
 * digits or more. A staged stream change of the same item therefore supersedes an exported one,
 * whichever is merged first. That is what makes the hand-off seamless: overlap is harmless, and
 * each item's changes apply in order.
 */
public final class ExportLines {
    private static final JsonFactory FACTORY = new JsonFactory();

    private final ExportManifest.Type type;
    private final List<String> keyNames;
    private final long exportMillis;

    /** @param keyNames the table's key attributes (a full export's lines hold whole items only) */
    public ExportLines(ExportManifest.Type type, List<String> keyNames, long exportMillis) {
        this.type = type;
        this.keyNames = List.copyOf(keyNames);
        this.exportMillis = exportMillis;
    }

    /** The change one line holds; throws IllegalArgumentException saying what is wrong with it. */
    public Change decode(String line) {
        Map<String, DdbValue> item = null;
        Map<String, DdbValue> keys = null;
        Map<String, DdbValue> newImage = null;
        String micros = null;
        try (JsonParser p = FACTORY.createParser(line)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                throw new IllegalArgumentException("not a JSON object");
            }
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                p.nextToken();
                switch (field) {
                    case "Item":
                        item = DdbJson.readItem(p);
                        break;
                    case "Keys":
                        keys = DdbJson.readItem(p);
                        break;
                    case "NewImage":
                        newImage = DdbJson.readItem(p);
                        break;
                    case "Metadata": {
                        DdbValue ts = DdbJson.readItem(p).get("WriteTimestampMicros");
                        micros = ts instanceof DdbValue.N n ? n.text() : null;
                        break;
                    }
                    default:
                        p.skipChildren(); // OldImage, and anything a later format adds
                }
            }
        } catch (IOException e) {
            throw new IllegalArgumentException("not JSON: " + e.getMessage());
        }
        if (type == ExportManifest.Type.FULL) {
            if (item == null) {
                throw new IllegalArgumentException("a full export's line has no \"Item\"");
            }
            return new Change(
                    keysOf(item), Operation.INSERT, item, Long.toString(exportMillis * 1000), exportMillis, false);
        }
        if (keys == null || micros == null || !micros.chars().allMatch(Character::isDigit)) {
            throw new IllegalArgumentException("an incremental export's line needs \"Keys\" and"
                    + " \"Metadata\": {\"WriteTimestampMicros\": {\"N\": …}}");
        }
        long millis = Long.parseLong(micros) / 1000;
        return newImage == null
                ? new Change(keys, Operation.REMOVE, null, micros, millis, false)
                : new Change(keys, Operation.MODIFY, newImage, micros, millis, false);
    }

    private Map<String, DdbValue> keysOf(Map<String, DdbValue> item) {
        Map<String, DdbValue> keys = new LinkedHashMap<>();
        for (String k : keyNames) {
            DdbValue v = item.get(k);
            if (v == null) {
                throw new IllegalArgumentException(
                        "the item lacks key attribute '" + k + "' (the table's keys are " + keyNames + ")");
            }
            keys.put(k, v);
        }
        return keys;
    }
}
