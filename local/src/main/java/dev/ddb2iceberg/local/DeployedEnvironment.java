package dev.ddb2iceberg.local;

import com.fasterxml.jackson.databind.JsonNode;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.function.MaintenanceSettings;
import dev.ddb2iceberg.function.MergerSettings;
import dev.ddb2iceberg.merger.ExportLoadHandler;
import dev.ddb2iceberg.merger.MergeFanOutHandler;
import dev.ddb2iceberg.stager.StagerSettings;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A function's environment as Lambda would see it once the template is deployed, and which settings
 * each function reads from it: what the template test checks and the configuration reference
 * shows. Values the template computes ({@code !Ref}, {@code !If}...) get a sample of what the
 * deployed stack would set.
 */
final class DeployedEnvironment {
    /** How each function of the template reads its settings at cold start. */
    static final Map<String, Consumer<Environment>> READERS = Map.of(
            "Stager", StagerSettings::from,
            "Merger", MergerSettings::from,
            "ExportLoad", ExportLoadHandler::checkSettings,
            "MergeFanOut", MergeFanOutHandler::checkSettings,
            "Maintenance", MaintenanceSettings::from,
            "CompactionWorker", MaintenanceSettings::from);

    /** The destinations a deployed stack can have, by the CATALOG_TYPE they give the functions. */
    static final List<String> CATALOG_TYPES = List.of("glue", "s3tables");

    private static final Pattern SUB_REFERENCE = Pattern.compile("\\$\\{([^}]+)}");

    private DeployedEnvironment() {}

    /**
     * The variables function {@code id} gets: the template's (Globals, then the function's), with a
     * sample value where the template computes one when deployed.
     */
    static Map<String, String> of(JsonNode root, String id, String catalogType) {
        Map<String, String> env = new HashMap<>();
        for (JsonNode scope : List.of(
                root.path("Globals").path("Function"),
                root.path("Resources").path(id).path("Properties"))) {
            for (Iterator<Map.Entry<String, JsonNode>> it =
                            scope.path("Environment").path("Variables").fields();
                    it.hasNext(); ) {
                Map.Entry<String, JsonNode> v = it.next();
                env.put(
                        v.getKey(),
                        v.getValue().isValueNode()
                                ? v.getValue().asText()
                                : sample(root, v.getKey(), catalogType, v.getValue()));
            }
        }
        return env;
    }

    /** For each variable a deployed function reads (either destination), the functions that read it. */
    static Map<String, Set<String>> readers(SamTemplate template) {
        Map<String, Set<String>> readers = new TreeMap<>();
        for (String catalogType : CATALOG_TYPES) {
            for (String id : template.functionIds()) {
                Consumer<Environment> reader = READERS.get(id);
                if (reader == null) {
                    throw new IllegalStateException("the template's function " + id + " has no settings reader in "
                            + DeployedEnvironment.class.getName() + ".READERS");
                }
                Environment recording = new Environment(of(template.root(), id, catalogType));
                reader.accept(recording);
                recording
                        .variablesRead()
                        .forEach(v ->
                                readers.computeIfAbsent(v, k -> new TreeSet<>()).add(id));
            }
        }
        return readers;
    }

    /**
     * A value for a variable the template computes. A condition choosing between two plain values
     * (continuous mode's settings, say) gives its first; the catalog's and the table's variables get
     * a sample of what the deployed stack would set.
     */
    private static String sample(JsonNode root, String variable, String catalogType, JsonNode node) {
        JsonNode choice = node.path("Fn::If");
        if (!variable.equals("CATALOG_TYPE")
                && choice.path(1).isValueNode()
                && choice.path(2).isValueNode()) {
            return choice.path(1).asText();
        }
        if (node.path("Fn::Sub").isTextual()) {
            String text = substituted(root, node.path("Fn::Sub").asText(), Map.of());
            if (text != null) {
                return text; // JAVA_TOOL_OPTIONS naming the function's memory, say
            }
        }
        JsonNode parameter = root.path("Parameters").path(node.path("Ref").asText());
        if (parameter.path("Type").asText().equals("Number") || parameter.has("AllowedValues")) {
            // A number parameter's default (ExportLoadConcurrency), or a choice's (TtlExpiries).
            return parameter.path("Default").asText();
        }
        return switch (variable) {
            case "CATALOG_TYPE" -> catalogType;
            case "TABLE_BUCKET_ARN" -> "arn:aws:s3tables:us-east-1:123456789012:bucket/orders-lake";
            case "TABLE_LOCATION" -> "s3://bucket/warehouse/db/table";
            case "TABLE_FORMAT_VERSION" -> "2";
            case "STAGING_PREFIX" -> "staging/";
            case "COLUMN_TYPES" -> "price=decimal(12,2)";
            case "ITEM_JSON_COLUMN", "ITEM_VARIANT_COLUMN" -> "false";
            case "HISTORY_TABLE" -> "sample_history";
            default -> "sample";
        };
    }

    /**
     * A Sub's text with each {@code ${Parameter}} replaced by its value in {@code values}, else by the
     * parameter's default; null if one has neither.
     */
    static String substituted(JsonNode root, String text, Map<String, String> values) {
        Matcher m = SUB_REFERENCE.matcher(text);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            String value = values.get(m.group(1));
            JsonNode byDefault = root.path("Parameters").path(m.group(1)).path("Default");
            if (value == null && !byDefault.isValueNode()) {
                return null;
            }
            m.appendReplacement(out, Matcher.quoteReplacement(value != null ? value : byDefault.asText()));
        }
        m.appendTail(out);
        return out.toString();
    }
}
