package dev.ddb2iceberg.interop.spark;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.SparkSession;

/**
 * Runs SQL queries in one local Spark session and writes each query's rows, as Spark's own JSON
 * ({@code Dataset.toJSON}), to {@code <out>/<name>.jsonl}; a query that fails writes
 * {@code <out>/<name>.error} with the stack trace instead, and the others still run.
 *
 * <p>Usage: {@code SparkQueries <out-dir> [--conf key=value]... [--query name=SQL]...}
 *
 * <p>Started by the interop tests in a JVM of its own, because Spark 3.5 and the pipeline cannot
 * share a classpath (their Jackson and Iceberg versions differ).
 */
public final class SparkQueries {
    private SparkQueries() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            throw new IllegalArgumentException(
                    "usage: SparkQueries <out-dir> [--conf key=value]... [--query name=SQL]...");
        }
        Path out = Path.of(args[0]);
        Files.createDirectories(out);
        Map<String, String> conf = new LinkedHashMap<>();
        Map<String, String> queries = new LinkedHashMap<>();
        for (int i = 1; i < args.length; i += 2) {
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException(args[i] + " needs a value");
            }
            String[] kv = args[i + 1].split("=", 2);
            if (kv.length != 2) {
                throw new IllegalArgumentException(args[i] + " " + args[i + 1] + " is not key=value");
            }
            switch (args[i]) {
                case "--conf" -> conf.put(kv[0], kv[1]);
                case "--query" -> queries.put(kv[0], kv[1]);
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        SparkSession.Builder builder = SparkSession.builder().master("local[2]").appName("ddb2iceberg-interop");
        conf.forEach(builder::config);
        long started = System.nanoTime();
        SparkSession spark = builder.getOrCreate();
        System.out.printf("Spark session started in %d ms%n", (System.nanoTime() - started) / 1_000_000);
        try {
            for (Map.Entry<String, String> q : queries.entrySet()) {
                long start = System.nanoTime();
                try {
                    List<String> rows =
                            new ArrayList<>(spark.sql(q.getValue()).toJSON().collectAsList());
                    Files.write(out.resolve(q.getKey() + ".jsonl"), rows, StandardCharsets.UTF_8);
                    System.out.printf(
                            "query %s: %d rows in %d ms%n",
                            q.getKey(), rows.size(), (System.nanoTime() - start) / 1_000_000);
                } catch (Exception e) {
                    StringWriter trace = new StringWriter();
                    e.printStackTrace(new PrintWriter(trace));
                    Files.writeString(
                            out.resolve(q.getKey() + ".error"), q.getValue() + "\n" + trace, StandardCharsets.UTF_8);
                }
            }
        } finally {
            spark.stop();
        }
    }
}
