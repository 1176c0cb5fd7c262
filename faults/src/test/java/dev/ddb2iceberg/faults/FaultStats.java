package dev.ddb2iceberg.faults;

import java.util.Map;
import java.util.TreeMap;

/** Counts of what the randomized runs did and injected, summed over seeds, for the report. */
final class FaultStats {
    private final Map<String, Long> counts = new TreeMap<>();

    synchronized void count(String what) {
        add(what, 1);
    }

    synchronized void add(String what, long n) {
        counts.merge(what, n, Long::sum);
    }

    synchronized long get(String what) {
        return counts.getOrDefault(what, 0L);
    }

    @Override
    public synchronized String toString() {
        StringBuilder sb = new StringBuilder();
        counts.forEach((k, v) -> sb.append(String.format("  %,10d  %s%n", v, k)));
        return sb.toString();
    }
}
