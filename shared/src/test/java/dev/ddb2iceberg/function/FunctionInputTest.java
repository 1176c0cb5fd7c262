package dev.ddb2iceberg.function;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.annotation.JsonSetter;
import com.fasterxml.jackson.annotation.Nulls;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The one reader of the functions' inputs: typed records, unknown fields and bad values refused by name. */
class FunctionInputTest {
    record Nested(Integer n) {}

    record Input(
            Integer count,
            Boolean flag,
            List<String> names,
            @JsonSetter(nulls = Nulls.SET) String when,
            Nested nested) {}

    private static Input read(String json) {
        return FunctionInput.read(json.getBytes(StandardCharsets.UTF_8), "tester", Input.class);
    }

    private static String error(String json) {
        return assertThrows(IllegalArgumentException.class, () -> read(json)).getMessage();
    }

    @Test
    void plainScheduledEventAndEmptyInputsAreRead() {
        assertEquals(
                new Input(3, true, List.of("a"), null, new Nested(1)),
                read("{\"count\": 3, \"flag\": true, \"names\": [\"a\"], \"nested\": {\"n\": 1}}"));
        assertEquals(
                new Input(5, null, null, null, null),
                read("{\"detail-type\": \"Scheduled Event\", \"source\": \"aws.events\", \"detail\": {\"count\": 5}}"));
        assertEquals(new Input(null, null, null, null, null), read(""));
        assertEquals(new Input(null, null, null, null, null), read("null"));
        assertNull(read("{\"when\": null}").when(), "a component that takes null");
    }

    @Test
    void anUnknownFieldIsRefusedNamingItAndTheFieldsAllowed() {
        assertEquals(
                "Unknown tester input field 'cuont'; it accepts [count, flag, names, when, nested].",
                error("{\"cuont\": 3}"));
        assertEquals("Unknown tester input field 'nested.m'; it accepts [n].", error("{\"nested\": {\"m\": 3}}"));
    }

    @Test
    void aValueOfTheWrongTypeOrAnExplicitNullIsRefusedNamingTheFieldAndWhatItMustBe() {
        assertEquals("Tester input flag=\"yes\" is not true or false.", error("{\"flag\": \"yes\"}"));
        assertEquals("Tester input count=\"5\" is not a whole number.", error("{\"count\": \"5\"}"));
        assertEquals("Tester input names=\"a\" is not a list.", error("{\"names\": \"a\"}"));
        assertEquals("Tester input count=null is not a whole number.", error("{\"count\": null}"));
        assertEquals("Tester input nested.n=null is not a whole number.", error("{\"nested\": {\"n\": null}}"));
    }

    @Test
    void notJsonNotAnObjectAndAStreamBatchAreRefusedWithTheReason() {
        assertEquals(true, error("{oops").startsWith("The tester's input is not JSON"));
        assertEquals("The tester's input must be a JSON object, not ARRAY", error("[]"));
        assertEquals(
                "The tester was given a DynamoDB Streams batch (it has \"Records\"); stream batches go to the stager."
                        + " The tester runs on a schedule with an input of [count, flag, names, when, nested].",
                error("{\"Records\": []}"));
    }
}
