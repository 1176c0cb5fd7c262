package dev.ddb2iceberg.embedded;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * AWS's own template tools (cfn-lint, which runs the SAM translator first) and moto, for the tests
 * that use them (the local module's template checks, the maintenance tests on moto's Glue). They are Python packages: when a pinned one is missing, {@link #ensureInstalled()}
 * installs them with pip, and only if that fails stops the test with the command to run. A test
 * that needs them never passes without them.
 */
public final class AwsTools {
    public static final List<String> PACKAGES =
            List.of("cfn-lint==1.51.0", "aws-sam-translator==1.110.0", "moto[server]==5.2.1", "boto3");
    public static final String INSTALL_COMMAND =
            "python3 -m pip install --user cfn-lint==1.51.0 aws-sam-translator==1.110.0 'moto[server]==5.2.1' boto3";
    public static final Path SCRIPTS = ProjectFiles.root().resolve("embedded/aws-tools");

    private static boolean ready;

    private AwsTools() {}

    /** Checks the pinned packages, installs them when one is missing, and fails the test if it cannot. */
    public static synchronized void ensureInstalled() {
        if (ready) {
            return;
        }
        Result check = python(List.of(SCRIPTS.resolve("check_tools.py").toString()), Duration.ofMinutes(1));
        if (check.exit() != 0) {
            System.err.println(
                    "Installing AWS's template tools (missing: " + check.out().strip() + "): " + INSTALL_COMMAND);
            List<String> install = new ArrayList<>(List.of("-m", "pip", "install", "--user"));
            install.addAll(PACKAGES);
            Result pip = python(install, Duration.ofMinutes(10));
            Result again = python(List.of(SCRIPTS.resolve("check_tools.py").toString()), Duration.ofMinutes(1));
            if (again.exit() != 0) {
                fail("The template checks need Python 3 packages that are missing: "
                        + again.out().strip()
                        + ".\nInstalling them failed (pip exited " + pip.exit() + "):\n" + tail(pip.err())
                        + "\nRun this, then build again:\n    " + INSTALL_COMMAND);
            }
        }
        ready = true;
    }

    /** Runs python3 with these arguments in the project's folder, within a time limit. */
    public static Result python(List<String> args, Duration limit) {
        return python(args, Map.of(), limit);
    }

    public static Result python(List<String> args, Map<String, String> env, Duration limit) {
        List<String> command = new ArrayList<>(List.of("python3"));
        command.addAll(args);
        ProcessBuilder pb =
                new ProcessBuilder(command).directory(ProjectFiles.root().toFile());
        pb.environment().putAll(env);
        Process p;
        try {
            p = pb.start();
        } catch (IOException e) {
            return fail("python3 is not on the PATH (" + e.getMessage() + "). The template checks need Python 3.9+;"
                    + " install it, then run:\n    " + INSTALL_COMMAND);
        }
        CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> text(p.getInputStream()));
        CompletableFuture<String> err = CompletableFuture.supplyAsync(() -> text(p.getErrorStream()));
        try {
            if (!p.waitFor(limit.toSeconds(), TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return fail(String.join(" ", command) + " did not finish within " + limit);
            }
            return new Result(p.exitValue(), out.get(), err.get());
        } catch (Exception e) {
            p.destroyForcibly();
            throw new IllegalStateException(String.join(" ", command), e);
        }
    }

    public static String text(InputStream in) {
        try (in) {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            in.transferTo(bytes);
            return bytes.toString(StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String tail(String text) {
        String[] lines = text.strip().split("\n");
        return String.join("\n", List.of(lines).subList(Math.max(0, lines.length - 15), lines.length));
    }

    public record Result(int exit, String out, String err) {}
}
