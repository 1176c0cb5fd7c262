package dev.ddb2iceberg.config;

import java.util.List;

/**
 * One setting of the pipeline: an environment variable, as {@link Settings} lists them all.
 * Code reads it only through {@link Environment}, which takes the entry, not its name.
 *
 * @param name the environment variable
 * @param defaultValue the value when it is unset or blank, as it would be written; "" for nothing;
 *     null when there is none (a required setting) or the reading code computes it (the
 *     description says how)
 * @param description one line: what it sets
 * @param parameter the template parameter that sets it (template.yaml's Parameters), or null
 * @param inTemplate whether the template sets the variable for the functions that read it (from
 *     {@code parameter}, or a value of its own); false for what Lambda sets itself and for
 *     local-only overrides that deployed functions leave to their defaults
 * @param choices the values it may take, lower-case, matched ignoring case; empty for any value
 */
public record Setting(
        String name,
        String defaultValue,
        String description,
        String parameter,
        boolean inTemplate,
        List<String> choices) {
    public Setting {
        choices = List.copyOf(choices);
        if (parameter != null && !inTemplate) {
            throw new IllegalArgumentException(name + ": a setting with a template parameter is set by the template");
        }
    }

    @Override
    public String toString() {
        return name;
    }
}
