package dev.ddb2iceberg.config;

/** A missing or bad setting; the message names it and says what to set. */
public class ConfigurationException extends IllegalArgumentException {
    public ConfigurationException(String message) {
        super(message);
    }
}
