package dev.ddb2iceberg.stream;

import com.amazonaws.services.lambda.runtime.events.models.dynamodb.AttributeValue;
import com.amazonaws.services.lambda.runtime.events.models.dynamodb.Identity;
import com.amazonaws.services.lambda.runtime.events.models.dynamodb.Record;
import com.amazonaws.services.lambda.runtime.events.models.dynamodb.StreamRecord;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.Operation;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Turns one record of a Lambda {@code DynamodbEvent} (as the Lambda Java runtime deserialized it)
 * into a {@link Change}, keeping every value's DynamoDB type.
 */
public final class StreamRecordDecoder {
    static final String TTL_PRINCIPAL = "dynamodb.amazonaws.com";

    private StreamRecordDecoder() {}

    /**
     * @throws PoisonRecordException if the record is malformed in a way no retry can fix
     * @throws UnsupportedStreamViewTypeException if the stream carries no new images
     */
    public static Change decode(Record record) throws PoisonRecordException {
        if (record == null) {
            throw new PoisonRecordException("record is null");
        }
        StreamRecord ddb = record.getDynamodb();
        if (ddb == null) {
            throw new PoisonRecordException("record has no 'dynamodb' section");
        }
        String viewType = ddb.getStreamViewType();
        if ("KEYS_ONLY".equals(viewType) || "OLD_IMAGE".equals(viewType)) {
            throw new UnsupportedStreamViewTypeException(viewType);
        }
        String seq = ddb.getSequenceNumber();
        Operation op = operation(record.getEventName());
        if (ddb.getKeys() == null || ddb.getKeys().isEmpty()) {
            throw new PoisonRecordException("record has no Keys");
        }
        Map<String, DdbValue> keys = map(ddb.getKeys(), "Keys");
        Map<String, DdbValue> newImage = null;
        if (op.isUpsert()) {
            if (ddb.getNewImage() == null) {
                throw new PoisonRecordException(op + " record has no NewImage");
            }
            newImage = map(ddb.getNewImage(), "NewImage");
            for (Map.Entry<String, DdbValue> key : keys.entrySet()) {
                if (!key.getValue().equals(newImage.get(key.getKey()))) {
                    throw new PoisonRecordException(
                            "NewImage does not hold key attribute '" + key.getKey() + "' with the value given in Keys");
                }
            }
        }
        long millis = ddb.getApproximateCreationDateTime() == null
                ? 0L
                : ddb.getApproximateCreationDateTime().getTime();
        try {
            return new Change(
                    keys, op, newImage, seq, millis, op == Operation.REMOVE && isTtl(record.getUserIdentity()));
        } catch (IllegalArgumentException e) {
            throw new PoisonRecordException(e.getMessage());
        }
    }

    private static Operation operation(String eventName) throws PoisonRecordException {
        if (eventName == null) {
            throw new PoisonRecordException("record has no eventName");
        }
        try {
            return Operation.valueOf(eventName);
        } catch (IllegalArgumentException e) {
            throw new PoisonRecordException(
                    "unknown eventName '" + eventName + "' (expected INSERT, MODIFY or REMOVE)");
        }
    }

    private static boolean isTtl(Identity identity) {
        return identity != null
                && "Service".equals(identity.getType())
                && TTL_PRINCIPAL.equals(identity.getPrincipalId());
    }

    private static Map<String, DdbValue> map(Map<String, AttributeValue> in, String path) throws PoisonRecordException {
        Map<String, DdbValue> out = new LinkedHashMap<>(Math.max(4, in.size() * 2));
        for (Map.Entry<String, AttributeValue> e : in.entrySet()) {
            out.put(e.getKey(), value(e.getValue(), path + "." + e.getKey()));
        }
        return out;
    }

    /** One attribute value; exactly one of its type fields must be set. */
    public static DdbValue value(AttributeValue v, String path) throws PoisonRecordException {
        if (v == null) {
            throw new PoisonRecordException(path + " is null");
        }
        int types = count(v.getS())
                + count(v.getN())
                + count(v.getB())
                + count(v.getBOOL())
                + count(v.getNULL())
                + count(v.getM())
                + count(v.getL())
                + count(v.getSS())
                + count(v.getNS())
                + count(v.getBS());
        if (types != 1) {
            throw new PoisonRecordException(
                    path + (types == 0 ? " has no DynamoDB type" : " has " + types + " DynamoDB types"));
        }
        try {
            if (v.getS() != null) {
                return new DdbValue.S(v.getS());
            } else if (v.getN() != null) {
                return new DdbValue.N(v.getN());
            } else if (v.getB() != null) {
                return new DdbValue.B(bytes(v.getB()));
            } else if (v.getBOOL() != null) {
                return DdbValue.Bool.of(v.getBOOL());
            } else if (v.getNULL() != null) {
                if (!v.getNULL()) {
                    throw new PoisonRecordException(path + " has NULL: false, which DynamoDB never sends");
                }
                return DdbValue.Null.INSTANCE;
            } else if (v.getM() != null) {
                return new DdbValue.M(map(v.getM(), path));
            } else if (v.getL() != null) {
                List<DdbValue> out = new ArrayList<>(v.getL().size());
                for (int i = 0; i < v.getL().size(); i++) {
                    out.add(value(v.getL().get(i), path + "[" + i + "]"));
                }
                return new DdbValue.L(out);
            } else if (v.getSS() != null) {
                return new DdbValue.SS(v.getSS());
            } else if (v.getNS() != null) {
                return new DdbValue.NS(v.getNS());
            } else {
                List<byte[]> out = new ArrayList<>(v.getBS().size());
                for (ByteBuffer b : v.getBS()) {
                    out.add(bytes(b));
                }
                return new DdbValue.BS(out);
            }
        } catch (IllegalArgumentException | NullPointerException e) {
            throw new PoisonRecordException(path + ": " + e.getMessage());
        }
    }

    private static int count(Object o) {
        return o == null ? 0 : 1;
    }

    private static byte[] bytes(ByteBuffer b) {
        ByteBuffer view = b.duplicate();
        byte[] out = new byte[view.remaining()];
        view.get(out);
        return out;
    }
}
