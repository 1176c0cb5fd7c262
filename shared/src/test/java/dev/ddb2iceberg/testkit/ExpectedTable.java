package dev.ddb2iceberg.testkit;

import dev.ddb2iceberg.config.RemovalPolicy;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.SequenceNumbers;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What the Iceberg table should hold after a set of changes: each key's changes in sequence order,
 * a change no newer than the key's last one skipped (as the merger skips redelivered ones). Under
 * the default removal policy that is exactly what the DynamoDB table holds; under TTL_EXPIRIES
 * keep or mark and DELETES=soft, removed items keep their rows, marked with the removal's time.
 * Tests, the fault harness and the local demo check the Iceberg table against it.
 */
public final class ExpectedTable {
    /** A key's state: the sequence number of its last change, its item (null: no row) and its marks. */
    private record State(String sequence, Map<String, DdbValue> item, Long expiredAt, Long deletedAt) {}

    private final Map<Map<String, DdbValue>, State> states = new HashMap<>();

    public void apply(Collection<Change> changes) {
        apply(changes, RemovalPolicy.DEFAULT);
    }

    /** Applies changes merged under {@code policy} (a live table's policy may change between merges). */
    public void apply(Collection<Change> changes, RemovalPolicy policy) {
        List<Change> ordered = new ArrayList<>(changes);
        ordered.sort((a, b) -> SequenceNumbers.compare(a.sequenceNumber(), b.sequenceNumber()));
        for (Change c : ordered) {
            State s = states.get(c.keys());
            if (s != null && SequenceNumbers.compare(s.sequence(), c.sequenceNumber()) >= 0) {
                continue;
            }
            if (c.newImage() != null) {
                states.put(c.keys(), new State(c.sequenceNumber(), c.newImage(), null, null));
            } else if (c.ttlExpiry() && policy.ttlExpiries() == RemovalPolicy.TtlExpiries.KEEP) {
                continue; // the row stays as it was, and so does its last change
            } else if (policy.keepsRow(c.ttlExpiry()) && s != null && s.item() != null) {
                long at = c.approximateCreationMillis();
                // The row carries the newest removal's mark only (only a removal of a removed item, which
                // DynamoDB never streams, could meet an older one).
                states.put(
                        c.keys(),
                        new State(
                                c.sequenceNumber(),
                                s.item(),
                                c.ttlExpiry() ? Long.valueOf(at) : null,
                                c.ttlExpiry() ? null : Long.valueOf(at)));
            } else {
                states.put(c.keys(), new State(c.sequenceNumber(), null, null, null));
            }
        }
    }

    /** The items that have a row, by key. */
    public Map<Map<String, DdbValue>, Map<String, DdbValue>> items() {
        Map<Map<String, DdbValue>, Map<String, DdbValue>> out = new LinkedHashMap<>();
        states.forEach((k, s) -> {
            if (s.item() != null) {
                out.put(k, s.item());
            }
        });
        return out;
    }

    /**
     * The removal marks of rows that removals kept, by key: column ({@link RemovalPolicy#EXPIRED_AT},
     * {@link RemovalPolicy#DELETED_AT}) to epoch milliseconds, as {@code TableItems.marks} reads them.
     */
    public Map<Map<String, DdbValue>, Map<String, Long>> marks() {
        Map<Map<String, DdbValue>, Map<String, Long>> out = new LinkedHashMap<>();
        states.forEach((k, s) -> {
            Map<String, Long> marks = new LinkedHashMap<>();
            if (s.expiredAt() != null) {
                marks.put(RemovalPolicy.EXPIRED_AT, s.expiredAt());
            }
            if (s.deletedAt() != null) {
                marks.put(RemovalPolicy.DELETED_AT, s.deletedAt());
            }
            if (s.item() != null && !marks.isEmpty()) {
                out.put(k, marks);
            }
        });
        return out;
    }

    /** A readable account of how two item sets differ, for assertion messages. */
    public static String diff(
            Map<Map<String, DdbValue>, Map<String, DdbValue>> expected,
            Map<Map<String, DdbValue>, Map<String, DdbValue>> actual) {
        List<String> lines = new ArrayList<>();
        for (var e : expected.entrySet()) {
            Map<String, DdbValue> a = actual.get(e.getKey());
            if (a == null) {
                lines.add("missing " + e.getKey());
            } else if (!a.equals(e.getValue())) {
                lines.add("differs " + e.getKey() + ": expected " + e.getValue() + " but was " + a);
            }
        }
        for (var k : actual.keySet()) {
            if (!expected.containsKey(k)) {
                lines.add("unexpected " + k + " = " + actual.get(k));
            }
        }
        return lines.size() > 10 ? lines.subList(0, 10) + " ... (" + lines.size() + " differences)" : lines.toString();
    }
}
