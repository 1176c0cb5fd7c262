package dev.ddb2iceberg.testkit;

import com.amazonaws.services.lambda.runtime.events.DynamodbEvent;
import com.amazonaws.services.lambda.runtime.events.models.dynamodb.AttributeValue;
import com.amazonaws.services.lambda.runtime.events.models.dynamodb.Identity;
import com.amazonaws.services.lambda.runtime.events.models.dynamodb.StreamRecord;
import com.amazonaws.services.lambda.runtime.events.models.dynamodb.StreamViewType;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Builds the Lambda event DynamoDB Streams would deliver for given changes: the inverse of
 * {@code StreamRecordDecoder}, for tests, the local demo and benchmarks.
 */
public final class StreamEvents {
    public static final String STREAM_ARN =
            "arn:aws:dynamodb:us-east-1:123456789012:table/local/stream/2026-01-01T00:00:00.000";

    private StreamEvents() {}

    public static DynamodbEvent batch(List<Change> changes) {
        List<DynamodbEvent.DynamodbStreamRecord> records = new ArrayList<>(changes.size());
        for (Change c : changes) {
            records.add(record(c));
        }
        DynamodbEvent event = new DynamodbEvent();
        event.setRecords(records);
        return event;
    }

    public static DynamodbEvent.DynamodbStreamRecord record(Change c) {
        StreamRecord ddb = new StreamRecord();
        ddb.setKeys(attributes(c.keys()));
        if (c.newImage() != null) {
            ddb.setNewImage(attributes(c.newImage()));
        }
        ddb.setSequenceNumber(c.sequenceNumber());
        ddb.setApproximateCreationDateTime(new Date(c.approximateCreationMillis()));
        ddb.setStreamViewType(StreamViewType.NEW_AND_OLD_IMAGES);
        DynamodbEvent.DynamodbStreamRecord r = new DynamodbEvent.DynamodbStreamRecord();
        r.setEventID(Integer.toHexString(c.sequenceNumber().hashCode()));
        r.setEventName(c.operation().name());
        r.setEventSource("aws:dynamodb");
        r.setEventVersion("1.1");
        r.setAwsRegion("us-east-1");
        r.setEventSourceARN(STREAM_ARN);
        r.setDynamodb(ddb);
        if (c.ttlExpiry()) {
            Identity id = new Identity();
            id.setType("Service");
            id.setPrincipalId("dynamodb.amazonaws.com");
            r.setUserIdentity(id);
        }
        return r;
    }

    public static Map<String, AttributeValue> attributes(Map<String, DdbValue> values) {
        Map<String, AttributeValue> out = new LinkedHashMap<>();
        values.forEach((k, v) -> out.put(k, attribute(v)));
        return out;
    }

    public static AttributeValue attribute(DdbValue v) {
        AttributeValue a = new AttributeValue();
        if (v instanceof DdbValue.S s) {
            a.setS(s.value());
        } else if (v instanceof DdbValue.N n) {
            a.setN(n.text());
        } else if (v instanceof DdbValue.B b) {
            a.setB(ByteBuffer.wrap(b.bytes()));
        } else if (v instanceof DdbValue.Bool b) {
            a.setBOOL(b.value());
        } else if (v instanceof DdbValue.Null) {
            a.setNULL(true);
        } else if (v instanceof DdbValue.M m) {
            a.setM(attributes(m.fields()));
        } else if (v instanceof DdbValue.L l) {
            List<AttributeValue> out = new ArrayList<>();
            l.elements().forEach(e -> out.add(attribute(e)));
            a.setL(out);
        } else if (v instanceof DdbValue.SS ss) {
            a.setSS(ss.elements());
        } else if (v instanceof DdbValue.NS ns) {
            a.setNS(ns.elements());
        } else if (v instanceof DdbValue.BS bs) {
            List<ByteBuffer> out = new ArrayList<>();
            bs.elements().forEach(b -> out.add(ByteBuffer.wrap(b)));
            a.setBS(out);
        }
        return a;
    }
}
