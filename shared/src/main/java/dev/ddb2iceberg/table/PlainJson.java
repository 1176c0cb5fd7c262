package dev.ddb2iceberg.table;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import dev.ddb2iceberg.model.DdbJson;
import dev.ddb2iceberg.model.DdbValue;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A DynamoDB value as plain JSON, the way a query engine's JSON functions read it: strings,
 * numbers (their exact text), booleans, null, objects and arrays. Sets become arrays and binaries
 * base64 strings, which do not read back as the same value; {@link TypeMapping} notices and keeps
 * such values exactly in the overflow map too.
 */
final class PlainJson {
    private static final JsonFactory FACTORY = new JsonFactory();

    private PlainJson() {}

    static String write(DdbValue value) {
        return DdbJson.text(g -> write(g, value));
    }

    private static void write(JsonGenerator g, DdbValue v) throws IOException {
        if (v instanceof DdbValue.S s) {
            g.writeString(s.value());
        } else if (v instanceof DdbValue.N n) {
            g.writeNumber(n.text());
        } else if (v instanceof DdbValue.Bool b) {
            g.writeBoolean(b.value());
        } else if (v instanceof DdbValue.Null) {
            g.writeNull();
        } else if (v instanceof DdbValue.B b) {
            g.writeString(Base64.getEncoder().encodeToString(b.bytes()));
        } else if (v instanceof DdbValue.M m) {
            g.writeStartObject();
            for (Map.Entry<String, DdbValue> e : m.fields().entrySet()) {
                g.writeFieldName(e.getKey());
                write(g, e.getValue());
            }
            g.writeEndObject();
        } else if (v instanceof DdbValue.L l) {
            g.writeStartArray();
            for (DdbValue e : l.elements()) {
                write(g, e);
            }
            g.writeEndArray();
        } else if (v instanceof DdbValue.SS s) {
            g.writeStartArray();
            for (String e : s.elements()) {
                g.writeString(e);
            }
            g.writeEndArray();
        } else if (v instanceof DdbValue.NS s) {
            g.writeStartArray();
            for (String e : s.elements()) {
                g.writeNumber(e);
            }
            g.writeEndArray();
        } else if (v instanceof DdbValue.BS s) {
            g.writeStartArray();
            for (byte[] e : s.elements()) {
                g.writeString(Base64.getEncoder().encodeToString(e));
            }
            g.writeEndArray();
        }
    }

    /** The value plain JSON text stands for: objects as M, arrays as L, numbers as N with their text. */
    static DdbValue parse(String json) {
        try (JsonParser p = FACTORY.createParser(json)) {
            p.nextToken();
            return read(p);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static DdbValue read(JsonParser p) throws IOException {
        JsonToken t = p.currentToken();
        switch (t) {
            case VALUE_STRING:
                return new DdbValue.S(p.getText());
            case VALUE_NUMBER_INT:
            case VALUE_NUMBER_FLOAT:
                return new DdbValue.N(p.getText());
            case VALUE_TRUE:
                return DdbValue.Bool.TRUE;
            case VALUE_FALSE:
                return DdbValue.Bool.FALSE;
            case VALUE_NULL:
                return DdbValue.Null.INSTANCE;
            case START_OBJECT: {
                Map<String, DdbValue> m = new LinkedHashMap<>();
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String name = p.currentName();
                    p.nextToken();
                    m.put(name, read(p));
                }
                return new DdbValue.M(m);
            }
            case START_ARRAY: {
                List<DdbValue> l = new ArrayList<>();
                while (p.nextToken() != JsonToken.END_ARRAY) {
                    l.add(read(p));
                }
                return new DdbValue.L(l);
            }
            default:
                throw new IllegalArgumentException("unexpected JSON token " + t);
        }
    }
}
