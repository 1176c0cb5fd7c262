package dev.ddb2iceberg.local;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code docs [--check]}: writes (or checks) the reference pages made from the code; see {@link ReferenceDocs}. */
@Command(
        name = "docs",
        mixinStandardHelpOptions = true,
        description = "Regenerate docs/reference/configuration.md (from template.yaml and the settings catalogue)"
                + " and docs/reference/cli.md (from this help).")
final class DocsCommand implements Callable<Integer> {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Option(names = "--check", description = "change nothing; exit with 1 if a page is out of date")
    boolean check;

    @Option(names = "--project", paramLabel = "DIR", description = "the project folder (default: the current folder)")
    Path project = Path.of(".");

    @Override
    public Integer call() {
        if (!project.resolve("template.yaml").toFile().isFile()) {
            throw new UserError(project.toAbsolutePath().normalize()
                    + " holds no template.yaml: run from the project folder, or pass --project");
        }
        if (check) {
            List<Path> stale = ReferenceDocs.pages(project).entrySet().stream()
                    .filter(e -> !e.getValue().equals(ReferenceDocs.read(project.resolve(e.getKey()))))
                    .map(e -> e.getKey())
                    .toList();
            stale.forEach(p -> spec.commandLine().getErr().println(p + " is out of date: run ./ddb2iceberg docs"));
            return stale.isEmpty() ? 0 : 1;
        }
        List<Path> written = ReferenceDocs.write(project);
        spec.commandLine()
                .getOut()
                .println(written.isEmpty() ? "The reference pages are up to date." : "Wrote " + written);
        return 0;
    }
}
