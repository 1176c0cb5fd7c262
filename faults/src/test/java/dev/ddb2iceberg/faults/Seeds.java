package dev.ddb2iceberg.faults;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;

/**
 * Which seeds a run tries, from system properties the module's pom passes on:
 *
 * <ul>
 *   <li>{@code -Dfaults.seed=S}: that one seed alone (a failure's rerun);
 *   <li>{@code -Dfaults.from=F -Dfaults.seeds=N}: seeds F to F+N-1 (default 1 to 200), the fixed
 *       range every build tries;
 *   <li>{@code -Dfaults.commitSeeds=K} (default in the pom): K more seeds from a window chosen by the
 *       checked-out commit's hash, so that each commit tries combinations no earlier build tried. The
 *       window is printed; a failure names its seed either way.
 * </ul>
 */
final class Seeds {
    /** Commit windows start here, past the fixed range and the ranges earlier soaks used. */
    static final long COMMIT_WINDOWS_FROM = 10_000_000L;

    private Seeds() {}

    static long[] chosen() {
        String one = System.getProperty("faults.seed", "");
        if (!one.isBlank()) {
            return new long[] {Long.parseLong(one.trim())};
        }
        long from = Long.parseLong(System.getProperty("faults.from", "1").trim());
        int n = Integer.parseInt(System.getProperty("faults.seeds", "200").trim());
        int k = Integer.parseInt(System.getProperty("faults.commitSeeds", "0").trim());
        LongStream fixed = LongStream.range(from, from + n);
        if (k <= 0) {
            System.out.println("Fault seeds " + from + ".." + (from + n - 1));
            return fixed.toArray();
        }
        String commit = headCommit();
        long window = windowStart(commit, k);
        System.out.println("Fault seeds " + from + ".." + (from + n - 1) + ", and for commit " + commit + " " + window
                + ".." + (window + k - 1) + " (rerun one: -Dfaults.seed=N)");
        return LongStream.concat(fixed, LongStream.range(window, window + k)).toArray();
    }

    /** The first seed of a commit's window: its hash's first 28 bits pick one of 2^28 windows of k seeds. */
    static long windowStart(String commit, int k) {
        long bits = Long.parseLong(commit.substring(0, 7), 16);
        return COMMIT_WINDOWS_FROM + bits * k;
    }

    /** The checked-out commit, from git; a build outside a git checkout fails with what to pass instead. */
    private static String headCommit() {
        try {
            Process git = new ProcessBuilder("git", "rev-parse", "HEAD")
                    .redirectErrorStream(true)
                    .start();
            String out = new String(git.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            if (git.waitFor(30, TimeUnit.SECONDS) && git.exitValue() == 0 && out.matches("[0-9a-f]{40}")) {
                return out;
            }
            throw new IllegalStateException("git rev-parse HEAD answered: " + out);
        } catch (IOException | IllegalStateException e) {
            throw new IllegalStateException(
                    "The commit's fault seeds need the commit's hash from git (" + e.getMessage()
                            + "); outside a git checkout, run with -Dfaults.commitSeeds=0",
                    e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
