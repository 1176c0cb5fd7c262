package dev.ddb2iceberg.workload;

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
 * What the DynamoDB table holds after a set of changes: each key's change with the highest
 * sequence number decides whether the item exists and what it is. Tests and the local demo check
 * the Iceberg table against it.
 */
public final class ExpectedTable {
  private final Map<Map<String, DdbValue>, Change> latest = new HashMap<>();

  public void apply(Collection<Change> changes) {
    for (Change c : changes) {
      latest.merge(c.keys(), c, (a, b) -> SequenceNumbers.compare(a.sequenceNumber(), b.sequenceNumber()) >= 0 ? a : b);
    }
  }

  public Map<Map<String, DdbValue>, Map<String, DdbValue>> items() {
    Map<Map<String, DdbValue>, Map<String, DdbValue>> out = new LinkedHashMap<>();
    latest.forEach((k, c) -> {
      if (c.newImage() != null) {
        out.put(k, c.newImage());
      }
    });
    return out;
  }

  /** A readable account of how two item sets differ, for assertion messages. */
  public static String diff(Map<Map<String, DdbValue>, Map<String, DdbValue>> expected,
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
