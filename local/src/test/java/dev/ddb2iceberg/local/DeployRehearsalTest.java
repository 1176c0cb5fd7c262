package dev.ddb2iceberg.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ddb2iceberg.embedded.AwsTools;
import dev.ddb2iceberg.embedded.MotoServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * A deploy rehearsal: template.yaml transformed by AWS's SAM translator and created as four stacks
 * side by side in one account and region of moto_server's CloudFormation (moto 5.2.1, started on
 * 127.0.0.1): both destinations, both merge modes, two tables in one Glue database and two in one
 * table bucket. {@code aws-tools/rehearse.py} deploys each stack as {@code sam deploy} would and
 * reports what moto then holds; this class checks it.
 *
 * <p>The deployment differs from {@code sam deploy} in four ways, each for moto: each jar's S3
 * object is a small zip (moto cannot run java21 code without Docker); the state machines'
 * definitions are given inline (moto does not read a DefinitionS3Location); the Stager has no
 * published alias (moto has no AWS::Lambda::Alias, and the stream's mapping would point at
 * nothing); and S3Tables stacks name an existing table bucket (a GetAtt of an
 * AWS::S3Tables::TableBucket, which moto cannot create, is an error in moto).
 *
 * <p>What moto cannot check, so this does not: the resource types in {@link #MOTO_SKIPS} (the Glue
 * database, the schedules, the alarms, the bucket policy, the alarm e-mail subscription) and those
 * left out above for moto (a new table bucket and its namespace, the Stager's version and alias);
 * properties moto ignores (a bucket's public access block and lifecycle rules, SnapStart, arm64,
 * logging configuration, ephemeral storage, the schedules' state, a state machine's
 * DefinitionSubstitutions); managed policies on roles (moto drops ManagedPolicyArns: the Lambda
 * basic execution and DynamoDB stream policies SAM adds are checked in the translated template
 * instead); conditions in IAM statements, and whether IAM would allow a call at all (moto does not
 * evaluate policies here: this class matches the statements itself); CloudFormation's parameter
 * checks (AllowedPattern, Rules); and anything at run time. cfn-lint ({@link CfnLintTest}) and
 * {@link TemplateTest} check the template itself.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class DeployRehearsalTest {
    /** The resource types moto 5.2.1's CloudFormation skips (it logs "No Moto CloudFormation support for …"). */
    static final Set<String> MOTO_SKIPS = Set.of(
            "AWS::CloudWatch::Alarm",
            "AWS::Glue::Database",
            "AWS::S3::BucketPolicy",
            "AWS::Scheduler::Schedule",
            "AWS::SNS::Subscription");

    private static final String TABLE_BUCKET = "arn:aws:s3tables:us-east-1:123456789012:bucket/ddb2iceberg-tables";
    private static final Duration LIMIT = Duration.ofMinutes(3);

    /** Stack name → parameters: both destinations, both merge modes, two tables in each catalog. */
    private static final Map<String, Map<String, String>> STACKS = new LinkedHashMap<>();

    static {
        STACKS.put(
                "orders-glue",
                Map.of("TableName", "orders", "MergeMode", "Scheduled", "AlarmEmail", "ops@example.com"));
        // The second table in the same Glue database: that stack created it.
        STACKS.put(
                "payments-glue",
                Map.of(
                        "TableName", "payments",
                        "MergeMode", "Continuous",
                        "CreateGlueDatabase", "false",
                        "HistoryTable", "payments_history"));
        STACKS.put(
                "orders-s3tables",
                Map.of(
                        "TableName", "orders",
                        "Destination", "S3Tables",
                        "ExistingTableBucketArn", TABLE_BUCKET,
                        "MergeMode", "Scheduled"));
        STACKS.put(
                "payments-s3tables",
                Map.of(
                        "TableName", "payments",
                        "Destination", "S3Tables",
                        "ExistingTableBucketArn", TABLE_BUCKET,
                        "MergeMode", "Continuous",
                        "MergeFanOutWorkers", "8"));
    }

    private MotoServer moto;
    private final Map<String, JsonNode> seen = new LinkedHashMap<>();

    @BeforeAll
    void deployTheStacks() throws Exception {
        moto = new MotoServer();
        Map<String, String> env = Map.of(
                "AWS_ACCESS_KEY_ID", "rehearsal",
                "AWS_SECRET_ACCESS_KEY", "rehearsal",
                "AWS_DEFAULT_REGION", "us-east-1");
        for (Map.Entry<String, Map<String, String>> stack : STACKS.entrySet()) {
            List<String> args = new ArrayList<>(List.of(
                    AwsTools.SCRIPTS.resolve("rehearse.py").toString(),
                    moto.endpoint(),
                    "template.yaml",
                    stack.getKey()));
            stack.getValue().forEach((k, v) -> args.add(k + "=" + v));
            AwsTools.Result r = AwsTools.python(args, env, LIMIT);
            assertEquals(
                    0, r.exit(), () -> "rehearse.py " + stack.getKey() + ":\n" + r.err() + "\nmoto:\n" + moto.log());
            seen.put(stack.getKey(), new ObjectMapper().readTree(r.out()));
        }
    }

    @AfterAll
    void stopMoto() {
        if (moto != null) {
            moto.close();
        }
    }

    @Test
    void fourStacksSideBySideInOneAccountAndRegionReachCreateComplete() {
        seen.forEach((name, s) -> {
            assertFalse(
                    s.has("createError"),
                    () -> name + ": CreateStack failed: "
                            + s.path("createError").asText());
            assertEquals(
                    "CREATE_COMPLETE",
                    s.path("stack").path("status").asText(),
                    () -> name + ": " + s.path("stack") + "\nmoto:\n" + moto.log());
        });
        // No two stacks' resources share a physical id (a name, an ARN, a URL).
        Map<String, String> owner = new HashMap<>();
        seen.forEach((name, s) -> s.path("resources").forEach(r -> {
            String previous = owner.put(
                    r.path("physicalId").asText(),
                    name + "/" + r.path("logicalId").asText());
            assertTrue(
                    previous == null,
                    () -> r.path("physicalId").asText() + " is both " + previous + " and " + name + "/"
                            + r.path("logicalId").asText());
        }));
    }

    /**
     * Every resource the translated template creates under these parameters is created, or is of a
     * type moto said it skips; and those types are the ones this class's comment names.
     */
    @Test
    void motoCreatesEveryResourceOfATypeItKnowsAndNamesTheTypesItSkips() {
        Set<String> skippedTypes = new TreeSet<>();
        Set<String> createdTypes = new TreeSet<>();
        seen.forEach((name, s) -> {
            JsonNode resources = s.path("translated").path("Resources");
            Set<String> created = new TreeSet<>();
            s.path("resources").forEach(r -> created.add(r.path("logicalId").asText()));
            resources.fields().forEachRemaining(e -> {
                String type = e.getValue().path("Type").asText();
                String condition = e.getValue().path("Condition").asText(null);
                boolean wanted = condition == null
                        || s.path("conditions").path(condition).asBoolean();
                if (!wanted) {
                    assertFalse(
                            created.contains(e.getKey()),
                            name + ": " + e.getKey() + " created though " + condition + " is false");
                } else if (created.contains(e.getKey())) {
                    createdTypes.add(type);
                } else {
                    assertTrue(
                            moto.unsupportedTypes().contains(type),
                            () -> name + ": " + e.getKey() + " (" + type
                                    + ") was not created, and moto did not say it skips " + type + "\nmoto:\n"
                                    + moto.log());
                    skippedTypes.add(type);
                }
            });
        });
        System.out.println("moto created: " + createdTypes + "\nmoto skipped: " + skippedTypes);
        assertEquals(new TreeSet<>(MOTO_SKIPS), skippedTypes, "the types moto skipped; created: " + createdTypes);
    }

    /** Every Ref, GetAtt, Sub variable and DependsOn of the translated template names something it defines. */
    @Test
    void everyReferenceInTheTranslatedTemplatesNamesAParameterOrAResource() {
        seen.forEach((name, s) -> {
            JsonNode template = s.path("translated");
            Set<String> defined = new TreeSet<>();
            template.path("Parameters").fieldNames().forEachRemaining(defined::add);
            Set<String> resources = new TreeSet<>();
            template.path("Resources").fieldNames().forEachRemaining(resources::add);
            defined.addAll(resources);
            List<String> unknown = new ArrayList<>();
            template.path("Resources").fields().forEachRemaining(e -> {
                references(e.getValue(), Set.of(), unknown, defined, resources, e.getKey());
                e.getValue().path("DependsOn").forEach(d -> {
                    if (!resources.contains(d.asText())) {
                        unknown.add(e.getKey() + " DependsOn " + d.asText());
                    }
                });
            });
            references(template.path("Outputs"), Set.of(), unknown, defined, resources, "Outputs");
            assertTrue(unknown.isEmpty(), () -> name + ": references to nothing: " + unknown);
        });
    }

    private static final Pattern SUB_VARIABLE = Pattern.compile("\\$\\{([^!}][^}]*)}");

    private static void references(
            JsonNode node,
            Set<String> local,
            List<String> unknown,
            Set<String> defined,
            Set<String> resources,
            String where) {
        if (node.isArray()) {
            node.forEach(n -> references(n, local, unknown, defined, resources, where));
            return;
        }
        if (!node.isObject()) {
            return;
        }
        node.fields().forEachRemaining(e -> {
            JsonNode v = e.getValue();
            switch (e.getKey()) {
                case "Ref" -> {
                    if (!v.asText().startsWith("AWS::") && !defined.contains(v.asText())) {
                        unknown.add(where + " Ref " + v.asText());
                    }
                }
                case "Fn::GetAtt" -> {
                    if (!resources.contains(v.path(0).asText())) {
                        unknown.add(where + " GetAtt " + v);
                    }
                }
                case "Fn::Sub" -> {
                    String text = v.isArray() ? v.path(0).asText() : v.asText();
                    Set<String> variables = new TreeSet<>(local);
                    if (v.isArray()) {
                        v.path(1).fieldNames().forEachRemaining(variables::add);
                        references(v.path(1), local, unknown, defined, resources, where);
                    }
                    Matcher m = SUB_VARIABLE.matcher(text);
                    while (m.find()) {
                        String var = m.group(1);
                        String head = var.contains(".") ? var.substring(0, var.indexOf('.')) : var;
                        boolean known = var.startsWith("AWS::")
                                || variables.contains(var)
                                || (var.contains(".") ? resources.contains(head) : defined.contains(var));
                        if (!known) {
                            unknown.add(where + " Sub ${" + var + "}");
                        }
                    }
                }
                default -> references(v, local, unknown, defined, resources, where);
            }
        });
    }

    /** Outputs and the functions' variables are values, with no reference or "None" left in them. */
    @Test
    void everyOutputAndFunctionVariableResolvesToAValue() {
        seen.forEach((name, s) -> {
            List<String> unresolved = new ArrayList<>();
            s.path("stack")
                    .path("outputs")
                    .fields()
                    .forEachRemaining(o -> check(name + " output " + o.getKey(), o.getValue(), unresolved));
            s.path("functions")
                    .fields()
                    .forEachRemaining(f -> f.getValue()
                            .path("environment")
                            .fields()
                            .forEachRemaining(
                                    v -> check(name + " " + f.getKey() + " " + v.getKey(), v.getValue(), unresolved)));
            assertTrue(unresolved.isEmpty(), () -> "unresolved: " + unresolved);
            assertEquals(
                    s.path("translated").path("Outputs").size()
                            - (s.path("conditions").path("UseS3Tables").asBoolean() ? 0 : 1),
                    s.path("stack").path("outputs").size(),
                    name + ": outputs " + s.path("stack").path("outputs"));
        });
    }

    private static void check(String what, JsonNode value, List<String> unresolved) {
        String text = value.asText();
        if (value.isNull() || text.contains("None") || text.contains("${") || text.contains("{'")) {
            unresolved.add(what + "=" + value);
        }
    }

    /** The functions get this stack's bucket, queue, stream, table, catalog and merge mode. */
    @Test
    void theFunctionsAndStateMachinesAreWiredToThisStacksResources() {
        seen.forEach((name, s) -> {
            Map<String, String> params = STACKS.get(name);
            JsonNode functions = s.path("functions");
            String bucket = s.path("buckets").path("DataBucket").path("name").asText();
            boolean s3Tables = "S3Tables".equals(params.get("Destination"));
            boolean continuous = "Continuous".equals(params.get("MergeMode"));
            assertEquals(
                    Set.of("Stager", "Merger", "ExportLoad", "MergeFanOut", "Maintenance", "CompactionWorker"),
                    names(functions),
                    name + ": the functions");
            functions.fields().forEachRemaining(f -> {
                JsonNode env = f.getValue().path("environment");
                String where = name + " " + f.getKey() + ": ";
                assertEquals(bucket, env.path("STAGING_BUCKET").asText(), where + "STAGING_BUCKET");
                assertEquals(params.get("TableName"), env.path("TABLE_NAME").asText(), where + "TABLE_NAME");
                assertEquals("java21", f.getValue().path("runtime").asText(), where + "runtime");
                if (!f.getKey().equals("Stager")) {
                    assertEquals(
                            s3Tables ? "s3tables" : "glue",
                            env.path("CATALOG_TYPE").asText(),
                            where + "CATALOG_TYPE");
                    assertEquals(
                            s3Tables ? TABLE_BUCKET : "",
                            env.path("TABLE_BUCKET_ARN").asText(),
                            where + "TABLE_BUCKET_ARN");
                    assertEquals(
                            s3Tables ? "" : "s3://" + bucket + "/warehouse/ddb2iceberg/" + params.get("TableName"),
                            env.path("TABLE_LOCATION").asText(),
                            where + "TABLE_LOCATION");
                }
            });
            assertEquals(
                    continuous ? "continuous" : "scheduled",
                    functions
                            .path("Merger")
                            .path("environment")
                            .path("MERGE_MODE")
                            .asText(),
                    name + ": Merger MERGE_MODE");
            for (String id : List.of("Merger", "Maintenance")) {
                assertEquals(
                        1,
                        functions.path(id).path("reservedConcurrency").asInt(),
                        name + ": " + id + " runs one at a time");
            }
            // Functions that share a role (Role: !GetAtt …Role.Arn) get the role SAM made for the other.
            Map<String, String> roleOf = Map.of(
                    "Stager", "StagerRole",
                    "Merger", "MergerRole",
                    "ExportLoad", "MergerRole",
                    "MergeFanOut", "MergerRole",
                    "Maintenance", "MaintenanceRole",
                    "CompactionWorker", "MaintenanceRole");
            roleOf.forEach((function, role) -> assertEquals(
                    s.path("roles").path(role).path("arn").asText(),
                    functions.path(function).path("role").asText(),
                    name + ": " + function + "'s role"));

            JsonNode mappings = s.path("eventSourceMappings");
            assertEquals(1, mappings.size(), name + ": event source mappings " + mappings);
            JsonNode stream = mappings.path(0);
            assertEquals(
                    s.path("parameters").path("SourceStreamArn").asText(),
                    stream.path("eventSourceArn").asText(),
                    name);
            assertEquals(
                    functions.path("Stager").path("arn").asText(),
                    stream.path("functionArn").asText(),
                    name);
            assertEquals("TRIM_HORIZON", stream.path("startingPosition").asText(), name);
            assertEquals(
                    s.path("queues").path("StagerFailureQueue").path("QueueArn").asText(),
                    stream.path("onFailure").asText(),
                    name + ": failed batches go to the failure queue");

            Map<String, String> machines = Map.of(
                    "ExportLoadStateMachine", "ExportLoad",
                    "MergeFanOutStateMachine", "MergeFanOut",
                    "CompactionStateMachine", "CompactionWorker");
            machines.forEach((machine, function) -> {
                JsonNode m = s.path("stateMachines").path(machine);
                assertEquals(
                        s.path("roles").path(machine + "Role").path("arn").asText(),
                        m.path("roleArn").asText(),
                        name + " " + machine);
                // moto keeps the definition's ${…} as they are (it ignores DefinitionSubstitutions):
                // each must be a substitution of the translated template naming the function.
                JsonNode substitutions = s.path("translated")
                        .path("Resources")
                        .path(machine)
                        .path("Properties")
                        .path("DefinitionSubstitutions");
                Set<String> invoked = new TreeSet<>();
                m.path("definition")
                        .findValues("FunctionName")
                        .forEach(v -> invoked.add(substitutions
                                .path(v.asText().replaceAll("^\\$\\{(.*)}$", "$1"))
                                .path("Fn::GetAtt")
                                .toString()));
                assertEquals(
                        Set.of("[\"" + function + "\",\"Arn\"]"),
                        invoked,
                        name + " " + machine + ": the functions its tasks invoke");
                assertTrue(functions.has(function), name + ": " + function + " exists");
            });
        });
    }

    /**
     * Each role may make the calls its function's code makes, on this stack's own resources as moto
     * named them; and trusts the service that uses it. Statements are matched here (Allow, action
     * and resource patterns; their conditions aside).
     */
    @Test
    void everyRoleAllowsTheCallsItsCodeMakesOnThisStacksResources() {
        seen.forEach((name, s) -> {
            Map<String, String> params = STACKS.get(name);
            String table = params.get("TableName");
            String bucket = "arn:aws:s3:::"
                    + s.path("buckets").path("DataBucket").path("name").asText();
            String glue = "arn:aws:glue:us-east-1:123456789012:";
            String queue =
                    s.path("queues").path("StagerFailureQueue").path("QueueArn").asText();
            boolean s3Tables = "S3Tables".equals(params.get("Destination"));
            Map<String, List<String>> calls = new TreeMap<>();
            calls.put(
                    "StagerRole",
                    List.of(
                            "s3:PutObject " + bucket + "/staging/1-2.json.gz",
                            "s3:PutObject " + bucket + "/quarantine/1-2.json",
                            "sqs:SendMessage " + queue));
            List<String> merger = new ArrayList<>(List.of(
                    "s3:ListBucket " + bucket,
                    "s3:GetObject " + bucket + "/staging/1-2.json.gz",
                    "s3:DeleteObject " + bucket + "/staging/1-2.json.gz",
                    "s3:PutObject " + bucket + "/quarantine/1-2.json",
                    "s3:GetObject " + bucket + "/exports/AWSDynamoDB/01234/data/a.json.gz"));
            List<String> maintenance = new ArrayList<>(List.of("s3:ListBucket " + bucket));
            for (String action : List.of("s3:GetObject", "s3:PutObject", "s3:DeleteObject")) {
                String files = s3Tables
                        ? "/tables/ddb2iceberg/" + table + "/index/part-0"
                        : "/warehouse/ddb2iceberg/" + table + "/data/f.parquet";
                merger.add(action + " " + bucket + files);
                maintenance.add(action + " " + bucket + files);
            }
            if (s3Tables) {
                for (String action : List.of("s3tables:GetTableBucket", "s3tables:GetNamespace")) {
                    merger.add(action + " " + TABLE_BUCKET);
                    maintenance.add(action + " " + TABLE_BUCKET);
                }
                merger.add("s3tables:CreateNamespace " + TABLE_BUCKET);
                merger.add("s3tables:CreateTable " + TABLE_BUCKET);
                for (String action : List.of(
                        "GetTable",
                        "GetTableMetadataLocation",
                        "UpdateTableMetadataLocation",
                        "GetTableData",
                        "PutTableData")) {
                    merger.add("s3tables:" + action + " " + TABLE_BUCKET + "/table/0123-abcd");
                    maintenance.add("s3tables:" + action + " " + TABLE_BUCKET + "/table/0123-abcd");
                }
            } else {
                for (String action : List.of("glue:GetTable", "glue:UpdateTable")) {
                    merger.add(action + " " + glue + "table/ddb2iceberg/" + table);
                    maintenance.add(action + " " + glue + "table/ddb2iceberg/" + table);
                }
                // The task catalog-versions (GlueTableVersions): the table's and its change history's.
                List<String> tables = new ArrayList<>(List.of(table));
                if (params.containsKey("HistoryTable")) {
                    tables.add(params.get("HistoryTable"));
                }
                for (String action :
                        List.of("glue:GetTableVersions", "glue:BatchDeleteTableVersion", "glue:DeleteTableVersion")) {
                    maintenance.add(action + " " + glue + "catalog");
                    maintenance.add(action + " " + glue + "database/ddb2iceberg");
                    for (String t : tables) {
                        maintenance.add(action + " " + glue + "table/ddb2iceberg/" + t);
                    }
                }
                maintenance.add("glue:GetTable " + glue + "table/ddb2iceberg/" + tables.get(tables.size() - 1));
                merger.add("glue:CreateTable " + glue + "table/ddb2iceberg/" + table);
                merger.add("glue:GetDatabase " + glue + "database/ddb2iceberg");
                merger.add("glue:GetCatalog " + glue + "catalog");
            }
            calls.put("MergerRole", merger);
            calls.put("MaintenanceRole", maintenance);
            for (String[] machine : List.of(
                    new String[] {"ExportLoadStateMachine", "ExportLoad", "-export-load"},
                    new String[] {"MergeFanOutStateMachine", "MergeFanOut", "-merge-fan-out"},
                    new String[] {"CompactionStateMachine", "CompactionWorker", "-compaction"})) {
                String arn = s.path("functions").path(machine[1]).path("arn").asText();
                String self = "arn:aws:states:us-east-1:123456789012:stateMachine:" + name + machine[2];
                assertEquals(
                        self,
                        s.path("stateMachines").path(machine[0]).path("arn").asText(),
                        name);
                calls.put(
                        machine[0] + "Role",
                        List.of(
                                "lambda:InvokeFunction " + arn,
                                "lambda:InvokeFunction " + arn + ":$LATEST",
                                "states:StartExecution " + self,
                                "states:DescribeExecution arn:aws:states:us-east-1:123456789012:execution:" + name
                                        + machine[2] + ":run/child"));
            }
            calls.put(
                    "MergerScheduleRole",
                    List.of("lambda:InvokeFunction "
                            + s.path("functions").path("Merger").path("arn").asText()));
            calls.put(
                    "MaintenanceScheduledRunRole",
                    List.of("lambda:InvokeFunction "
                            + s.path("functions")
                                    .path("Maintenance")
                                    .path("arn")
                                    .asText()));
            calls.put(
                    "MergeFanOutStateMachineScheduleRole",
                    List.of("states:StartExecution "
                            + s.path("stateMachines")
                                    .path("MergeFanOutStateMachine")
                                    .path("arn")
                                    .asText()));
            calls.put(
                    "CompactionStateMachineScheduleRole",
                    List.of("states:StartExecution "
                            + s.path("stateMachines")
                                    .path("CompactionStateMachine")
                                    .path("arn")
                                    .asText()));
            assertEquals(calls.keySet(), names(s.path("roles")), name + ": the roles");
            calls.forEach((role, needed) -> {
                JsonNode r = s.path("roles").path(role);
                List<String> denied = new ArrayList<>();
                for (String call : needed) {
                    String[] parts = call.split(" ", 2);
                    if (!allows(r.path("policies"), parts[0], parts[1])) {
                        denied.add(call);
                    }
                }
                assertTrue(
                        denied.isEmpty(),
                        () -> name + ": " + role + " does not allow " + denied + "; its policies: "
                                + r.path("policies"));
                String service = role.endsWith("ScheduleRole") || role.endsWith("ScheduledRunRole")
                        ? "scheduler.amazonaws.com"
                        : role.endsWith("StateMachineRole") ? "states.amazonaws.com" : "lambda.amazonaws.com";
                assertEquals(
                        service,
                        r.path("assumeRolePolicy")
                                .path("Statement")
                                .path(0)
                                .path("Principal")
                                .path("Service")
                                .path(0)
                                .asText(),
                        name + ": " + role + " trusts");
            });
        });
    }

    /** Whether an Allow statement of these policies matches the action and the resource. */
    private static boolean allows(JsonNode policies, String action, String resource) {
        for (JsonNode policy : policies) {
            for (JsonNode statement : array(policy.path("Statement"))) {
                if (!statement.path("Effect").asText().equals("Allow")) {
                    continue;
                }
                boolean actionMatches = false;
                for (JsonNode a : array(statement.path("Action"))) {
                    actionMatches |= glob(a.asText(), action);
                }
                for (JsonNode r : array(statement.path("Resource"))) {
                    // moto leaves an AWS::NoValue in a list as null, where CloudFormation drops it.
                    if (actionMatches && !r.isNull() && glob(r.asText(), resource)) {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    private static boolean glob(String pattern, String value) {
        return value.matches(Pattern.quote(pattern).replace("*", "\\E.*\\Q").replace("?", "\\E.\\Q"));
    }

    private static List<JsonNode> array(JsonNode node) {
        List<JsonNode> out = new ArrayList<>();
        if (node.isArray()) {
            node.forEach(out::add);
        } else if (!node.isMissingNode()) {
            out.add(node);
        }
        return out;
    }

    /**
     * moto keeps the queue's, bucket's and log groups' settings that it knows: the failure queue
     * encrypted and kept 14 days, the bucket encrypted, every function's log group with a retention.
     */
    @Test
    void theQueueTheBucketAndTheLogGroupsKeepTheirSettings() {
        seen.forEach((name, s) -> {
            JsonNode queue = s.path("queues").path("StagerFailureQueue");
            assertEquals(
                    "true", queue.path("SqsManagedSseEnabled").asText(), name + ": the failure queue is encrypted");
            assertEquals(
                    "1209600",
                    queue.path("MessageRetentionPeriod").asText(),
                    name + ": the failure queue keeps 14 days");
            assertEquals(
                    "AES256",
                    s.path("buckets")
                            .path("DataBucket")
                            .path("encryption")
                            .path("Rules")
                            .path(0)
                            .path("ApplyServerSideEncryptionByDefault")
                            .path("SSEAlgorithm")
                            .asText(),
                    name + ": the bucket's encryption " + s.path("buckets"));
            assertEquals(6, s.path("logGroups").size(), name + ": log groups " + s.path("logGroups"));
            s.path("logGroups")
                    .fields()
                    .forEachRemaining(g -> assertEquals(
                            30,
                            g.getValue().path(0).path("retentionInDays").asInt(),
                            name + ": " + g.getKey() + " " + g.getValue()));
        });
    }

    /**
     * moto does not create schedules, so the translated template is checked: four schedules, named
     * by CloudFormation (no Name, so a second stack's do not clash), each targeting its function or
     * state machine through a role of its own; the fan-out ones enabled only with workers.
     */
    @Test
    void theSchedulesTargetTheirFunctionsAndStateMachinesAndCloudFormationNamesThem() {
        seen.forEach((name, s) -> {
            JsonNode resources = s.path("translated").path("Resources");
            Map<String, String> targets = new TreeMap<>();
            resources.fields().forEachRemaining(e -> {
                if (e.getValue().path("Type").asText().equals("AWS::Scheduler::Schedule")) {
                    JsonNode p = e.getValue().path("Properties");
                    assertFalse(p.has("Name"), name + ": " + e.getKey() + " has a fixed Name: " + p.path("Name"));
                    JsonNode arn = p.path("Target").path("Arn");
                    targets.put(
                            e.getKey(),
                            arn.has("Ref")
                                    ? arn.path("Ref").asText()
                                    : arn.path("Fn::GetAtt").path(0).asText());
                    assertEquals(
                            e.getKey() + "Role",
                            p.path("Target")
                                    .path("RoleArn")
                                    .path("Fn::GetAtt")
                                    .path(0)
                                    .asText(),
                            name + ": " + e.getKey() + "'s role");
                }
            });
            assertEquals(
                    Map.of(
                            "MergerSchedule", "Merger",
                            "MaintenanceScheduledRun", "Maintenance",
                            "MergeFanOutStateMachineSchedule", "MergeFanOutStateMachine",
                            "CompactionStateMachineSchedule", "CompactionStateMachine"),
                    targets,
                    name + ": schedule → target");
            assertEquals(
                    "FanOutMerges",
                    resources
                            .path("MergeFanOutStateMachineSchedule")
                            .path("Properties")
                            .path("State")
                            .path("Fn::If")
                            .path(0)
                            .asText(),
                    name);
            // The stream's policies SAM adds as managed ones, which moto drops from the roles.
            assertTrue(
                    resources
                            .path("StagerRole")
                            .path("Properties")
                            .path("ManagedPolicyArns")
                            .toString()
                            .contains("AWSLambdaDynamoDBExecutionRole"),
                    name + ": the Stager may read the stream: "
                            + resources.path("StagerRole").path("Properties").path("ManagedPolicyArns"));
        });
    }

    /**
     * No resource of the translated template has a physical name fixed in the template: each is
     * left to CloudFormation or made from the stack's name or id. The Glue database is the one
     * shared by design (created by one stack, CreateGlueDatabase).
     */
    @Test
    void noResourceHasAFixedNameASecondStackWouldClashWith() {
        Map<String, String> nameProperty = Map.ofEntries(
                Map.entry("AWS::S3::Bucket", "BucketName"),
                Map.entry("AWS::SQS::Queue", "QueueName"),
                Map.entry("AWS::SNS::Topic", "TopicName"),
                Map.entry("AWS::Logs::LogGroup", "LogGroupName"),
                Map.entry("AWS::Lambda::Function", "FunctionName"),
                Map.entry("AWS::IAM::Role", "RoleName"),
                Map.entry("AWS::StepFunctions::StateMachine", "StateMachineName"),
                Map.entry("AWS::Scheduler::Schedule", "Name"),
                Map.entry("AWS::CloudWatch::Dashboard", "DashboardName"),
                Map.entry("AWS::CloudWatch::Alarm", "AlarmName"),
                Map.entry("AWS::S3Tables::TableBucket", "TableBucketName"));
        List<String> fixed = new ArrayList<>();
        seen.values()
                .iterator()
                .next()
                .path("translated")
                .path("Resources")
                .fields()
                .forEachRemaining(e -> {
                    String property = nameProperty.get(e.getValue().path("Type").asText());
                    JsonNode value = e.getValue().path("Properties").path(property == null ? "" : property);
                    if (property != null
                            && !value.isMissingNode()
                            && !(value.toString().contains("AWS::StackName")
                                    || value.toString().contains("AWS::StackId"))) {
                        fixed.add(e.getKey() + "." + property + "=" + value);
                    }
                });
        assertTrue(fixed.isEmpty(), () -> "names fixed in the template: " + fixed);
    }

    private static Set<String> names(JsonNode object) {
        Set<String> names = new TreeSet<>();
        object.fieldNames().forEachRemaining(names::add);
        return names;
    }
}
