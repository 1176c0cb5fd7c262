package dev.ddb2iceberg.testkit;

import dev.ddb2iceberg.lookup.LiveRowLookup;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/** What a live-row lookup found, as comparable text: each key's rows as "file@position#sequence". */
public final class LiveRows {
    private LiveRows() {}

    public static Map<List<Object>, Set<String>> described(LiveRowLookup.Found found) {
        Map<List<Object>, Set<String>> out = new HashMap<>();
        found.rows().forEach((key, live) -> {
            Set<String> s = new TreeSet<>();
            live.forEach(r -> s.add(r.task().file().location() + "@" + r.position() + "#" + r.sequence()));
            out.put(key, s);
        });
        return out;
    }
}
