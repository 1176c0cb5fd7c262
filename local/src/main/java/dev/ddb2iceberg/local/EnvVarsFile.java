package dev.ddb2iceberg.local;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ddb2iceberg.config.Setting;
import dev.ddb2iceberg.config.Settings;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * An env-vars file in sam's shape, {@code {"Parameters": {...}, "<LogicalId>": {...}}}: the first
 * for every function, the second for one. Every name in it must be a setting of the catalogue
 * ({@link Settings}): the functions read nothing else, so an unknown name is a typo that would
 * otherwise be ignored without a word. It is refused, with the nearest setting's name.
 */
final class EnvVarsFile {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String PARAMETERS = "Parameters";
    private static final String SETTINGS_PAGE = "docs/reference/configuration.md";

    private EnvVarsFile() {}

    /** The variables the file gives function {@code logicalId}: Parameters, then its own section. */
    static Map<String, String> variables(Path file, String logicalId, List<String> functionIds) {
        JsonNode root = read(file);
        for (Map.Entry<String, JsonNode> section : root.properties()) {
            String name = section.getKey();
            if (!name.equals(PARAMETERS) && !functionIds.contains(name)) {
                throw new UserError(misplaced(file, name, functionIds));
            }
            if (!section.getValue().isObject()) {
                throw new UserError(file + ": \"" + name + "\" must be an object of variables, as in" + " {\"" + name
                        + "\": {\"TABLE_NAME\": \"orders\"}}");
            }
            for (Map.Entry<String, JsonNode> variable : section.getValue().properties()) {
                if (Settings.byName(variable.getKey()) == null) {
                    throw new UserError(unknown(file, name, variable.getKey()));
                }
            }
        }
        Map<String, String> env = new LinkedHashMap<>();
        addAll(env, root.path(PARAMETERS));
        addAll(env, root.path(logicalId));
        return env;
    }

    private static JsonNode read(Path file) {
        if (!Files.isRegularFile(file)) {
            throw new UserError("env-vars file " + file + " not found");
        }
        JsonNode root;
        try {
            root = JSON.readTree(file.toFile());
        } catch (IOException e) {
            throw new UserError("env-vars file " + file + " is not JSON: " + LocalInvoker.rootMessage(e));
        }
        if (root == null || !root.isObject()) {
            throw new UserError("env-vars file " + file + " is not a JSON object like {\"" + PARAMETERS
                    + "\": {\"TABLE_NAME\": \"orders\"}}");
        }
        return root;
    }

    /** A top-level name that is neither Parameters nor a function: a setting put one level too high, or a typo. */
    private static String misplaced(Path file, String name, List<String> functionIds) {
        if (Settings.byName(name) != null) {
            return file + ": " + name + " is at the top level, where sam reads only \"" + PARAMETERS
                    + "\" and function names; put it inside \"" + PARAMETERS + "\": {\"" + name + "\": ...}";
        }
        List<String> sections = new ArrayList<>(functionIds);
        sections.add(0, PARAMETERS);
        String nearest = NearestName.of(name, sections);
        return file + ": \"" + name + "\" is neither \"" + PARAMETERS + "\" nor a function of the template "
                + functionIds + (nearest == null ? "" : "; did you mean " + nearest + "?");
    }

    private static String unknown(Path file, String section, String variable) {
        String nearest = NearestName.of(
                variable, Settings.all().stream().map(Setting::name).toList());
        return file + ": " + variable + (section.equals(PARAMETERS) ? "" : " (in \"" + section + "\")")
                + " is not a setting of the pipeline, so no function would read it; "
                + (nearest == null ? "" : "did you mean " + nearest + "? ")
                + "Every setting: " + SETTINGS_PAGE;
    }

    private static void addAll(Map<String, String> env, JsonNode vars) {
        vars.properties().forEach(e -> env.put(e.getKey(), e.getValue().asText()));
    }
}
