package dev.ddb2iceberg.local;

import java.nio.file.Path;
import picocli.CommandLine.Option;

/** The options of commands that act on a deployed-like stack: its settings file and the template. */
final class LocalStackOptions {
  @Option(names = {"-n", "--env-vars"}, defaultValue = "events/env-local.json", paramLabel = "FILE",
      description = "JSON environment overrides, in sam's shape (default: ${DEFAULT-VALUE}, the local stack)")
  Path envVars;

  @Option(names = {"-t", "--template"}, defaultValue = "template.yaml", paramLabel = "FILE",
      description = "the SAM template (default: ${DEFAULT-VALUE})")
  Path template;
}
