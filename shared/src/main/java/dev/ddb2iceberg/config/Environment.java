package dev.ddb2iceberg.config;

import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * Reads settings from environment variables (how Lambda and SAM pass configuration), with one
 * error message shape for every function: which variable, what is wrong, what to set instead.
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

  private String get(String name) {
    read.add(name);
    return env.get(name);
  }

  public String required(String name, String meaning) {
    String value = get(name);
    if (value == null || value.isBlank()) {
      throw new ConfigurationException("Environment variable " + name + " is not set: it must name " + meaning + ".");
    }
    return value.trim();
  }

  public String optional(String name, String defaultValue) {
    String value = get(name);
    return value == null || value.isBlank() ? defaultValue : value.trim();
  }

  public long positiveLong(String name, long defaultValue) {
    return parsed(name, defaultValue, s -> {
      long v = Long.parseLong(s);
      if (v <= 0) {
        throw new IllegalArgumentException();
      }
      return v;
    }, "a positive whole number");
  }

  public long nonNegativeLong(String name, long defaultValue) {
    return parsed(name, defaultValue, s -> {
      long v = Long.parseLong(s);
      if (v < 0) {
        throw new IllegalArgumentException();
      }
      return v;
    }, "a whole number, 0 or more");
  }

  public int positiveInt(String name, int defaultValue) {
    return (int) Math.min(Integer.MAX_VALUE, positiveLong(name, defaultValue));
  }

  public boolean bool(String name, boolean defaultValue) {
    return parsed(name, defaultValue, s -> {
      if (s.equalsIgnoreCase("true")) {
        return true;
      } else if (s.equalsIgnoreCase("false")) {
        return false;
      }
      throw new IllegalArgumentException();
    }, "true or false");
  }

  /** A key prefix in a bucket: no leading slash, and ending in one unless empty. */
  public String prefix(String name, String defaultValue) {
    String p = optional(name, defaultValue);
    if (p.startsWith("/")) {
      throw new ConfigurationException("Environment variable " + name + "='" + p
          + "' starts with '/': S3 key prefixes have no leading slash, e.g. 'staging/'.");
    }
    return p.isEmpty() || p.endsWith("/") ? p : p + "/";
  }

  private <T> T parsed(String name, T defaultValue, Function<String, T> parse, String expected) {
    String value = get(name);
    if (value == null || value.isBlank()) {
      return defaultValue;
    }
    try {
      return parse.apply(value.trim());
    } catch (RuntimeException e) {
      throw new ConfigurationException("Environment variable " + name + "='" + value + "' is not " + expected + ".");
    }
  }
}
