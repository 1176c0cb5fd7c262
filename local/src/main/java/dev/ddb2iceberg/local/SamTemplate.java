package dev.ddb2iceberg.local;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.AbstractConstruct;
import org.yaml.snakeyaml.constructor.SafeConstructor;
import org.yaml.snakeyaml.error.YAMLException;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;

/**
 * The parts of a SAM template that {@code sam local invoke} uses to run a function: its
 * {@code Handler} and its environment variables (the function's over {@code Globals}).
 * Values written with an intrinsic function ({@code !Ref}, {@code !Sub}...) exist only once
 * deployed; like sam, we leave them to the env-vars file. The template checks read it too.
 */
final class SamTemplate {
    private static final String FUNCTION = "AWS::Serverless::Function";

    private final JsonNode root;
    private final Path path;

    private SamTemplate(Path path, JsonNode root) {
        this.path = path;
        this.root = root;
    }

    static SamTemplate read(Path path) {
        if (!Files.isRegularFile(path)) {
            throw new UserError("template " + path + " not found (run from the project folder, or pass --template)");
        }
        try (Reader reader = Files.newBufferedReader(path)) {
            Object yaml = new Yaml(new CloudFormationConstructor()).load(reader);
            return new SamTemplate(path, new ObjectMapper().valueToTree(yaml));
        } catch (IOException | YAMLException e) {
            throw new UserError("template " + path + " is not valid YAML: "
                    + e.getMessage().lines().findFirst().orElse(""));
        }
    }

    /**
     * SnakeYAML's safe constructor, plus CloudFormation's short-form tags, read as the long form
     * CloudFormation itself turns them into: {@code !Ref X} as {@code {"Ref": "X"}}, {@code !Sub s} as
     * {@code {"Fn::Sub": s}}, {@code !GetAtt A.B} as {@code {"Fn::GetAtt": ["A", "B"]}}.
     */
    private static final class CloudFormationConstructor extends SafeConstructor {
        CloudFormationConstructor() {
            super(new LoaderOptions());
            this.yamlConstructors.put(null, new AbstractConstruct() {
                @Override
                public Object construct(Node node) {
                    String tag = node.getTag().getValue().substring(1);
                    Object value;
                    if (node instanceof ScalarNode scalar) {
                        value = constructScalar(scalar);
                    } else if (node instanceof SequenceNode sequence) {
                        value = constructSequence(sequence);
                    } else {
                        value = constructMapping((MappingNode) node);
                    }
                    if (tag.equals("Ref") || tag.equals("Condition")) {
                        return Map.of(tag, value);
                    }
                    if (tag.equals("GetAtt") && value instanceof String s) {
                        value = List.of(s.substring(0, s.indexOf('.')), s.substring(s.indexOf('.') + 1));
                    }
                    return Map.of("Fn::" + tag, value);
                }
            });
        }
    }

    /** The whole template, intrinsic functions in their long form. */
    JsonNode root() {
        return root;
    }

    /** A function of the template. */
    record Function(String logicalId, String handler, Map<String, String> environment) {}

    List<String> functionIds() {
        List<String> ids = new ArrayList<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = root.path("Resources").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            if (FUNCTION.equals(e.getValue().path("Type").asText())) {
                ids.add(e.getKey());
            }
        }
        return ids;
    }

    Function function(String logicalId) {
        JsonNode resource = root.path("Resources").path(logicalId);
        if (!FUNCTION.equals(resource.path("Type").asText())) {
            throw new UserError("no function '" + logicalId + "' in " + path + "; its functions are " + functionIds());
        }
        String handler = resource.path("Properties")
                .path("Handler")
                .asText(root.path("Globals").path("Function").path("Handler").asText(""));
        if (handler.isEmpty()) {
            throw new UserError("function '" + logicalId + "' in " + path + " has no Handler");
        }
        Map<String, String> env = new LinkedHashMap<>();
        addVariables(env, root.path("Globals").path("Function"));
        addVariables(env, resource.path("Properties"));
        return new Function(logicalId, handler, env);
    }

    private static void addVariables(Map<String, String> env, JsonNode function) {
        JsonNode vars = function.path("Environment").path("Variables");
        for (Iterator<Map.Entry<String, JsonNode>> it = vars.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            if (e.getValue().isValueNode() && !e.getValue().isNull()) { // not a map: not an intrinsic
                env.put(e.getKey(), e.getValue().asText());
            } else {
                env.remove(e.getKey()); // an intrinsic function: resolved only in AWS
            }
        }
    }
}
