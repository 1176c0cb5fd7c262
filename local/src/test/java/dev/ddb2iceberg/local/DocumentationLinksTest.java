package dev.ddb2iceberg.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.embedded.ProjectFiles;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * No relative link in README.md, BENCHMARKS.md or docs/ is broken: each names a file that exists
 * and, with a {@code #fragment}, a heading of that file (as GitHub makes anchors of headings).
 */
class DocumentationLinksTest {
    private static final Pattern LINK = Pattern.compile("\\[[^\\]]*\\]\\(([^)\\s]+)\\)");
    private static final Pattern HEADING = Pattern.compile("^#{1,6} +(.+?) *$");

    @Test
    void everyRelativeLinkInTheDocumentationResolves() {
        Path root = ProjectFiles.root();
        List<Path> pages = pages(root);
        assertTrue(pages.size() > 15, "the documentation pages: " + pages);
        List<String> broken = new ArrayList<>();
        for (Path page : pages) {
            broken.addAll(brokenLinks(root, page));
        }
        assertTrue(broken.isEmpty(), broken.size() + " broken links:\n" + String.join("\n", broken));
    }

    @Test
    void theReadmeIsAFirstPageOfAtMostTwoHundredLines() throws IOException {
        List<String> lines = Files.readAllLines(ProjectFiles.root().resolve("README.md"));
        assertTrue(lines.size() <= 200, "README.md has " + lines.size() + " lines; move detail to docs/");
        assertTrue(
                lines.contains(
                                "./ddb2iceberg demo     # builds once, then runs the whole pipeline locally and checks the result")
                        && lines.contains(
                                "mvn -B verify          # builds everything and runs the tests (the same command CI runs)"),
                "README.md shows the two commands, the demo and the tests");
    }

    /** The check itself: a missing file, a missing heading and a good link, in a folder of its own. */
    @Test
    void aMissingFileOrHeadingIsReportedAndAGoodLinkIsNot(@TempDir Path dir) throws IOException {
        Files.createDirectories(dir.resolve("docs"));
        Files.writeString(dir.resolve("docs/target.md"), "# Title\n\n## Query the table with `Spark`: here\n");
        Files.writeString(
                dir.resolve("README.md"),
                "[good](docs/target.md#query-the-table-with-spark-here) [web](https://example.com/x.md)\n"
                        + "[gone](docs/missing.md) [no heading](docs/target.md#nowhere)\n"
                        + "```\n[in code](docs/also-missing.md)\n```\n");
        List<String> broken = brokenLinks(dir, dir.resolve("README.md"));
        assertEquals(2, broken.size(), "broken: " + broken);
        assertTrue(
                broken.get(0).contains("docs/missing.md") && broken.get(1).contains("#nowhere"), "broken: " + broken);
    }

    private static List<Path> pages(Path root) {
        List<Path> pages = new ArrayList<>(List.of(root.resolve("README.md"), root.resolve("BENCHMARKS.md")));
        try (Stream<Path> docs = Files.walk(root.resolve("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return pages;
    }

    /** Each broken relative link of {@code page}, as "page:line: link (why)". */
    private static List<String> brokenLinks(Path root, Path page) {
        List<String> broken = new ArrayList<>();
        Map<Path, Set<String>> anchors = new HashMap<>();
        List<String> lines = readLines(page);
        boolean inCode = false;
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            if (line.strip().startsWith("```")) {
                inCode = !inCode;
                continue;
            }
            if (inCode) {
                continue;
            }
            Matcher m = LINK.matcher(line.replaceAll("`[^`]*`", ""));
            while (m.find()) {
                String link = m.group(1);
                if (link.matches("^[a-z]+:.*")) {
                    continue; // https:, mailto: and the like
                }
                int hash = link.indexOf('#');
                String file = hash < 0 ? link : link.substring(0, hash);
                Path target =
                        file.isEmpty() ? page : page.getParent().resolve(file).normalize();
                String where = root.relativize(page) + ":" + (i + 1) + ": " + link;
                if (!Files.exists(target)) {
                    broken.add(where + " (no such file)");
                } else if (hash >= 0
                        && !anchors.computeIfAbsent(target, DocumentationLinksTest::anchorsOf)
                                .contains(link.substring(hash + 1))) {
                    broken.add(where + " (no such heading in " + root.relativize(target) + ")");
                }
            }
        }
        return broken;
    }

    /** The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as '-'. */
    private static Set<String> anchorsOf(Path page) {
        Set<String> anchors = new TreeSet<>();
        if (Files.isDirectory(page)) {
            return anchors;
        }
        Map<String, Integer> seen = new HashMap<>();
        boolean inCode = false;
        for (String line : readLines(page)) {
            if (line.strip().startsWith("```")) {
                inCode = !inCode;
            }
            Matcher m = HEADING.matcher(line);
            if (inCode || !m.matches()) {
                continue;
            }
            String slug = m.group(1)
                    .toLowerCase(Locale.ROOT)
                    .replaceAll("[^\\p{L}\\p{N} _-]", "")
                    .replace(' ', '-');
            int n = seen.merge(slug, 1, Integer::sum);
            anchors.add(n == 1 ? slug : slug + "-" + (n - 1));
        }
        return anchors;
    }

    private static List<String> readLines(Path page) {
        try {
            return Files.readAllLines(page);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
