package dev.ddb2iceberg.interop;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The documented {@code spark-sql} command, read from its page ({@link #PAGE}) so the test runs
 * exactly what a user is told to type: the packages, every {@code --conf}, and the {@code -e} query.
 *
 * @param packages Maven coordinates after {@code --packages}
 * @param conf the {@code --conf} settings, in order, as printed
 * @param query the {@code -e} statement
 */
record ReadmeSparkCommand(List<String> packages, Map<String, String> conf, String query) {
    /** The page that prints the command, under the project folder. */
    static final String PAGE = "docs/getting-started/local.md";

    /** What the page points at: the local stack {@code ./ddb2iceberg up} runs. */
    static final String README_CATALOG = "$PWD/.local/catalog.db";

    static final String README_ENDPOINT = "http://127.0.0.1:9321";

    static ReadmeSparkCommand read(Path readme) {
        List<String> lines;
        try {
            lines = Files.readAllLines(readme);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        int start = -1;
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).startsWith("spark-sql --packages ")) {
                start = i;
                break;
            }
        }
        if (start < 0) {
            throw new AssertionError(readme + " has no line starting with 'spark-sql --packages '");
        }
        StringBuilder command = new StringBuilder();
        for (int i = start; i < lines.size(); i++) {
            String line = lines.get(i).strip();
            boolean continued = line.endsWith("\\");
            command.append(continued ? line.substring(0, line.length() - 1) : line)
                    .append(' ');
            if (!continued) {
                break;
            }
        }
        List<String> words = words(command.toString());
        List<String> packages = new ArrayList<>();
        Map<String, String> conf = new LinkedHashMap<>();
        String query = null;
        for (int i = 1; i < words.size(); i += 2) {
            String option = words.get(i);
            String value = words.get(i + 1);
            switch (option) {
                case "--packages" -> packages.addAll(List.of(value.split(",")));
                case "--conf" -> {
                    String[] kv = value.split("=", 2);
                    conf.put(kv[0], kv[1]);
                }
                case "-e" -> query = value;
                default ->
                    throw new AssertionError(
                            "README's spark-sql command has an option this test does not know: " + option);
            }
        }
        if (packages.isEmpty() || conf.isEmpty() || query == null) {
            throw new AssertionError("README's spark-sql command lacks --packages, --conf or -e: " + words);
        }
        return new ReadmeSparkCommand(List.copyOf(packages), conf, query);
    }

    /**
     * The settings pointed at this test's stack instead of the README's ({@code $PWD/.local} and
     * port 9321): the only two substitutions; both must be found.
     */
    Map<String, String> confFor(Path catalogFile, URI endpoint) {
        Map<String, String> out = new LinkedHashMap<>();
        boolean[] found = new boolean[2];
        conf.forEach((k, v) -> {
            found[0] |= v.contains(README_CATALOG);
            found[1] |= v.equals(README_ENDPOINT);
            out.put(
                    k,
                    v.replace(README_CATALOG, catalogFile.toAbsolutePath().toString())
                            .replace(README_ENDPOINT, endpoint.toString()));
        });
        if (!found[0] || !found[1]) {
            throw new AssertionError(
                    "README's Spark settings no longer name " + README_CATALOG + " and " + README_ENDPOINT
                            + " (the local stack's catalog and endpoint); update this test's substitutions: " + conf);
        }
        return out;
    }

    /** Splits a shell command into words, honouring double quotes (the README uses no other quoting). */
    private static List<String> words(String command) {
        List<String> words = new ArrayList<>();
        StringBuilder word = new StringBuilder();
        boolean quoted = false;
        boolean inWord = false;
        for (char c : command.toCharArray()) {
            if (c == '"') {
                quoted = !quoted;
                inWord = true;
            } else if (Character.isWhitespace(c) && !quoted) {
                if (inWord) {
                    words.add(word.toString());
                    word.setLength(0);
                    inWord = false;
                }
            } else {
                word.append(c);
                inWord = true;
            }
        }
        if (inWord) {
            words.add(word.toString());
        }
        return words;
    }
}
