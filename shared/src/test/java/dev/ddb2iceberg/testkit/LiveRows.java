package dev.ddb2iceberg.testkit;

import dev.ddb2iceberg.lookup.LiveRow;
import dev.ddb2iceberg.lookup.LiveRowLookup;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * What a live-row lookup found for {@code keys} (the keys it was asked for, in order), as comparable
 * text: each key that has rows, with its rows as "file@position#sequence".
 */
public final class LiveRows {
    private LiveRows() {}

    public static Map<List<Object>, Set<String>> described(List<List<Object>> keys, LiveRowLookup.Found found) {
        if (found.rows().size() != keys.size()) {
            throw new AssertionError(
                    "the lookup answered " + found.rows().size() + " positions for " + keys.size() + " keys");
        }
        Map<List<Object>, Set<String>> out = new HashMap<>();
        for (int i = 0; i < keys.size(); i++) {
            List<LiveRow> live = found.rows().get(i);
            if (!live.isEmpty()) {
                Set<String> s = new TreeSet<>();
                live.forEach(r -> s.add(r.task().file().location() + "@" + r.position() + "#" + r.sequence()));
                out.put(keys.get(i), s);
            }
        }
        return out;
    }
}
