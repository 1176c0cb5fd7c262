package dev.ddb2iceberg.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.config.Setting;
import dev.ddb2iceberg.config.Settings;
import dev.ddb2iceberg.embedded.ProjectFiles;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The reference pages agree with the code: the generated ones are what {@link ReferenceDocs} makes
 * now, and each names everything it must (every template parameter, every setting, every variable
 * a deployed function reads, every command, every {@code ddb2iceberg.*} property).
 */
class ReferenceDocsTest {
    private static final Path ROOT = ProjectFiles.root();
    private static final SamTemplate TEMPLATE = SamTemplate.read(ROOT.resolve("template.yaml"));

    @Test
    void theCommittedReferencePagesAreTheOnesTheCodeMakes() {
        for (Map.Entry<Path, String> page : ReferenceDocs.pages(ROOT).entrySet()) {
            assertEquals(
                    page.getValue(),
                    ReferenceDocs.read(ROOT.resolve(page.getKey())),
                    page.getKey() + " is out of date with the code: run ./ddb2iceberg docs and commit it");
        }
    }

    @Test
    void theConfigurationReferenceNamesEveryTemplateParameterSettingAndVariableAFunctionReads() {
        Set<String> rows = firstCells(ReferenceDocs.read(ROOT.resolve(ReferenceDocs.CONFIGURATION)));
        Set<String> missing = new TreeSet<>();
        TEMPLATE.root().path("Parameters").fieldNames().forEachRemaining(p -> {
            if (!rows.contains(p)) {
                missing.add("template parameter " + p);
            }
        });
        for (Setting s : Settings.all()) {
            if (!rows.contains(s.name())) {
                missing.add("setting " + s.name());
            }
        }
        for (String variable : DeployedEnvironment.readers(TEMPLATE).keySet()) {
            if (!rows.contains(variable)) {
                missing.add("variable " + variable + ", which a deployed function reads");
            }
        }
        assertTrue(missing.isEmpty(), ReferenceDocs.CONFIGURATION + " lacks " + missing);
    }

    @Test
    void theCliReferenceHasEveryCommandsHelp() {
        String page = ReferenceDocs.read(ROOT.resolve(ReferenceDocs.CLI));
        for (Map.Entry<String, CommandLine> command :
                new CommandLine(new Main()).getSubcommands().entrySet()) {
            assertTrue(
                    page.contains("\n## " + command.getKey() + "\n")
                            && page.contains(command.getValue()
                                    .getUsageMessage(CommandLine.Help.Ansi.OFF)
                                    .stripTrailing()),
                    ReferenceDocs.CLI + " lacks the help of command " + command.getKey());
        }
    }

    @Test
    void theTablePropertiesReferenceNamesEveryPipelineProperty() throws Exception {
        Path pagePath = Path.of("docs", "reference", "table-properties.md");
        String page = ReferenceDocs.read(ROOT.resolve(pagePath));
        Set<String> missing = new TreeSet<>();
        for (Field f : PipelineProperties.class.getDeclaredFields()) {
            if (f.getType() == String.class
                    && Modifier.isStatic(f.getModifiers())
                    && Modifier.isPublic(f.getModifiers())) {
                String key = (String) f.get(null);
                if (key.startsWith("ddb2iceberg.") && !page.contains("`" + key + "`")) {
                    missing.add(f.getName() + " = " + key);
                }
            }
        }
        assertTrue(missing.isEmpty(), pagePath + " lacks " + missing);
    }

    /** {@code docs --check} finds a stale page and changes nothing; {@code docs} writes the pages; then the check passes. */
    @Test
    void theDocsCommandChecksAndWritesTheGeneratedPages(@TempDir Path project) throws Exception {
        Files.copy(ROOT.resolve("template.yaml"), project.resolve("template.yaml"));
        Files.createDirectories(project.resolve("docs/reference"));
        Files.writeString(project.resolve(ReferenceDocs.CONFIGURATION), "# an old page\n");

        StringWriter err = new StringWriter();
        int stale = Main.execute(
                new PrintWriter(new StringWriter()),
                new PrintWriter(err, true),
                "docs",
                "--check",
                "--project",
                project.toString());
        assertEquals(1, stale, "docs --check on stale pages; stderr: " + err);
        assertTrue(err.toString().contains(ReferenceDocs.CONFIGURATION + " is out of date"), "stderr: " + err);
        assertEquals(
                "# an old page\n",
                Files.readString(project.resolve(ReferenceDocs.CONFIGURATION)),
                "--check changed the page");

        StringWriter out = new StringWriter();
        assertEquals(
                0,
                Main.execute(
                        new PrintWriter(out, true),
                        new PrintWriter(err, true),
                        "docs",
                        "--project",
                        project.toString()));
        assertTrue(out.toString().contains("Wrote"), "stdout: " + out);
        for (Map.Entry<Path, String> page : ReferenceDocs.pages(ROOT).entrySet()) {
            assertEquals(
                    page.getValue(), Files.readString(project.resolve(page.getKey())), page.getKey() + " as written");
        }
        assertEquals(
                0,
                Main.execute(
                        new PrintWriter(new StringWriter()),
                        new PrintWriter(err, true),
                        "docs",
                        "--check",
                        "--project",
                        project.toString()),
                "docs --check after docs; stderr: " + err);
    }

    /** The first cell of each table row, without its backticks. */
    private static Set<String> firstCells(String page) {
        Set<String> cells = new TreeSet<>();
        Matcher m = Pattern.compile("(?m)^\\| `([^`]+)` \\|").matcher(page);
        while (m.find()) {
            cells.add(m.group(1));
        }
        return cells;
    }
}
