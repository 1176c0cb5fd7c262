package dev.ddb2iceberg.interop;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Apache Spark 3.5 in local mode, in a JVM of its own (Spark and the pipeline cannot share a
 * classpath), on the classpath the spark-reader module resolved: runs queries and returns each
 * one's rows as Spark's JSON, or its error. One process serves every query of a test class, since
 * starting Spark costs seconds.
 */
final class SparkProcess {
    /** The JVM options Spark's own launcher adds on Java 17 (spark-submit is not used here). */
    private static final List<String> JAVA_17_OPENS = List.of(
            "java.lang",
            "java.lang.invoke",
            "java.lang.reflect",
            "java.io",
            "java.net",
            "java.nio",
            "java.util",
            "java.util.concurrent",
            "java.util.concurrent.atomic",
            "jdk.internal.ref",
            "sun.nio.ch",
            "sun.nio.cs",
            "sun.security.action",
            "sun.util.calendar");

    /** Rows of one query, or the error Spark raised. */
    record Result(String query, List<String> rows, String error) {
        List<String> rowsOrFail() {
            if (error != null) {
                throw new AssertionError("Spark failed on: " + error);
            }
            return rows;
        }
    }

    private SparkProcess() {}

    /** Runs the named queries with the given settings; {@code work} keeps the outputs and Spark's log. */
    static Map<String, Result> run(Path work, Map<String, String> conf, Map<String, String> queries) {
        Path out = work.resolve("spark-out");
        Path log = work.resolve("spark.log");
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("-Xmx2g");
        JAVA_17_OPENS.forEach(p -> command.add("--add-opens=java.base/" + p + "=ALL-UNNAMED"));
        command.add("-cp");
        command.add(classpath());
        command.add("dev.ddb2iceberg.interop.spark.SparkQueries");
        command.add(out.toString());
        conf.forEach((k, v) -> {
            command.add("--conf");
            command.add(k + "=" + v);
        });
        queries.forEach((name, sql) -> {
            command.add("--query");
            command.add(name + "=" + sql);
        });
        try {
            Files.createDirectories(work);
            for (Path stale : listing(out)) { // a kept folder (spark.work) holds the last run's answers
                Files.delete(stale);
            }
            Process spark = new ProcessBuilder(command)
                    .redirectErrorStream(true)
                    .redirectOutput(log.toFile())
                    .start();
            // A guard against a hung Spark, not a timing assertion: it starts in seconds.
            if (!spark.waitFor(10, TimeUnit.MINUTES)) {
                spark.destroyForcibly();
                throw new AssertionError("Spark did not finish within 10 minutes; its log: " + log);
            }
            if (spark.exitValue() != 0) {
                throw new AssertionError(
                        "Spark exited with " + spark.exitValue() + "; the end of its log (" + log + "):\n" + tail(log));
            }
            Map<String, Result> results = new LinkedHashMap<>();
            for (Map.Entry<String, String> q : queries.entrySet()) {
                Path rows = out.resolve(q.getKey() + ".jsonl");
                Path error = out.resolve(q.getKey() + ".error");
                results.put(
                        q.getKey(),
                        Files.exists(rows)
                                ? new Result(q.getValue(), Files.readAllLines(rows, StandardCharsets.UTF_8), null)
                                : new Result(
                                        q.getValue(),
                                        List.of(),
                                        Files.exists(error) ? Files.readString(error) : "no output"));
            }
            return results;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while Spark ran", e);
        }
    }

    /** The spark-reader module's classes and its resolved dependencies (see interop/pom.xml). */
    static String classpath() {
        Path classes = Path.of(System.getProperty("spark.reader.classes", "spark-reader/target/classes"));
        Path file = Path.of(System.getProperty("spark.reader.classpath", "spark-reader/target/spark-classpath.txt"));
        if (!Files.isDirectory(classes) || !Files.isRegularFile(file)) {
            throw new AssertionError("Spark's classpath is not built (" + file + "); build with the reactor: "
                    + "mvn -B verify -pl interop -am");
        }
        try {
            return classes + File.pathSeparator + Files.readString(file).strip();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static List<Path> listing(Path folder) throws IOException {
        if (!Files.isDirectory(folder)) {
            return List.of();
        }
        try (var files = Files.list(folder)) {
            return files.toList();
        }
    }

    private static String tail(Path log) throws IOException {
        List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
    }
}
