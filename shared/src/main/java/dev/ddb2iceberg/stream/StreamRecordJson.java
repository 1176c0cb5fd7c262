package dev.ddb2iceberg.stream;

import com.amazonaws.services.lambda.runtime.events.DynamodbEvent;
import com.amazonaws.services.lambda.runtime.events.models.dynamodb.AttributeValue;
import com.amazonaws.services.lambda.runtime.events.models.dynamodb.Record;
import com.amazonaws.services.lambda.runtime.events.models.dynamodb.StreamRecord;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.ByteBuffer;
import java.util.Base64;
import java.util.List;
import java.util.Map;

/**
 * Renders a stream record back into the JSON shape of the Lambda event, whatever is wrong with it,
 * so a quarantined record can be read, fixed and replayed by a person.
 */
public final class StreamRecordJson {
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    private StreamRecordJson() {}

    public static ObjectNode toJson(Record r) {
        ObjectNode out = F.objectNode();
        out.put("eventID", r.getEventID());
        out.put("eventName", r.getEventName());
        out.put("eventVersion", r.getEventVersion());
        out.put("eventSource", r.getEventSource());
        out.put("awsRegion", r.getAwsRegion());
        if (r instanceof DynamodbEvent.DynamodbStreamRecord d) {
            out.put("eventSourceARN", d.getEventSourceARN());
        }
        if (r.getUserIdentity() != null) {
            out.putObject("userIdentity")
                    .put("type", r.getUserIdentity().getType())
                    .put("principalId", r.getUserIdentity().getPrincipalId());
        }
        StreamRecord d = r.getDynamodb();
        if (d != null) {
            ObjectNode ddb = out.putObject("dynamodb");
            if (d.getApproximateCreationDateTime() != null) {
                ddb.put(
                        "ApproximateCreationDateTime",
                        d.getApproximateCreationDateTime().getTime() / 1000.0);
            }
            ddb.set("Keys", map(d.getKeys()));
            ddb.set("NewImage", map(d.getNewImage()));
            ddb.set("OldImage", map(d.getOldImage()));
            ddb.put("SequenceNumber", d.getSequenceNumber());
            ddb.put("SizeBytes", d.getSizeBytes());
            ddb.put("StreamViewType", d.getStreamViewType());
        }
        return out;
    }

    private static JsonNode map(Map<String, AttributeValue> m) {
        if (m == null) {
            return F.nullNode();
        }
        ObjectNode out = F.objectNode();
        m.forEach((k, v) -> out.set(k, value(v)));
        return out;
    }

    /** Every type field that is set, so a malformed value is shown as it came. */
    private static JsonNode value(AttributeValue v) {
        if (v == null) {
            return F.nullNode();
        }
        ObjectNode out = F.objectNode();
        if (v.getS() != null) {
            out.put("S", v.getS());
        }
        if (v.getN() != null) {
            out.put("N", v.getN());
        }
        if (v.getB() != null) {
            out.put("B", base64(v.getB()));
        }
        if (v.getBOOL() != null) {
            out.put("BOOL", v.getBOOL());
        }
        if (v.getNULL() != null) {
            out.put("NULL", v.getNULL());
        }
        if (v.getM() != null) {
            out.set("M", map(v.getM()));
        }
        if (v.getL() != null) {
            ArrayNode a = out.putArray("L");
            v.getL().forEach(e -> a.add(value(e)));
        }
        strings(out, "SS", v.getSS());
        strings(out, "NS", v.getNS());
        if (v.getBS() != null) {
            ArrayNode a = out.putArray("BS");
            v.getBS().forEach(b -> a.add(base64(b)));
        }
        return out;
    }

    private static void strings(ObjectNode out, String type, List<String> values) {
        if (values != null) {
            ArrayNode a = out.putArray(type);
            values.forEach(a::add);
        }
    }

    private static String base64(ByteBuffer b) {
        if (b == null) {
            return null;
        }
        ByteBuffer view = b.duplicate();
        byte[] bytes = new byte[view.remaining()];
        view.get(bytes);
        return Base64.getEncoder().encodeToString(bytes);
    }
}
