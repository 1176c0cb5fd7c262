package dev.ddb2iceberg.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.amazonaws.services.lambda.runtime.events.DynamodbEvent;
import com.amazonaws.services.lambda.runtime.events.models.dynamodb.AttributeValue;
import com.amazonaws.services.lambda.runtime.events.models.dynamodb.StreamViewType;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.testkit.StreamEvents;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class StreamRecordDecoderTest {

    private static DynamodbEvent.DynamodbStreamRecord insert() {
        Map<String, DdbValue> keys = Map.of("pk", new DdbValue.S("a"));
        Map<String, DdbValue> image = new LinkedHashMap<>(keys);
        image.put("n", new DdbValue.N("1"));
        return StreamEvents.record(new Change(keys, Operation.INSERT, image, "100", 1000L, false));
    }

    @Test
    void randomChangesSurviveEventEncodingAndDecoding() throws Exception {
        for (long seed = 1; seed <= 20; seed++) {
            List<Change> changes = dev.ddb2iceberg.testkit.RandomChanges.generate(seed, 50);
            for (Change c : changes) {
                assertEquals(c, StreamRecordDecoder.decode(StreamEvents.record(c)));
            }
        }
    }

    @Test
    void ttlRemovalIsRecognisedByItsServicePrincipal() throws Exception {
        Change ttl = new Change(Map.of("pk", new DdbValue.S("a")), Operation.REMOVE, null, "5", 0L, true);
        assertTrue(StreamRecordDecoder.decode(StreamEvents.record(ttl)).ttlExpiry());
        var userRemove = StreamEvents.record(
                new Change(Map.of("pk", new DdbValue.S("a")), Operation.REMOVE, null, "6", 0L, false));
        assertEquals(false, StreamRecordDecoder.decode(userRemove).ttlExpiry());
    }

    @Test
    void keysOnlyStreamIsRefusedNamingTheNeededViewType() {
        var r = insert();
        r.getDynamodb().setStreamViewType(StreamViewType.KEYS_ONLY);
        UnsupportedStreamViewTypeException e =
                assertThrows(UnsupportedStreamViewTypeException.class, () -> StreamRecordDecoder.decode(r));
        assertTrue(
                e.getMessage().contains("KEYS_ONLY") && e.getMessage().contains("NEW_AND_OLD_IMAGES"), e.getMessage());
    }

    @Test
    void poisonRecordsSayWhatIsWrong() {
        var noKeys = insert();
        noKeys.getDynamodb().setKeys(null);
        assertPoison(noKeys, "no Keys");

        var badName = insert();
        badName.setEventName("UPSERT");
        assertPoison(badName, "unknown eventName 'UPSERT'");

        var badNumber = insert();
        badNumber.getDynamodb().getNewImage().put("n", new AttributeValue().withN("1,5"));
        assertPoison(badNumber, "NewImage.n: N value '1,5' is not a decimal number");

        var twoTypes = insert();
        twoTypes.getDynamodb()
                .getNewImage()
                .put("n", new AttributeValue().withN("1").withS("x"));
        assertPoison(twoTypes, "NewImage.n has 2 DynamoDB types");

        var noImage = insert();
        noImage.getDynamodb().setNewImage(null);
        assertPoison(noImage, "INSERT record has no NewImage");

        var badSeq = insert();
        badSeq.getDynamodb().setSequenceNumber("12x");
        assertPoison(badSeq, "sequence number '12x' is not a decimal number");
    }

    private static void assertPoison(DynamodbEvent.DynamodbStreamRecord r, String expected) {
        PoisonRecordException e = assertThrows(PoisonRecordException.class, () -> StreamRecordDecoder.decode(r));
        assertTrue(e.getMessage().contains(expected), "expected '" + expected + "' in: " + e.getMessage());
    }
}
