package dev.ddb2iceberg.observe;

import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.Settings;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.URL;
import java.util.Collections;
import java.util.Comparator;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import org.slf4j.event.Level;

/**
 * How the pipeline logs, decided once from the process environment:
 * <ul>
 *   <li>format: JSON lines on standard output inside Lambda (when {@code AWS_LAMBDA_FUNCTION_NAME} is
 *       set), readable text on standard error elsewhere (the CLI keeps standard output for its
 *       answers); {@code LOG_FORMAT=json|text} overrides;
 *   <li>levels: the pipeline's own classes ({@code dev.ddb2iceberg}) at {@code LOG_LEVEL}, else
 *       Lambda's {@code AWS_LAMBDA_LOG_LEVEL}, else INFO; libraries at WARN (or the pipeline's level
 *       when that is stricter); {@code ddb2iceberg-logging.properties} files on the class path may
 *       set {@code level.<logger prefix>=<LEVEL>} (the embedded S3 server quiets itself that way).
 * </ul>
 * Tests may switch format and destination with {@link #use}.
 */
public final class LogSettings {
    /** The prefix of the pipeline's own loggers. */
    static final String PIPELINE = "dev.ddb2iceberg";

    public enum Format {
        JSON,
        TEXT
    }

    private static volatile LogSettings current = fromEnvironment(System.getenv());
    /** Whether text lines show an error's stack frames; JSON lines (Lambda's) always carry them. */
    private static volatile boolean textStackTraces = true;

    private final Format format;
    /** Where lines go; null for the standard stream of the moment (the local invoker redirects it). */
    private final PrintStream out;
    /** Logger-name prefix to level, longest prefix first; "" is the default for libraries. */
    private final Map<String, Level> levels;

    LogSettings(Format format, PrintStream out, Map<String, Level> levels) {
        this.format = format;
        this.out = out;
        TreeMap<String, Level> sorted = new TreeMap<>(
                Comparator.comparingInt(String::length).reversed().thenComparing(Comparator.naturalOrder()));
        sorted.putAll(levels);
        this.levels = Collections.unmodifiableMap(sorted);
    }

    static LogSettings current() {
        return current;
    }

    /** Switches format and destination (keeping the levels); returns the settings it replaced. */
    public static LogSettings use(Format format, PrintStream out) {
        LogSettings before = current;
        current = new LogSettings(format, out, before.levels);
        return before;
    }

    /**
     * Sets the pipeline's own level unless the user chose one with {@code LOG_LEVEL} (the local demo
     * quiets the functions this way and shows its own progress instead).
     */
    public static void defaultPipelineLevel(Level level) {
        if (Environment.system().raw(Settings.LOG_LEVEL) == null) {
            LogSettings before = current;
            Map<String, Level> levels = new TreeMap<>(before.levels);
            levels.put(PIPELINE, level);
            current = new LogSettings(before.format, before.out, levels);
        }
    }

    /**
     * Shows or hides the stack frames of errors in text lines (the local CLI hides them unless
     * asked with --verbose: the error's own line says what went wrong); returns the previous choice.
     */
    public static boolean textStackTraces(boolean shown) {
        boolean before = textStackTraces;
        textStackTraces = shown;
        return before;
    }

    static boolean textStackTraces() {
        return textStackTraces;
    }

    /** Restores settings returned by {@link #use}. */
    public static void restore(LogSettings settings) {
        current = settings;
    }

    static LogSettings fromEnvironment(Map<String, String> variables) {
        Environment env = new Environment(variables);
        Format inLambda = env.raw(Settings.AWS_LAMBDA_FUNCTION_NAME) != null ? Format.JSON : Format.TEXT;
        Format format =
                Format.valueOf(env.choice(Settings.LOG_FORMAT, inLambda.name()).toUpperCase(Locale.ROOT));
        String level = env.raw(Settings.LOG_LEVEL);
        if (level == null) {
            level = env.raw(Settings.AWS_LAMBDA_LOG_LEVEL);
        }
        Level pipeline = level(level == null ? Settings.AWS_LAMBDA_LOG_LEVEL.defaultValue() : level);
        Map<String, Level> levels = new TreeMap<>();
        levels.put("", pipeline.toInt() > Level.WARN.toInt() ? pipeline : Level.WARN);
        levels.putAll(classPathLevels());
        levels.put(PIPELINE, pipeline);
        return new LogSettings(format, null, levels);
    }

    /** A level name as SLF4J spells it; FATAL (Lambda's name) is ERROR, anything unknown is INFO. */
    static Level level(String name) {
        String n = name.trim().toUpperCase(Locale.ROOT);
        if (n.equals("FATAL")) {
            return Level.ERROR;
        }
        for (Level l : Level.values()) {
            if (l.name().equals(n)) {
                return l;
            }
        }
        return Level.INFO;
    }

    private static Map<String, Level> classPathLevels() {
        Map<String, Level> levels = new TreeMap<>();
        try {
            for (URL url : Collections.list(
                    LogSettings.class.getClassLoader().getResources("ddb2iceberg-logging.properties"))) {
                Properties p = new Properties();
                try (InputStream in = url.openStream()) {
                    p.load(in);
                }
                for (String key : p.stringPropertyNames()) {
                    if (key.startsWith("level.")) {
                        levels.put(key.substring("level.".length()), level(p.getProperty(key)));
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("Could not read ddb2iceberg-logging.properties from the class path", e);
        }
        return levels;
    }

    Format format() {
        return format;
    }

    PrintStream out() {
        if (out != null) {
            return out;
        }
        return format == Format.JSON ? System.out : System.err;
    }

    /** The level a logger of this name logs at: the longest configured prefix wins. */
    Level levelFor(String loggerName) {
        for (Map.Entry<String, Level> e : levels.entrySet()) {
            if (loggerName.startsWith(e.getKey())) {
                return e.getValue();
            }
        }
        return Level.WARN;
    }
}
