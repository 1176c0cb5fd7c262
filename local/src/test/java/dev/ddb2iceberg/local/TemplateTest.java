package dev.ddb2iceberg.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.networknt.schema.JsonSchema;
import com.networknt.schema.JsonSchemaFactory;
import com.networknt.schema.SpecVersion;
import com.networknt.schema.ValidationMessage;
import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.config.Setting;
import dev.ddb2iceberg.config.Settings;
import dev.ddb2iceberg.embedded.ProjectFiles;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;
import java.util.jar.JarFile;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Offline checks of template.yaml that AWS's tools do not make: SAM's published JSON schema (kept:
 * it names a misspelled property of a SAM resource where the translator may only fail), handlers
 * against the jars their CodeUri names, settings against the environment variables the code reads,
 * least-privilege IAM, safe buckets, queues and topics, and the order `sam deploy --guided` asks in.
 * cfn-lint with AWS's SAM translator checks the template in {@link CfnLintTest}, and
 * {@link DeployRehearsalTest} creates stacks from it in moto.
 */
class TemplateTest {
    private static final SamTemplate TEMPLATE =
            SamTemplate.read(ProjectFiles.root().resolve("template.yaml"));
    private static final JsonNode ROOT = TEMPLATE.root();

    /** How each function reads its settings, as its handler's no-argument constructor does. */
    private static final Map<String, Consumer<Environment>> SETTINGS = DeployedEnvironment.READERS;

    private static JsonSchema samSchema() throws Exception {
        try (InputStream in = TemplateTest.class.getResourceAsStream("/sam-schema/sam.schema.json")) {
            return JsonSchemaFactory.getInstance(SpecVersion.VersionFlag.V4).getSchema(in);
        }
    }

    @Test
    void theTemplateValidatesAgainstSamsPublishedSchema() throws Exception {
        Set<ValidationMessage> errors = samSchema().validate(ROOT);
        assertTrue(
                errors.isEmpty(),
                () -> "template.yaml does not match SAM's schema:\n"
                        + errors.stream().map(ValidationMessage::toString).collect(Collectors.joining("\n")));
    }

    /**
     * The console shows the parameters in the Interface's groups, `sam deploy --guided` asks in the
     * Parameters section's order: both the same, the required ones first, every parameter in one
     * group with a label, the S3-Tables-only ones in the last group.
     */
    @Test
    void guidedDeployAsksTheRequiredParametersFirstAndTheS3TablesOnesLast() {
        JsonNode ui = ROOT.path("Metadata").path("AWS::CloudFormation::Interface");
        List<String> grouped = new ArrayList<>();
        ui.path("ParameterGroups").forEach(g -> g.path("Parameters").forEach(p -> grouped.add(p.asText())));
        List<String> declared = new ArrayList<>();
        ROOT.path("Parameters").fieldNames().forEachRemaining(declared::add);
        assertEquals(declared, grouped, "the groups' parameters, in order, against the Parameters section's");
        List<String> required = declared.stream()
                .filter(p -> !ROOT.path("Parameters").path(p).has("Default"))
                .toList();
        assertEquals(List.of("SourceStreamArn", "TableName"), required, "the parameters without a default");
        assertEquals(
                required,
                declared.subList(0, required.size()),
                "the first parameters asked: " + declared.subList(0, required.size()));
        Set<String> unlabelled = new TreeSet<>(declared);
        ui.path("ParameterLabels").fieldNames().forEachRemaining(unlabelled::remove);
        assertTrue(unlabelled.isEmpty(), "parameters without a label: " + unlabelled);
        JsonNode last =
                ui.path("ParameterGroups").path(ui.path("ParameterGroups").size() - 1);
        assertTrue(last.path("Label").path("default").asText().startsWith("S3 Tables only"), last.toString());
        for (JsonNode p : last.path("Parameters")) {
            assertTrue(
                    ROOT.path("Parameters")
                            .path(p.asText())
                            .path("Description")
                            .asText()
                            .contains("table bucket"),
                    p.asText() + " is in the S3 Tables group but its description is not about the table bucket");
        }
    }

    @Test
    void theSchemaCheckCatchesAMisspelledPropertyAndAWrongType() throws Exception {
        ObjectNode broken = ROOT.deepCopy();
        ObjectNode stager = (ObjectNode) broken.path("Resources").path("Stager").path("Properties");
        stager.set("Handlr", stager.remove("Handler"));
        ((ObjectNode) broken.path("Resources").path("Merger").path("Properties")).put("Timeout", "soon");
        String errors = samSchema().validate(broken).toString();
        assertTrue(errors.contains("Handlr"), errors);
        assertTrue(errors.contains("Timeout"), errors);
    }

    @Test
    void everyHandlerIsAClassInTheJarItsCodeUriNames() throws Exception {
        assertEquals(SETTINGS.keySet(), Set.copyOf(TEMPLATE.functionIds()), "the template's functions");
        for (String id : TEMPLATE.functionIds()) {
            JsonNode props = ROOT.path("Resources").path(id).path("Properties");
            Path jar = ProjectFiles.root().resolve(props.path("CodeUri").asText());
            assertTrue(Files.isRegularFile(jar), id + ": CodeUri " + jar + " is not built (mvn -B package builds it)");
            String[] handler = props.path("Handler").asText().split("::");
            assertEquals(2, handler.length, id + ": Handler is not class::method");
            try (JarFile j = new JarFile(jar.toFile())) {
                assertNotNull(
                        j.getEntry(handler[0].replace('.', '/') + ".class"),
                        id + ": " + handler[0] + " is not in " + jar);
            }
            // Load it from the jar alone, as Lambda does: its method signatures must resolve there.
            try (URLClassLoader loader =
                    new URLClassLoader(new URL[] {jar.toUri().toURL()}, ClassLoader.getPlatformClassLoader())) {
                Class<?> type = Class.forName(handler[0], false, loader);
                assertTrue(
                        Arrays.stream(type.getMethods()).map(Method::getName).anyMatch(handler[1]::equals),
                        id + ": " + handler[0] + " has no public method " + handler[1]);
                assertNotNull(type.getConstructor(), id + ": Lambda needs a public no-argument constructor");
            }
        }
    }

    /** Both destinations: the Glue Data Catalog (the default) and an S3 table bucket. */
    @ParameterizedTest
    @ValueSource(strings = {"glue", "s3tables"})
    void everyEnvironmentVariableAFunctionReadsIsSetInTheTemplate(String catalogType) {
        for (String id : TEMPLATE.functionIds()) {
            Map<String, String> env = deployedEnvironment(id, catalogType);
            Environment recording = new Environment(env);
            SETTINGS.get(id).accept(recording); // throws, naming the variable, if a value is unusable
            Set<String> missing = new TreeSet<>();
            for (String name : recording.variablesRead()) {
                // The catalogue says which the template sets: not Lambda's own, nor overrides for local runs.
                if (Settings.byName(name).inTemplate() && !env.containsKey(name)) {
                    missing.add(name);
                }
            }
            assertTrue(missing.isEmpty(), id + " reads " + missing + ", which the template does not set");
        }
    }

    @Test
    void everyVariableTheTemplateSetsIsInTheSettingsCatalogueAsOneTheTemplateSets() {
        for (String id : TEMPLATE.functionIds()) {
            for (String name : deployedEnvironment(id, "glue").keySet()) {
                Setting setting = Settings.byName(name);
                assertNotNull(setting, id + " sets " + name + ", which dev.ddb2iceberg.config.Settings does not know");
                assertTrue(
                        setting.inTemplate(), id + " sets " + name + ", which Settings says the template leaves unset");
            }
        }
    }

    /**
     * A setting's template parameter exists, and a function that reads the setting gets it from that
     * parameter: its value refers to it, directly or through a condition on it.
     */
    @Test
    void everySettingsTemplateParameterExistsAndSetsItsVariable() {
        Map<String, Set<String>> readers = DeployedEnvironment.readers(TEMPLATE);
        for (Setting s : Settings.all()) {
            if (s.parameter() == null) {
                continue;
            }
            assertTrue(
                    ROOT.path("Parameters").has(s.parameter()), s.name() + ": no template parameter " + s.parameter());
            Set<String> from = new TreeSet<>();
            for (String id : readers.getOrDefault(s.name(), Set.of())) {
                JsonNode value = variables(id).get(s.name());
                if (value != null && references(value).contains(s.parameter())) {
                    from.add(id);
                }
            }
            assertFalse(
                    from.isEmpty(),
                    s.name() + ": no function that reads it (" + readers.get(s.name()) + ") gets it from the parameter "
                            + s.parameter());
        }
    }

    /** A function's variables as the template writes them: Globals', then its own. */
    private static Map<String, JsonNode> variables(String id) {
        Map<String, JsonNode> vars = new HashMap<>();
        for (JsonNode scope : List.of(
                ROOT.path("Globals").path("Function"),
                ROOT.path("Resources").path(id).path("Properties"))) {
            scope.path("Environment")
                    .path("Variables")
                    .fields()
                    .forEachRemaining(e -> vars.put(e.getKey(), e.getValue()));
        }
        return vars;
    }

    /** The parameters a value refers to: by Ref, in a Sub's text, or through the conditions of its Ifs. */
    private static Set<String> references(JsonNode value) {
        Set<String> refs = new TreeSet<>();
        if (value.isObject()) {
            value.fields().forEachRemaining(e -> {
                if (e.getKey().equals("Ref")) {
                    refs.add(e.getValue().asText());
                } else if (e.getKey().equals("Condition") && e.getValue().isTextual()) {
                    refs.addAll(
                            references(ROOT.path("Conditions").path(e.getValue().asText())));
                } else if (e.getKey().equals("Fn::If")) {
                    refs.addAll(references(
                            ROOT.path("Conditions").path(e.getValue().path(0).asText())));
                    refs.addAll(references(e.getValue()));
                } else {
                    refs.addAll(references(e.getValue()));
                }
            });
        } else if (value.isArray()) {
            value.forEach(v -> refs.addAll(references(v)));
        } else if (value.isTextual()) {
            Matcher sub = Pattern.compile("\\$\\{([A-Za-z0-9]+)}").matcher(value.asText());
            while (sub.find()) {
                refs.add(sub.group(1));
            }
        }
        return refs;
    }

    /**
     * Continuous mode is bounded by the scheduled time the schedule passes in: the input must be the
     * JSON the merger accepts, carry Scheduler's placeholder, and leave the run's end 3 s or more
     * before the default schedule's next run.
     */
    @Test
    void theMergeScheduleHandsTheMergerItsScheduledTimeAndARunEndsBeforeTheNext() throws Exception {
        JsonNode schedule = ROOT.path("Resources")
                .path("Merger")
                .path("Properties")
                .path("Events")
                .path("Schedule")
                .path("Properties");
        JsonNode input = new ObjectMapper().readTree(schedule.path("Input").asText());
        assertEquals(
                "<aws.scheduler.scheduled-time>",
                input.path("scheduledTime").asText(),
                "the schedule's Input: " + schedule.path("Input"));
        assertEquals(
                "rate(1 minute)",
                ROOT.path("Parameters").path("MergeSchedule").path("Default").asText());
        int runSeconds = Integer.parseInt(ROOT.path("Resources")
                .path("Merger")
                .path("Properties")
                .path("Environment")
                .path("Variables")
                .path("MERGE_RUN_SECONDS")
                .asText());
        assertTrue(runSeconds <= 57, "MERGE_RUN_SECONDS=" + runSeconds + " leaves under 3 s before the next run");
    }

    /**
     * The export-load state machine, offline: its ASL is JSON whose every transition lands on a state
     * of its scope; every task invokes, through a substitution, a function of this stack with a step
     * that function's handler knows; and its role may invoke exactly those functions, and start and
     * follow only its own executions (the distributed map's children).
     */
    @Test
    void theExportLoadStateMachineInvokesOnlyThisStacksFunctionAndItsRoleAllowsExactlyThat() throws Exception {
        checkStateMachine(
                "ExportLoadStateMachine",
                "ExportLoad",
                Set.of("plan", "load", "arrange", "gather", "index", "commit", "abort"),
                "LoadWorkItems",
                "$.work");
        // The gather maps over what the arrange step returns, kept beside the plan's fields it also needs.
        JsonNode asl = new ObjectMapper()
                .readTree(Files.readString(ProjectFiles.root()
                        .resolve(ROOT.path("Resources")
                                .path("ExportLoadStateMachine")
                                .path("Properties")
                                .path("DefinitionUri")
                                .asText())));
        JsonNode states = asl.path("States");
        assertEquals("GatherFiles", states.path("ArrangeFiles").path("Next").asText());
        assertEquals("$.gather", states.path("ArrangeFiles").path("ResultPath").asText());
        JsonNode gather = states.path("GatherFiles");
        assertEquals(
                "DISTRIBUTED",
                gather.path("ItemProcessor")
                        .path("ProcessorConfig")
                        .path("Mode")
                        .asText());
        assertEquals("$.gather.groups", gather.path("ItemsPath").asText());
        assertEquals("$.concurrency", gather.path("MaxConcurrencyPath").asText());
        assertEquals("BuildKeyIndex", gather.path("Next").asText());
    }

    @Test
    void theCompactionStateMachineInvokesOnlyItsWorkerFunctionAndItsRoleAllowsExactlyThat() throws Exception {
        checkStateMachine(
                "CompactionStateMachine",
                "CompactionWorker",
                Set.of("plan", "group", "finish"),
                "CompactGroups",
                "$.groups");
    }

    @Test
    void theMergeFanOutStateMachineInvokesOnlyItsFunctionAndItsRoleAllowsExactlyThat() throws Exception {
        checkStateMachine(
                "MergeFanOutStateMachine",
                "MergeFanOut",
                Set.of("plan", "shuffle", "range", "commit", "abort"),
                "Shuffle",
                "$.works");
        JsonNode states = new ObjectMapper()
                .readTree(Files.readString(ProjectFiles.root().resolve("statemachine/merge-fan-out.asl.json")))
                .path("States");
        assertEquals("$.ranges", states.path("MergeRanges").path("ItemsPath").asText(), "the ranges' map");
        for (String state : List.of("Shuffle", "MergeRanges", "Commit")) {
            assertEquals(
                    "Abort",
                    states.path(state).path("Catch").path(0).path("Next").asText(),
                    state + " aborts the fan-out when it fails");
        }
        assertEquals(
                "ScheduledMergesKeepUp",
                states.path("AnythingToMerge")
                        .path("Choices")
                        .path(0)
                        .path("Next")
                        .asText(),
                "a small backlog ends the execution");
    }

    private static void checkStateMachine(
            String id, String function, Set<String> expectedSteps, String mapState, String itemsPath) throws Exception {
        JsonNode machine = ROOT.path("Resources").path(id).path("Properties");
        Path file = ProjectFiles.root().resolve(machine.path("DefinitionUri").asText());
        String text = Files.readString(file);
        JsonNode asl = new ObjectMapper().readTree(text); // throws unless JSON
        JsonNode substitutions = machine.path("DefinitionSubstitutions");
        Matcher used = Pattern.compile("\\$\\{([A-Za-z0-9]+)}").matcher(text);
        Set<String> usedNames = new TreeSet<>();
        while (used.find()) {
            usedNames.add(used.group(1));
        }
        Set<String> defined = new TreeSet<>();
        substitutions.fieldNames().forEachRemaining(defined::add);
        assertEquals(defined, usedNames, "substitutions defined and used");

        Set<String> invoked = new TreeSet<>();
        Set<String> steps = new TreeSet<>();
        checkStates(asl, "", invoked, steps, substitutions);
        assertEquals(Set.of(function), invoked, "functions the tasks invoke");
        assertEquals(expectedSteps, steps, "steps the tasks run");
        JsonNode map = asl.path("States").path(mapState);
        assertEquals(
                "DISTRIBUTED",
                map.path("ItemProcessor").path("ProcessorConfig").path("Mode").asText());
        assertEquals(itemsPath, map.path("ItemsPath").asText(), "the plan step's output field");
        assertEquals("$.concurrency", map.path("MaxConcurrencyPath").asText(), "the plan step's output field");

        List<String> invokable = new ArrayList<>();
        List<String> states = new ArrayList<>();
        for (JsonNode policy : machine.path("Policies")) {
            for (JsonNode statement : statements(policy)) {
                assertEquals("Allow", statement.path("Effect").asText());
                for (JsonNode action : statement.path("Action")) {
                    assertFalse(action.asText().contains("*"), "wildcard action " + action);
                    JsonNode resources = statement.path("Resource").isArray()
                            ? statement.path("Resource")
                            : JsonNodeFactory.instance.arrayNode().add(statement.path("Resource"));
                    for (JsonNode r : resources) {
                        (action.asText().startsWith("lambda:") ? invokable : states).add(r.toString());
                    }
                }
            }
        }
        List<String> expected = new ArrayList<>();
        for (String f : invoked) {
            expected.add("{\"Fn::GetAtt\":[\"" + f + "\",\"Arn\"]}");
            expected.add("{\"Fn::Sub\":\"${" + f + ".Arn}:*\"}");
        }
        assertEquals(
                new TreeSet<>(expected), new TreeSet<>(invokable), "lambda:InvokeFunction on exactly those functions");
        String name = machine.path("Name").path("Fn::Sub").asText();
        assertFalse(name.isEmpty(), "a fixed name, so that the policy can name the machine's own executions");
        for (String r : states) {
            assertTrue(
                    r.contains(":stateMachine:" + name + "\"")
                            || r.contains(":execution:" + name + ":")
                            || r.contains(":execution:" + name + "/"),
                    "states: actions only on this machine and its executions: " + r);
        }
    }

    /** Checks one scope's states (and the nested ones of its maps). */
    private static void checkStates(
            JsonNode scope, String path, Set<String> invoked, Set<String> steps, JsonNode substitutions) {
        JsonNode states = scope.path("States");
        assertTrue(
                states.has(scope.path("StartAt").asText()), path + "StartAt names no state: " + scope.path("StartAt"));
        states.fields().forEachRemaining(e -> {
            JsonNode state = e.getValue();
            String where = path + e.getKey();
            for (JsonNode next : List.of(state.path("Next"), state.path("Default"))) {
                assertTrue(next.isMissingNode() || states.has(next.asText()), where + ": Next names no state: " + next);
            }
            state.path("Catch")
                    .forEach(c -> assertTrue(states.has(c.path("Next").asText()), where + ": Catch to " + c));
            String type = state.path("Type").asText();
            assertTrue(
                    Set.of("Task", "Map", "Pass", "Fail", "Succeed", "Choice").contains(type),
                    where + ": type " + type);
            assertTrue(
                    type.equals("Fail")
                            || type.equals("Succeed")
                            || type.equals("Choice")
                            || state.has("Next")
                            || state.path("End").asBoolean(),
                    where + " neither ends nor goes on");
            if (type.equals("Task")) {
                assertEquals(
                        "arn:aws:states:::lambda:invoke", state.path("Resource").asText(), where);
                String function = state.path("Parameters").path("FunctionName").asText();
                assertTrue(
                        function.matches("\\$\\{[A-Za-z0-9]+}"),
                        where + ": FunctionName is a substitution: " + function);
                JsonNode arn = substitutions.path(function.substring(2, function.length() - 1));
                String id = arn.path("Fn::GetAtt").path(0).asText();
                assertTrue(
                        TEMPLATE.functionIds().contains(id)
                                && arn.path("Fn::GetAtt").path(1).asText().equals("Arn"),
                        where + ": invokes a function of this stack: " + arn);
                invoked.add(id);
                steps.add(state.path("Parameters").path("Payload").path("step").asText());
            }
            if (type.equals("Map")) {
                checkStates(state.path("ItemProcessor"), where + ".", invoked, steps, substitutions);
            }
        });
    }

    @Test
    void noIamPolicyAllowsAWildcardAction() {
        List<String> wildcards = new ArrayList<>();
        for (String id : TEMPLATE.functionIds()) {
            for (JsonNode policy :
                    ROOT.path("Resources").path(id).path("Properties").path("Policies")) {
                assertTrue(
                        policy.has("Statement"),
                        id + ": policies are inline statements, not policy templates: " + policy);
                for (JsonNode statement : statements(policy)) {
                    assertEquals("Allow", statement.path("Effect").asText());
                    for (JsonNode action : statement.path("Action")) {
                        if (action.asText().contains("*")) {
                            wildcards.add(id + ": " + action.asText());
                        }
                    }
                    assertFalse(
                            statement.path("Resource").asText().equals("*"),
                            id + ": statement on every resource: " + statement);
                }
            }
        }
        assertTrue(wildcards.isEmpty(), "wildcard actions: " + wildcards);
    }

    @Test
    void eachDestinationGetsOnlyItsOwnCatalogsPermissionsScopedToTheTable() {
        for (String id : List.of("Merger", "Maintenance")) {
            for (JsonNode policy :
                    ROOT.path("Resources").path(id).path("Properties").path("Policies")) {
                for (JsonNode statement : policy.path("Statement")) {
                    List<String> actions = new ArrayList<>();
                    JsonNode body =
                            statement.has("Fn::If") ? statement.path("Fn::If").path(1) : statement;
                    body.path("Action").forEach(a -> actions.add(a.asText()));
                    boolean glue = actions.stream().anyMatch(a -> a.startsWith("glue:"));
                    boolean s3Tables = actions.stream().anyMatch(a -> a.startsWith("s3tables:"));
                    if (glue || s3Tables) {
                        assertEquals(
                                glue ? "UseGlue" : "UseS3Tables",
                                statement.path("Fn::If").path(0).asText(),
                                id + ": " + actions + " only with its destination");
                        assertEquals(
                                "AWS::NoValue",
                                statement.path("Fn::If").path(2).path("Ref").asText(),
                                id + ": " + actions);
                    }
                    if (s3Tables && actions.contains("s3tables:PutTableData")) {
                        assertTrue(
                                body.path("Resource").toString().contains("/table/*"),
                                id + ": table actions on tables: " + body);
                        // This table, and its change history when HistoryTable names one.
                        JsonNode tableName =
                                body.path("Condition").path("StringEquals").path("s3tables:tableName");
                        assertEquals(
                                "HasHistory", tableName.path("Fn::If").path(0).asText(), id + ": " + tableName);
                        assertEquals(
                                "[{\"Ref\":\"TableName\"},{\"Ref\":\"HistoryTable\"}]",
                                tableName.path("Fn::If").path(1).toString(),
                                id + ": table actions only on this table and its history: " + body);
                        assertEquals(
                                "TableName",
                                tableName.path("Fn::If").path(2).path("Ref").asText(),
                                id + ": table actions only on this table without a history: " + body);
                    }
                }
            }
        }
        assertEquals(
                "CreateTableBucket",
                ROOT.path("Resources").path("TableBucket").path("Condition").asText());
    }

    @Test
    void everyBucketIsPrivateEncryptedAndTlsOnly() {
        List<String> buckets = resourcesOfType("AWS::S3::Bucket");
        assertFalse(buckets.isEmpty());
        for (String id : buckets) {
            JsonNode props = ROOT.path("Resources").path(id).path("Properties");
            JsonNode block = props.path("PublicAccessBlockConfiguration");
            for (String flag :
                    List.of("BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets")) {
                assertTrue(block.path(flag).asBoolean(), id + ": " + flag + " is not true");
            }
            assertFalse(
                    props.path("BucketEncryption")
                            .path("ServerSideEncryptionConfiguration")
                            .path(0)
                            .path("ServerSideEncryptionByDefault")
                            .path("SSEAlgorithm")
                            .asText()
                            .isEmpty(),
                    id + ": no default encryption");
            assertTrue(
                    resourcesOfType("AWS::S3::BucketPolicy").stream()
                            .map(p -> ROOT.path("Resources").path(p).path("Properties"))
                            .filter(p -> p.path("Bucket").path("Ref").asText().equals(id))
                            .flatMap(p -> stream(p.path("PolicyDocument").path("Statement")))
                            .anyMatch(s -> s.path("Effect").asText().equals("Deny")
                                    && s.path("Condition")
                                            .path("Bool")
                                            .path("aws:SecureTransport")
                                            .asText()
                                            .equals("false")),
                    id + ": no bucket policy denying requests without TLS");
            JsonNode rules = props.path("LifecycleConfiguration").path("Rules");
            assertTrue(
                    stream(rules).anyMatch(r -> r.has("AbortIncompleteMultipartUpload")),
                    id + ": incomplete uploads never aborted");
            assertTrue(
                    stream(rules)
                            .anyMatch(
                                    r -> r.path("Prefix").asText().equals("quarantine/") && r.has("ExpirationInDays")),
                    id + ": the quarantine is never cleared");
        }
    }

    @Test
    void theStreamSourceRetriesBisectsReportsPartialFailuresAndKeepsWhatItGivesUpOn() {
        JsonNode stream = ROOT.path("Resources")
                .path("Stager")
                .path("Properties")
                .path("Events")
                .path("Stream")
                .path("Properties");
        assertEquals("TRIM_HORIZON", stream.path("StartingPosition").asText());
        assertTrue(stream.path("BisectBatchOnFunctionError").asBoolean());
        assertEquals(
                "ReportBatchItemFailures",
                stream.path("FunctionResponseTypes").path(0).asText());
        assertTrue(stream.path("MaximumRetryAttempts").asInt() > 0);
        assertTrue(stream.path("MaximumRecordAgeInSeconds").asInt() > 0);
        String queue = stream.path("DestinationConfig")
                .path("OnFailure")
                .path("Destination")
                .path("Fn::GetAtt")
                .path(0)
                .asText();
        JsonNode q = ROOT.path("Resources").path(queue);
        assertEquals("AWS::SQS::Queue", q.path("Type").asText(), "the on-failure destination is a queue");
        assertTrue(
                q.path("Properties").path("SqsManagedSseEnabled").asBoolean()
                        || q.path("Properties").has("KmsMasterKeyId"),
                "the failure queue is encrypted");
    }

    @Test
    void theMergerAndMaintenanceRunOneAtATimeOnTheirSchedules() {
        for (String id : List.of("Merger", "Maintenance")) {
            JsonNode props = ROOT.path("Resources").path(id).path("Properties");
            assertEquals(1, props.path("ReservedConcurrentExecutions").asInt(), id);
            assertTrue(
                    stream(props.path("Events"))
                            .anyMatch(e -> e.path("Type").asText().equals("ScheduleV2")),
                    id + " has no ScheduleV2 event: " + props.path("Events"));
        }
    }

    /**
     * Functions that work the CPU for seconds to minutes a run ask for the parallel collector and
     * keep the full JIT (BENCHMARKS.md, "The merger's JVM"); the stager keeps the runtime's advice
     * for short invocations, C1 only.
     */
    @Test
    void theFunctionsThatMergeOrCompactRunWithTheParallelCollectorAndTheFullJit() {
        for (String id : TEMPLATE.functionIds()) {
            String options = deployedEnvironment(id, "glue").get("JAVA_TOOL_OPTIONS");
            if (id.equals("Stager")) {
                assertEquals("-XX:+TieredCompilation -XX:TieredStopAtLevel=1", options, id);
            } else {
                assertTrue(options.contains("-XX:+UseParallelGC"), id + ": JAVA_TOOL_OPTIONS is " + options);
                assertFalse(options.contains("TieredStopAtLevel"), id + ": JAVA_TOOL_OPTIONS is " + options);
            }
        }
    }

    /**
     * The merger's heap starts at 70 % of the function's memory and keeps Lambda's maximum, for the
     * smallest, default and largest MergerMemorySize: a real JVM started as Lambda's java runtime
     * starts it, with {@code -XX:MaxHeapSize} the memory less 240 MB (85 % up to 1.6 GB; the java17
     * runtime's command lines, BENCHMARKS.md "The whole heap from the start"), and the template's
     * JAVA_TOOL_OPTIONS. Without MaxRAM the percentage would be of the machine Lambda shows the JVM,
     * 5.5 GB at 2 GB: the whole heap.
     */
    @ParameterizedTest
    @ValueSource(ints = {1024, 2048, 10240})
    void theMergersHeapStartsAtSeventyPercentOfItsMemoryAndKeepsLambdasMaximum(int memoryMb) throws Exception {
        JsonNode sub = variables("Merger").get("JAVA_TOOL_OPTIONS");
        String options = DeployedEnvironment.substituted(
                ROOT, sub.path("Fn::Sub").asText(), Map.of("MergerMemorySize", Integer.toString(memoryMb)));
        assertTrue(
                options != null && options.contains("-XX:MaxRAM=" + memoryMb + "m"),
                "Merger's JAVA_TOOL_OPTIONS, " + sub + ", do not name its memory as MaxRAM");
        long mb = 1L << 20;
        long lambdaMax = memoryMb > 1600 ? (memoryMb - 240) * mb : memoryMb * mb * 85 / 100;
        ProcessBuilder pb = new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-XX:MaxHeapSize=" + lambdaMax / 1024 + "k",
                "-XX:+PrintFlagsFinal",
                "-version");
        pb.environment().put("JAVA_TOOL_OPTIONS", options);
        pb.redirectErrorStream(true);
        Process p = pb.start();
        String flags = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), "java with JAVA_TOOL_OPTIONS=" + options + ":\n" + flags);
        long initial = flag(flags, "InitialHeapSize");
        long max = flag(flags, "MaxHeapSize");
        // The JVM rounds heap sizes to its alignment (a few MB at most).
        assertEquals(memoryMb * mb * 70 / 100, initial, 4 * mb, "initial heap at " + memoryMb + " MB, with " + options);
        assertEquals(lambdaMax, max, 4 * mb, "maximum heap at " + memoryMb + " MB, with " + options);
        // Outside its heap the JVM held about 250 MB with a 1.8 GB heap (native memory tracking,
        // BENCHMARKS.md): 176 MB of classes, code and threads, and the collector's tables, 4 % of the heap.
        long outside = 176 * mb + max * 4 / 100;
        assertTrue(
                initial + outside <= memoryMb * mb,
                "a " + initial / mb + " MB heap from the start leaves less than the " + outside / mb
                        + " MB the JVM holds beside it in " + memoryMb + " MB");
    }

    /** A {@code -XX:+PrintFlagsFinal} flag's value. */
    private static long flag(String flags, String name) {
        Matcher m = Pattern.compile("\\b" + name + "\\s*=\\s*(\\d+)").matcher(flags);
        assertTrue(m.find(), name + " is not in the JVM's flags:\n" + flags);
        return Long.parseLong(m.group(1));
    }

    @Test
    void everyLogGroupHasARetentionAndEveryFunctionLogsToOne() {
        for (String id : TEMPLATE.functionIds()) {
            String group = ROOT.path("Resources")
                    .path(id)
                    .path("Properties")
                    .path("LoggingConfig")
                    .path("LogGroup")
                    .path("Ref")
                    .asText();
            assertEquals(
                    "AWS::Logs::LogGroup",
                    ROOT.path("Resources").path(group).path("Type").asText(),
                    id + " logs to " + group);
        }
        for (String id : resourcesOfType("AWS::Logs::LogGroup")) {
            assertTrue(
                    ROOT.path("Resources").path(id).path("Properties").has("RetentionInDays"),
                    id + " keeps logs forever");
        }
    }

    @Test
    void theAlarmsWatchIteratorAgeTheFailureQueueErrorsFreshnessAndTheQuarantine() {
        Set<String> metrics = resourcesOfType("AWS::CloudWatch::Alarm").stream()
                .map(id -> ROOT.path("Resources")
                        .path(id)
                        .path("Properties")
                        .path("MetricName")
                        .asText())
                .collect(Collectors.toSet());
        assertTrue(
                metrics.containsAll(Set.of(
                        "IteratorAge",
                        "ApproximateNumberOfMessagesVisible",
                        "Errors",
                        "FreshnessLagSeconds",
                        "QuarantinedRecords")),
                "alarmed metrics: " + metrics);
    }

    @Test
    void theDashboardBodyIsJsonOnceItsVariablesAreFilledIn() throws Exception {
        JsonNode sub = ROOT.path("Resources")
                .path("Dashboard")
                .path("Properties")
                .path("DashboardBody")
                .path("Fn::Sub");
        String body = sub.path(0).asText().replaceAll("\\$\\{[^}]+}", "x");
        JsonNode widgets = new ObjectMapper().readTree(body).path("widgets");
        assertTrue(widgets.size() >= 4, "widgets: " + widgets.size());
        for (String variable : List.of("Table", "Queue")) {
            assertTrue(sub.path(1).has(variable), "the dashboard's variable " + variable + " is defined");
        }
    }

    /** A function's variables as Lambda would see them (see {@link DeployedEnvironment}). */
    private static Map<String, String> deployedEnvironment(String id, String catalogType) {
        return DeployedEnvironment.of(ROOT, id, catalogType);
    }

    /** A policy's statements, with both branches of a conditional one ({@code !If [cond, statement, AWS::NoValue]}). */
    private static List<JsonNode> statements(JsonNode policy) {
        List<JsonNode> out = new ArrayList<>();
        for (JsonNode statement : policy.path("Statement")) {
            if (statement.has("Fn::If")) {
                for (int branch = 1; branch <= 2; branch++) {
                    if (statement.path("Fn::If").path(branch).has("Effect")) {
                        out.add(statement.path("Fn::If").path(branch));
                    }
                }
            } else {
                out.add(statement);
            }
        }
        return out;
    }

    private static List<String> resourcesOfType(String type) {
        List<String> ids = new ArrayList<>();
        ROOT.path("Resources").fields().forEachRemaining(e -> {
            if (e.getValue().path("Type").asText().equals(type)) {
                ids.add(e.getKey());
            }
        });
        return ids;
    }

    private static Stream<JsonNode> stream(JsonNode array) {
        List<JsonNode> nodes = new ArrayList<>();
        array.forEach(nodes::add);
        return nodes.stream();
    }
}
