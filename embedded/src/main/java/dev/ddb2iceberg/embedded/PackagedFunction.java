package dev.ddb2iceberg.embedded;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Invokes a function's deployable jar in a fresh JVM, the way Lambda would: only that jar (plus
 * the runtime's own serialization library and any named extras, such as a local catalog's JDBC
 * driver) on the classpath, settings in real environment variables. Packaging mistakes (a class
 * shaded away, a lost service file) fail here rather than in AWS.
 */
public final class PackagedFunction {
    private PackagedFunction() {}

    /** The function's response, what it logged, and how its JVM exited. */
    public record Result(int exit, String response, String log) {}

    /**
     * @param extras classes whose jars join the classpath (what the Lambda runtime or a layer gives)
     */
    public static Result invoke(Path jar, String handlerClass, Map<String, String> env, Path event, Class<?>... extras)
            throws IOException, InterruptedException {
        return invoke(jar, handlerClass, env, event, List.of(), extras);
    }

    /** As above, with JVM options (for instance the flags the Lambda runtime uses). */
    public static Result invoke(
            Path jar,
            String handlerClass,
            Map<String, String> env,
            Path event,
            List<String> jvmOptions,
            Class<?>... extras)
            throws IOException, InterruptedException {
        if (!Files.isRegularFile(jar)) {
            throw new IllegalStateException(jar + " is missing: run `mvn package` first");
        }
        Path launcher = Files.createTempDirectory("packaged-invoker");
        // Only the launcher class itself: the rest of this module must not hide what the jar lacks.
        Path classFile = launcher.resolve("dev/ddb2iceberg/embedded/PackagedInvoker.class");
        Files.createDirectories(classFile.getParent());
        try (InputStream in = PackagedInvoker.class.getResourceAsStream("PackagedInvoker.class")) {
            Files.copy(in, classFile);
        }
        List<String> classpath = new ArrayList<>(List.of(jar.toString(), launcher.toString()));
        for (Class<?> extra : extras) {
            classpath.add(Path.of(extra.getProtectionDomain()
                            .getCodeSource()
                            .getLocation()
                            .getPath())
                    .toString());
        }
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        List<String> command = new ArrayList<>(List.of(java.toString()));
        command.addAll(jvmOptions);
        command.addAll(List.of(
                "-cp",
                String.join(File.pathSeparator, classpath),
                PackagedInvoker.class.getName(),
                handlerClass,
                event.toString(),
                launcher.resolve("response.json").toString()));
        ProcessBuilder pb = new ProcessBuilder(command);
        pb.environment().clear();
        pb.environment().putAll(env);
        Path log = launcher.resolve("log.txt");
        pb.redirectErrorStream(true).redirectOutput(log.toFile());
        Process p = pb.start();
        if (!p.waitFor(5, TimeUnit.MINUTES)) {
            p.destroyForcibly();
            throw new IllegalStateException("the packaged function did not finish within 5 minutes");
        }
        Path response = launcher.resolve("response.json");
        return new Result(
                p.exitValue(),
                Files.exists(response) ? Files.readString(response, StandardCharsets.UTF_8) : "",
                Files.readString(log, StandardCharsets.UTF_8));
    }
}
