package dev.ddb2iceberg.benchmarks;

/**
 * The machine-readable end of every benchmark: one {@code RESULT|measure|goal|measured} line per
 * figure, which {@code benchmarks/run} collects into the table BENCHMARKS.md shows (BENCHMARKS.md,
 * "What benchmarks/run prints").
 */
final class Results {
    private Results() {}

    static void report(String measure, String goal, String measured) {
        System.out.println("RESULT|" + measure + "|" + goal + "|" + measured);
    }
}
