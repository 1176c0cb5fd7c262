package dev.ddb2iceberg.model;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * DynamoDB JSON ({@code {"N": "1.5"}}, {@code {"M": {...}}}, binaries as base64): the text form of
 * a value, used where a value is kept outside a typed column and in quarantined changes. It is the
 * format the AWS CLI and DynamoDB exports use, so people and tools can read it back.
 */
public final class DdbJson {
    private static final JsonFactory FACTORY = new JsonFactory();

    private DdbJson() {}

    public static String write(DdbValue value) {
        return text(g -> write(g, value));
    }

    public static String writeItem(Map<String, DdbValue> item) {
        return text(g -> writeMap(g, item));
    }

    /** Writes JSON with a generator. */
    @FunctionalInterface
    public interface JsonBody {
        void writeTo(JsonGenerator g) throws IOException;
    }

    /** The JSON text {@code body} writes. */
    public static String text(JsonBody body) {
        StringWriter out = new StringWriter();
        try (JsonGenerator g = FACTORY.createGenerator(out)) {
            body.writeTo(g);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toString();
    }

    private static void writeMap(JsonGenerator g, Map<String, DdbValue> m) throws IOException {
        g.writeStartObject();
        for (Map.Entry<String, DdbValue> e : m.entrySet()) {
            g.writeFieldName(e.getKey());
            write(g, e.getValue());
        }
        g.writeEndObject();
    }

    private static void write(JsonGenerator g, DdbValue v) throws IOException {
        g.writeStartObject();
        g.writeFieldName(v.typeName());
        if (v instanceof DdbValue.S s) {
            g.writeString(s.value());
        } else if (v instanceof DdbValue.N n) {
            g.writeString(n.text());
        } else if (v instanceof DdbValue.B b) {
            g.writeString(Base64.getEncoder().encodeToString(b.bytes()));
        } else if (v instanceof DdbValue.Bool b) {
            g.writeBoolean(b.value());
        } else if (v instanceof DdbValue.Null) {
            g.writeBoolean(true);
        } else if (v instanceof DdbValue.M m) {
            writeMap(g, m.fields());
        } else if (v instanceof DdbValue.L l) {
            g.writeStartArray();
            for (DdbValue e : l.elements()) {
                write(g, e);
            }
            g.writeEndArray();
        } else if (v instanceof DdbValue.SS ss) {
            strings(g, ss.elements());
        } else if (v instanceof DdbValue.NS ns) {
            strings(g, ns.elements());
        } else if (v instanceof DdbValue.BS bs) {
            g.writeStartArray();
            for (byte[] b : bs.elements()) {
                g.writeString(Base64.getEncoder().encodeToString(b));
            }
            g.writeEndArray();
        }
        g.writeEndObject();
    }

    private static void strings(JsonGenerator g, List<String> values) throws IOException {
        g.writeStartArray();
        for (String s : values) {
            g.writeString(s);
        }
        g.writeEndArray();
    }

    /** Parses one DynamoDB JSON value; throws {@link IllegalArgumentException} on anything else. */
    public static DdbValue parse(String json) {
        try (JsonParser p = FACTORY.createParser(json)) {
            p.nextToken();
            DdbValue v = value(p);
            if (p.nextToken() != null) {
                throw new IllegalArgumentException("trailing content after a DynamoDB JSON value");
            }
            return v;
        } catch (IOException e) {
            throw new IllegalArgumentException("not DynamoDB JSON: " + e.getMessage(), e);
        }
    }

    /**
     * Reads an item (attribute name to DynamoDB JSON value) at the parser's current
     * {@code START_OBJECT}, leaving the parser on its {@code END_OBJECT}. For streaming readers of
     * larger documents, such as the lines of a DynamoDB export.
     */
    public static Map<String, DdbValue> readItem(JsonParser p) throws IOException {
        expect(p, JsonToken.START_OBJECT);
        Map<String, DdbValue> item = new LinkedHashMap<>();
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            p.nextToken();
            item.put(name, value(p));
        }
        return item;
    }

    private static DdbValue value(JsonParser p) throws IOException {
        expect(p, JsonToken.START_OBJECT);
        p.nextToken();
        String type = p.currentName();
        p.nextToken();
        DdbValue v;
        switch (type == null ? "" : type) {
            case "S":
                v = new DdbValue.S(text(p));
                break;
            case "N":
                v = new DdbValue.N(text(p));
                break;
            case "B":
                v = new DdbValue.B(Base64.getDecoder().decode(text(p)));
                break;
            case "BOOL":
                v = DdbValue.Bool.of(p.getBooleanValue());
                break;
            case "NULL":
                v = DdbValue.Null.INSTANCE;
                break;
            case "M":
                v = new DdbValue.M(readItem(p));
                break;
            case "L": {
                expect(p, JsonToken.START_ARRAY);
                List<DdbValue> l = new ArrayList<>();
                while (p.nextToken() != JsonToken.END_ARRAY) {
                    l.add(value(p));
                }
                v = new DdbValue.L(l);
                break;
            }
            case "SS":
                v = new DdbValue.SS(texts(p));
                break;
            case "NS":
                v = new DdbValue.NS(texts(p));
                break;
            case "BS": {
                List<byte[]> out = new ArrayList<>();
                for (String s : texts(p)) {
                    out.add(Base64.getDecoder().decode(s));
                }
                v = new DdbValue.BS(out);
                break;
            }
            default:
                throw new IllegalArgumentException("unknown DynamoDB type '" + type + "'");
        }
        if (p.nextToken() != JsonToken.END_OBJECT) {
            throw new IllegalArgumentException("a DynamoDB JSON value has exactly one type key");
        }
        return v;
    }

    private static List<String> texts(JsonParser p) throws IOException {
        expect(p, JsonToken.START_ARRAY);
        List<String> out = new ArrayList<>();
        while (p.nextToken() != JsonToken.END_ARRAY) {
            out.add(text(p));
        }
        return out;
    }

    private static String text(JsonParser p) throws IOException {
        expect(p, JsonToken.VALUE_STRING);
        return p.getText();
    }

    private static void expect(JsonParser p, JsonToken token) {
        if (p.currentToken() != token) {
            throw new IllegalArgumentException("expected " + token + " but found " + p.currentToken());
        }
    }
}
