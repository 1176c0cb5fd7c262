package dev.ddb2iceberg.model;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * One DynamoDB attribute value, kept exactly as DynamoDB typed it.
 *
 * <p>Numbers stay as their decimal text (never a double), binaries as bytes, and sets, maps and
 * lists keep their element types. This is the lossless form every stage of the pipeline passes on;
 * the mapping to Iceberg column types happens later, in one place.
 */
public sealed interface DdbValue {

    /** The DynamoDB type descriptor: "S", "N", "B", "BOOL", "NULL", "M", "L", "SS", "NS", "BS". */
    String typeName();

    record S(String value) implements DdbValue {
        public S {
            Objects.requireNonNull(value, "S value");
        }

        @Override
        public String typeName() {
            return "S";
        }
    }

    /** A number as DynamoDB's decimal text, checked against DynamoDB's own limits. */
    record N(String text) implements DdbValue {
        public N {
            DdbNumbers.validate(text);
        }

        public BigDecimal toBigDecimal() {
            return new BigDecimal(text);
        }

        @Override
        public String typeName() {
            return "N";
        }
    }

    record B(byte[] bytes) implements DdbValue {
        public B {
            Objects.requireNonNull(bytes, "B value");
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof B other && Arrays.equals(bytes, other.bytes);
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(bytes);
        }

        @Override
        public String toString() {
            return "B[" + Base64.getEncoder().encodeToString(bytes) + "]";
        }

        @Override
        public String typeName() {
            return "B";
        }
    }

    record Bool(boolean value) implements DdbValue {
        // Two values only: readers share them, as a merge holds every change's image until it commits.
        public static final Bool TRUE = new Bool(true);
        public static final Bool FALSE = new Bool(false);

        public static Bool of(boolean value) {
            return value ? TRUE : FALSE;
        }

        @Override
        public String typeName() {
            return "BOOL";
        }
    }

    /** DynamoDB's NULL type: an attribute that is present and explicitly null. */
    record Null() implements DdbValue {
        public static final Null INSTANCE = new Null();

        @Override
        public String typeName() {
            return "NULL";
        }
    }

    /** A map; attribute order is kept as received so a round trip is byte-for-byte stable. */
    record M(Map<String, DdbValue> fields) implements DdbValue {
        public M {
            fields = ItemMap.copyOf(fields);
        }

        @Override
        public String typeName() {
            return "M";
        }
    }

    record L(List<DdbValue> elements) implements DdbValue {
        public L {
            elements = List.copyOf(elements);
        }

        @Override
        public String typeName() {
            return "L";
        }
    }

    record SS(List<String> elements) implements DdbValue {
        public SS {
            elements = List.copyOf(elements);
        }

        @Override
        public String typeName() {
            return "SS";
        }
    }

    record NS(List<String> elements) implements DdbValue {
        public NS {
            elements.forEach(DdbNumbers::check);
            elements = List.copyOf(elements);
        }

        @Override
        public String typeName() {
            return "NS";
        }
    }

    record BS(List<byte[]> elements) implements DdbValue {
        public BS {
            List<byte[]> copy = new ArrayList<>(elements.size());
            for (byte[] e : elements) {
                copy.add(Objects.requireNonNull(e, "BS element"));
            }
            elements = Collections.unmodifiableList(copy);
        }

        @Override
        public boolean equals(Object o) {
            if (!(o instanceof BS other) || other.elements.size() != elements.size()) {
                return false;
            }
            for (int i = 0; i < elements.size(); i++) {
                if (!Arrays.equals(elements.get(i), other.elements.get(i))) {
                    return false;
                }
            }
            return true;
        }

        @Override
        public int hashCode() {
            int h = 1;
            for (byte[] e : elements) {
                h = 31 * h + Arrays.hashCode(e);
            }
            return h;
        }

        @Override
        public String toString() {
            List<String> shown = new ArrayList<>();
            for (byte[] e : elements) {
                shown.add(Base64.getEncoder().encodeToString(e));
            }
            return "BS" + shown;
        }

        @Override
        public String typeName() {
            return "BS";
        }
    }
}
