package dev.ddb2iceberg.faults;

import java.util.ArrayList;
import java.util.List;

/**
 * What one seed's run did, step by step: every role adds its steps here, and a broken invariant
 * throws {@link #failure} with the seed, the command that reruns it, and the steps so far.
 */
final class Trail {
    private final long seed;
    private final List<String> steps = new ArrayList<>();

    Trail(long seed) {
        this.seed = seed;
    }

    long seed() {
        return seed;
    }

    void add(String step) {
        steps.add(step);
    }

    AssertionError failure(String what) {
        return new AssertionError(
                "seed " + seed + " (rerun: mvn -B test -pl faults -am -Dsurefire.failIfNoSpecifiedTests=false"
                        + " -Dtest=PipelineUnderFaultsTest -Dfaults.seed=" + seed + "): " + what + "\nsteps:\n  "
                        + String.join("\n  ", steps));
    }

    /** An exception's class and the first line of its message, for a step that failed. */
    static String firstLine(Throwable e) {
        String m = e.getClass().getSimpleName() + ": " + e.getMessage();
        int nl = m.indexOf('\n');
        return nl < 0 ? m : m.substring(0, nl);
    }
}
