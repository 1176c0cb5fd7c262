package dev.ddb2iceberg.local;

import java.util.Collection;
import java.util.Locale;

/** The known name a misspelled one was most likely meant to be, by edit distance. */
final class NearestName {
    private NearestName() {}

    /**
     * The name of {@code known} closest to {@code name} (ignoring case), or null when none is close:
     * within a third of the name's length, and at least 2 edits (a dropped letter, a swapped pair).
     */
    static String of(String name, Collection<String> known) {
        String wanted = name.toUpperCase(Locale.ROOT);
        int allowed = Math.max(2, wanted.length() / 3);
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        for (String candidate : known) {
            int d = distance(wanted, candidate.toUpperCase(Locale.ROOT));
            if (d < bestDistance) {
                best = candidate;
                bestDistance = d;
            }
        }
        return bestDistance <= allowed ? best : null;
    }

    /** Levenshtein distance: insertions, deletions and substitutions of one character each. */
    static int distance(String a, String b) {
        int[] previous = new int[b.length() + 1];
        int[] current = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            previous[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            current[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int substitution = previous[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
                current[j] = Math.min(substitution, Math.min(previous[j], current[j - 1]) + 1);
            }
            int[] swap = previous;
            previous = current;
            current = swap;
        }
        return previous[b.length()];
    }
}
