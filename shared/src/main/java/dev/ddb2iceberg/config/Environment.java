package dev.ddb2iceberg.config;

import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * Reads settings from environment variables (how Lambda and SAM pass configuration), only through
 * the entries of the catalogue {@link Settings}, with one error message shape for every function:
 * <ul>
 *   <li>unset: {@code Environment variable TABLE_NAME is not set: it must name <what it names>.}
 *   <li>a bad value: {@code Environment variable MERGE_MODE='contnuous' is not one of scheduled, continuous.}
 *       (numbers: {@code is not a positive whole number.}, flags: {@code is not true or false.}, and
 *       the library's own checks of a value through {@link #invalid}).
 * </ul>
 * A blank value counts as unset; values are trimmed.
 */
public final class Environment {
    private final Map<String, String> env;
    private final Set<String> read = ConcurrentHashMap.newKeySet();

    public Environment(Map<String, String> env) {
        this.env = env;
    }

    public static Environment system() {
        return new Environment(System.getenv());
    }

    /** Every variable asked for so far, set or not (the template check uses it). */
    public Set<String> variablesRead() {
        return Set.copyOf(read);
    }

    /** The value exactly as set, null when unset (for the few settings where blank means something). */
    public String raw(Setting setting) {
        read.add(setting.name());
        return env.get(setting.name());
    }

    /** The trimmed value, or the catalogue's default when unset or blank (null when it has none). */
    public String string(Setting setting) {
        return string(setting, setting.defaultValue());
    }

    /** The trimmed value, or {@code fallback} (a default the caller computes) when unset or blank. */
    public String string(Setting setting, String fallback) {
        String value = raw(setting);
        return value == null || value.isBlank() ? fallback : value.trim();
    }

    /** The trimmed value; refused, saying what it names (the catalogue's description), when unset. */
    public String required(Setting setting) {
        return required(setting, setting.description());
    }

    /** The trimmed value; refused, saying it must name {@code meaning}, when unset. */
    public String required(Setting setting, String meaning) {
        String value = string(setting, null);
        if (value == null) {
            throw new ConfigurationException(
                    "Environment variable " + setting.name() + " is not set: it must name " + meaning + ".");
        }
        return value;
    }

    /**
     * The error for a value the library refuses after reading it, in this class's shape:
     * {@code Environment variable NAME='value' is not <expected>.}
     */
    public static ConfigurationException invalid(Setting setting, String value, String expected) {
        return new ConfigurationException(
                "Environment variable " + setting.name() + "='" + value + "' is not " + expected + ".");
    }

    public long positiveLong(Setting setting) {
        return positiveLong(setting, parsedDefault(setting, Long::parseLong));
    }

    public long positiveLong(Setting setting, long fallback) {
        return parsed(setting, fallback, s -> atLeast(Long.parseLong(s), 1), "a positive whole number");
    }

    public long nonNegativeLong(Setting setting) {
        return nonNegativeLong(setting, parsedDefault(setting, Long::parseLong));
    }

    public long nonNegativeLong(Setting setting, long fallback) {
        return parsed(setting, fallback, s -> atLeast(Long.parseLong(s), 0), "a whole number, 0 or more");
    }

    public int positiveInt(Setting setting) {
        return (int) Math.min(Integer.MAX_VALUE, positiveLong(setting));
    }

    public int positiveInt(Setting setting, int fallback) {
        return (int) Math.min(Integer.MAX_VALUE, positiveLong(setting, fallback));
    }

    public boolean bool(Setting setting) {
        return bool(setting, parsedDefault(setting, Boolean::parseBoolean));
    }

    public boolean bool(Setting setting, boolean fallback) {
        return parsed(
                setting,
                fallback,
                s -> {
                    if (s.equalsIgnoreCase("true")) {
                        return true;
                    } else if (s.equalsIgnoreCase("false")) {
                        return false;
                    }
                    throw new IllegalArgumentException();
                },
                "true or false");
    }

    /**
     * One of the setting's {@link Setting#choices}, as the catalogue spells it, matched ignoring case
     * and dashes: {@code ParallelExport}, the template parameter's spelling, is {@code parallel-export}.
     */
    public String choice(Setting setting) {
        return choice(setting, setting.defaultValue());
    }

    /** As {@link #choice(Setting)}, with a default the caller computes. */
    public String choice(Setting setting, String fallback) {
        if (setting.choices().isEmpty()) {
            throw new IllegalArgumentException(setting.name() + " is not a choice");
        }
        return parsed(
                setting,
                fallback,
                s -> setting.choices().stream()
                        .filter(c -> spelling(c).equals(spelling(s)))
                        .findFirst()
                        .orElseThrow(IllegalArgumentException::new),
                "one of " + String.join(", ", setting.choices()));
    }

    /** The choice as the constant of {@code type} of the same name ({@code parallel-export}: PARALLEL_EXPORT). */
    public <E extends Enum<E>> E choice(Setting setting, Class<E> type) {
        return Enum.valueOf(type, choice(setting).toUpperCase(Locale.ROOT).replace('-', '_'));
    }

    /** A key prefix in a bucket: no leading slash, and ending in one unless empty. */
    public String prefix(Setting setting) {
        String p = string(setting);
        if (p.startsWith("/")) {
            throw invalid(
                    setting,
                    p,
                    "a key prefix: it starts with '/', and S3 key prefixes have no leading slash,"
                            + " e.g. 'staging/'");
        }
        return p.isEmpty() || p.endsWith("/") ? p : p + "/";
    }

    /** A choice lower-case, without dashes and underscores: what two spellings of one choice share. */
    private static String spelling(String choice) {
        return choice.replaceAll("[-_]", "").toLowerCase(Locale.ROOT);
    }

    private static long atLeast(long v, long min) {
        if (v < min) {
            throw new IllegalArgumentException();
        }
        return v;
    }

    private static <T> T parsedDefault(Setting setting, Function<String, T> parse) {
        if (setting.defaultValue() == null) {
            throw new IllegalStateException(setting.name() + " has no default in Settings: the caller must give one");
        }
        return parse.apply(setting.defaultValue());
    }

    private <T> T parsed(Setting setting, T fallback, Function<String, T> parse, String expected) {
        String value = raw(setting);
        if (value == null || value.isBlank()) {
            return fallback;
        }
        try {
            return parse.apply(value.trim());
        } catch (RuntimeException e) {
            throw invalid(setting, value, expected);
        }
    }
}
