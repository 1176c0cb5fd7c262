package dev.ddb2iceberg.local;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * CloudFormation's resource specs ({@code cfn-spec/cfn-resources.json}; its README gives the
 * layout) and a check of a template's resources against them. SAM's schema checks only
 * {@code AWS::Serverless::*} resources and lets every other one through; this checks those others:
 * their type, their resource attributes, and their properties at every nesting level (unknown,
 * missing when required, or of the wrong shape).
 *
 * <p>Only shapes are checked, not values: CloudFormation converts scalars into one another
 * ({@code "5"} for a number, {@code 5} for a string), and an intrinsic function ({@code Ref},
 * {@code Fn::*}) stands for whatever value it will resolve to.
 */
final class CloudFormationSpec {
    /** The keys CloudFormation allows on a resource. */
    static final Set<String> RESOURCE_ATTRIBUTES = Set.of(
            "Type",
            "Properties",
            "DependsOn",
            "Condition",
            "Metadata",
            "DeletionPolicy",
            "UpdateReplacePolicy",
            "CreationPolicy",
            "UpdatePolicy");

    /** A problem with a template, at a path such as {@code Resources.Bucket.Properties.Rules[0].Status}. */
    record Error(String path, String message) {
        @Override
        public String toString() {
            return path + ": " + message;
        }
    }

    /** The properties of a {@code tag} type: every tag is a Key and a Value. */
    private static final JsonNode TAG = json("""
      {"Key": {"type": {"type": "string"}, "required": true},
       "Value": {"type": {"type": "string"}, "required": true}}""");

    private final JsonNode resources;
    private final JsonNode types;

    private CloudFormationSpec(JsonNode spec) {
        this.resources = spec.path("resources");
        this.types = spec.path("types");
    }

    /** The spec vendored with the tests. */
    static CloudFormationSpec load() {
        try (InputStream in = CloudFormationSpec.class.getResourceAsStream("/cfn-spec/cfn-resources.json")) {
            return new CloudFormationSpec(new ObjectMapper().readTree(in));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Whether this check leaves a resource type alone: SAM's schema checks {@code AWS::Serverless::*};
     * a custom resource's properties are whatever its handler takes; CloudFormation's own types
     * ({@code AWS::CloudFormation::Stack}...) are not in the spec.
     */
    static boolean checkedElsewhere(String type) {
        return type.startsWith("AWS::Serverless::")
                || type.startsWith("Custom::")
                || type.startsWith("AWS::CloudFormation::");
    }

    /** Every problem of the template's resources; empty if there is none. */
    List<Error> check(JsonNode template) {
        List<Error> errors = new ArrayList<>();
        for (Iterator<Map.Entry<String, JsonNode>> it =
                        template.path("Resources").fields();
                it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            checkResource("Resources." + e.getKey(), e.getValue(), errors);
        }
        return errors;
    }

    private void checkResource(String path, JsonNode resource, List<Error> errors) {
        if (!resource.isObject()) {
            errors.add(new Error(path, "expected a resource (a mapping with a Type), found " + found(resource)));
            return;
        }
        JsonNode typeNode = resource.get("Type");
        if (typeNode == null || !typeNode.isTextual()) {
            errors.add(new Error(path + ".Type", "expected a resource type, found " + found(typeNode)));
            return;
        }
        String type = typeNode.asText();
        if (type.startsWith("AWS::Serverless::")) {
            return; // SAM's schema checks these, attributes included (SAM adds its own, such as Connectors)
        }
        for (Iterator<String> it = resource.fieldNames(); it.hasNext(); ) {
            String key = it.next();
            if (!RESOURCE_ATTRIBUTES.contains(key)) {
                errors.add(new Error(
                        path + "." + key,
                        "expected a resource attribute (one of " + new TreeSet<>(RESOURCE_ATTRIBUTES) + "), found '"
                                + key + "'"));
            }
        }
        if (checkedElsewhere(type)) {
            return;
        }
        JsonNode spec = resources.get(type);
        if (spec == null) {
            // The spec covers every service the project uses, so a type it lacks is a typo or a new service.
            errors.add(new Error(
                    path + ".Type",
                    "expected a resource type of cfn-spec/cfn-resources.json, found unknown type '" + type + "'"));
            return;
        }
        JsonNode properties =
                resource.has("Properties") ? resource.get("Properties") : JsonNodeFactory.instance.objectNode();
        errors.addAll(matchObject(path + ".Properties", properties, type, spec.path("properties")));
    }

    /**
     * The problems of a value that should be an object with the given properties ({@code name ->
     * {type, required, alsoAccepts?}}); {@code what} names the object in messages.
     */
    private List<Error> matchObject(String path, JsonNode node, String what, JsonNode properties) {
        if (isIntrinsic(node)) {
            return List.of();
        }
        if (!node.isObject()) {
            return List.of(new Error(path, "expected a mapping (" + what + "), found " + found(node)));
        }
        List<Error> errors = new ArrayList<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            JsonNode property = properties.get(e.getKey());
            if (property == null) {
                errors.add(new Error(
                        path + "." + e.getKey(),
                        "unknown property of " + what + ": expected one of " + names(properties) + ", found '"
                                + e.getKey() + "'"));
            } else {
                errors.addAll(matchAny(path + "." + e.getKey(), e.getValue(), accepted(property)));
            }
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = properties.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            if (e.getValue().path("required").asBoolean() && !node.has(e.getKey())) {
                errors.add(new Error(
                        path + "." + e.getKey(),
                        "missing required property of " + what + ": expected " + describe(accepted(e.getValue()))
                                + ", found nothing"));
            }
        }
        return errors;
    }

    /** The problems of a value of one type T of the spec (see the README). */
    private List<Error> match(String path, JsonNode node, JsonNode type) {
        if (isIntrinsic(node)) {
            return List.of();
        }
        String kind = type.path("type").asText();
        switch (kind) {
            case "json":
                return List.of();
            case "string", "number", "integer", "boolean", "date-time":
                // CloudFormation turns scalars into one another, so any scalar will do.
                return node.isValueNode() && !node.isNull() ? List.of() : mismatch(path, node, type);
            case "tag":
                return matchObject(path, node, "tag", TAG);
            case "ref":
                JsonNode object = types.get(type.path("ref").asText());
                return matchObject(path, node, object.path("name").asText(), object.path("properties"));
            case "array", "map": {
                if (kind.equals("array") ? !node.isArray() : !node.isObject()) {
                    return mismatch(path, node, type);
                }
                List<Error> errors = new ArrayList<>();
                if (node.isArray()) {
                    for (int i = 0; i < node.size(); i++) {
                        errors.addAll(match(path + "[" + i + "]", node.get(i), type.get("element")));
                    }
                } else {
                    node.fields()
                            .forEachRemaining(e ->
                                    errors.addAll(match(path + "." + e.getKey(), e.getValue(), type.get("element"))));
                }
                return errors;
            }
            case "union":
                List<JsonNode> members = new ArrayList<>();
                type.path("types").forEach(members::add);
                return matchAny(path, node, members);
            default:
                throw new IllegalStateException("cfn-resources.json has a type this check does not know: " + type);
        }
    }

    /**
     * The problems of a value that may be of any of several types: none if one matches. Otherwise
     * those of the first type whose outer shape fits (a mapping for an object...), as its nested
     * errors say the most; if none fits, one error listing them all.
     */
    private List<Error> matchAny(String path, JsonNode node, List<JsonNode> alternatives) {
        if (alternatives.size() == 1) {
            return match(path, node, alternatives.get(0));
        }
        List<Error> fitting = null;
        for (JsonNode type : alternatives) {
            List<Error> errors = match(path, node, type);
            if (errors.isEmpty()) {
                return errors;
            }
            if (fitting == null && errors.stream().noneMatch(e -> e.path().equals(path))) {
                fitting = errors; // every error is further in: the outer shape fits
            }
        }
        return fitting != null
                ? fitting
                : List.of(new Error(path, "expected " + describe(alternatives) + ", found " + found(node)));
    }

    private List<Error> mismatch(String path, JsonNode node, JsonNode type) {
        return List.of(new Error(path, "expected " + describe(type) + ", found " + found(node)));
    }

    /**
     * Whether a value is an intrinsic function: a mapping of one key, {@code Ref} or {@code Fn::*}.
     * ({@code Condition} is one too, but only among the arguments of condition functions, which as
     * arguments of an intrinsic are never looked into.)
     */
    static boolean isIntrinsic(JsonNode node) {
        if (node == null || !node.isObject() || node.size() != 1) {
            return false;
        }
        String key = node.fieldNames().next();
        return key.equals("Ref") || key.startsWith("Fn::");
    }

    /** A property's type and the older types CloudFormation still accepts for it. */
    private static List<JsonNode> accepted(JsonNode property) {
        List<JsonNode> types = new ArrayList<>();
        types.add(property.get("type"));
        property.path("alsoAccepts").forEach(types::add);
        return types;
    }

    private String describe(List<JsonNode> alternatives) {
        return alternatives.stream().map(this::describe).distinct().collect(Collectors.joining(" or "));
    }

    /** A type of the spec in words: "a string", "a list [a mapping (Rule), ...]". */
    private String describe(JsonNode type) {
        return switch (type.path("type").asText()) {
            case "integer" -> "an integer";
            case "json" -> "any JSON value";
            case "tag" -> "a mapping (tag) {Key, Value}";
            case "array" -> "a list [" + describe(type.get("element")) + ", ...]";
            case "map" -> "a mapping {name: " + describe(type.get("element")) + ", ...}";
            case "ref" ->
                "a mapping ("
                        + types.path(type.path("ref").asText()).path("name").asText() + ")";
            case "union" -> {
                List<JsonNode> members = new ArrayList<>();
                type.path("types").forEach(members::add);
                yield describe(members);
            }
            default -> "a " + type.path("type").asText(); // string, number, boolean, date-time
        };
    }

    /** A value of the template in words, for "expected ..., found ...". */
    private static String found(JsonNode node) {
        if (node == null || node.isMissingNode()) {
            return "nothing";
        }
        if (node.isNull()) {
            return "null";
        }
        if (node.isArray()) {
            return "a list of " + node.size() + (node.size() == 1 ? " item" : " items");
        }
        if (node.isObject()) {
            return "a mapping with keys " + names(node);
        }
        if (node.isTextual()) {
            return "the string '" + node.asText() + "'";
        }
        return (node.isNumber() ? "the number " : node.isBoolean() ? "the boolean " : "the value ") + node.asText();
    }

    private static String names(JsonNode object) {
        List<String> names = new ArrayList<>();
        object.fieldNames().forEachRemaining(names::add);
        return names.toString();
    }

    private static JsonNode json(String text) {
        try {
            return new ObjectMapper().readTree(text);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
