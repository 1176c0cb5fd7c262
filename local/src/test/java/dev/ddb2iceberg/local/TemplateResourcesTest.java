package dev.ddb2iceberg.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ddb2iceberg.embedded.ProjectFiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Offline checks of template.yaml's resources other than {@code AWS::Serverless::*} (which SAM's
 * schema checks in {@link TemplateTest}) against CloudFormation's resource specs, vendored in
 * {@code cfn-spec/}: unknown types, attributes and properties, missing required properties, and
 * values of the wrong shape.
 */
class TemplateResourcesTest {
    private static final CloudFormationSpec SPEC = CloudFormationSpec.load();

    @Test
    void everyResourceOfTheTemplateMatchesItsCloudFormationSpec() {
        JsonNode root = template();
        Map<String, String> checked = new TreeMap<>();
        root.path("Resources").fields().forEachRemaining(e -> {
            String type = e.getValue().path("Type").asText();
            if (!CloudFormationSpec.checkedElsewhere(type)) {
                checked.put(e.getKey(), type);
            }
        });
        assertFalse(
                checked.isEmpty(),
                "template.yaml has no resource for the spec to check: the check would pass vacuously");
        List<CloudFormationSpec.Error> errors = SPEC.check(root);
        assertTrue(
                errors.isEmpty(),
                () -> "template.yaml does not match CloudFormation's resource specs (" + checked.size()
                        + " resources checked: " + checked + "):\n" + lines(errors));
    }

    @Test
    void theSpecCheckFindsAMisshapenValueDeepInTheTemplate() {
        ObjectNode broken = template().deepCopy();
        ObjectNode byDefault = (ObjectNode)
                broken.at(
                        "/Resources/DataBucket/Properties/BucketEncryption/ServerSideEncryptionConfiguration/0/ServerSideEncryptionByDefault");
        byDefault.putObject("SSEAlgorithm").put("Algorithm", "AES256");
        assertEquals(
                List.of("Resources.DataBucket.Properties.BucketEncryption.ServerSideEncryptionConfiguration[0]"
                        + ".ServerSideEncryptionByDefault.SSEAlgorithm"),
                SPEC.check(broken).stream().map(CloudFormationSpec.Error::path).toList(),
                "the paths of the errors found");
    }

    @Test
    void theSpecCheckCatchesUnknownMissingAndMisshapenPropertiesTypesAndAttributes(@TempDir Path dir)
            throws IOException {
        List<CloudFormationSpec.Error> errors = check(dir, """
        Resources:
          Misspelled:
            Type: AWS::S3Tables::TableBucket
            Properties:
              TableBucketNam: tables
          NoNamespace:
            Type: AWS::S3Tables::Namespace
            Properties:
              TableBucketARN: arn:aws:s3tables:eu-west-1:111122223333:bucket/tables
          ListForObject:
            Type: AWS::S3Tables::TableBucket
            Properties:
              TableBucketName: tables
              UnreferencedFileRemoval:
                - Status: Enabled
          ObjectForString:
            Type: AWS::S3Tables::TableBucket
            Properties:
              TableBucketName: {Name: tables}
          NestedUnknown:
            Type: AWS::S3Tables::TableBucket
            Properties:
              TableBucketName: tables
              UnreferencedFileRemoval: {Statuss: Enabled}
              Tags:
                - Key: owner
          UnknownType:
            Type: AWS::S3Tables::TableBuckets
            Properties:
              TableBucketName: tables
          UnknownAttribute:
            Type: AWS::S3Tables::TableBucket
            DeletionPolcy: Retain
            Properties:
              TableBucketName: tables
        """);
        Map<String, String> byPath = errors.stream()
                .collect(Collectors.toMap(
                        CloudFormationSpec.Error::path, CloudFormationSpec.Error::message, (a, b) -> a + "; " + b));
        assertEquals(
                new TreeSet<>(Set.of(
                        "Resources.Misspelled.Properties.TableBucketNam", // unknown
                        "Resources.Misspelled.Properties.TableBucketName", // so the required one is missing
                        "Resources.NoNamespace.Properties.Namespace",
                        "Resources.ListForObject.Properties.UnreferencedFileRemoval",
                        "Resources.ObjectForString.Properties.TableBucketName",
                        "Resources.NestedUnknown.Properties.UnreferencedFileRemoval.Statuss",
                        "Resources.NestedUnknown.Properties.Tags[0].Value",
                        "Resources.UnknownType.Type",
                        "Resources.UnknownAttribute.DeletionPolcy")),
                new TreeSet<>(byPath.keySet()),
                "the paths of the errors found:\n" + lines(errors));
        for (CloudFormationSpec.Error e : errors) {
            assertTrue(
                    e.message().contains("expected ") && e.message().contains("found "),
                    "says what was expected and found: " + e);
        }
        assertTrue(
                byPath.get("Resources.Misspelled.Properties.TableBucketNam").contains("unknown property"),
                lines(errors));
        assertTrue(
                byPath.get("Resources.Misspelled.Properties.TableBucketName").contains("missing required"),
                lines(errors));
        assertTrue(
                byPath.get("Resources.ListForObject.Properties.UnreferencedFileRemoval")
                        .contains("expected a mapping (UnreferencedFileRemoval), found a list"),
                lines(errors));
        assertTrue(
                byPath.get("Resources.ObjectForString.Properties.TableBucketName")
                        .contains("expected a string, found a mapping"),
                lines(errors));
        assertTrue(byPath.get("Resources.UnknownType.Type").contains("AWS::S3Tables::TableBuckets"), lines(errors));
    }

    @Test
    void intrinsicFunctionsAndScalarsOfAnotherTypeAreAcceptedWhereValuesBelong(@TempDir Path dir) throws IOException {
        List<CloudFormationSpec.Error> errors = check(dir, """
        Parameters:
          Param:
            Type: String
        Conditions:
          Retain: !Equals [!Ref Param, retain]
        Resources:
          Bucket:
            Type: AWS::S3Tables::TableBucket
            DeletionPolicy: Retain
            Properties:
              TableBucketName: !Sub "${Param}-tables"
              UnreferencedFileRemoval: !If [Retain, !Ref AWS::NoValue, {Status: Enabled, UnreferencedDays: "3"}]
              EncryptionConfiguration:
                SSEAlgorithm: !Ref Param
              Tags:
                - Key: owner
                  Value: !Ref Param
                - !If [Retain, {Key: retained, Value: true}, !Ref AWS::NoValue]
                - Key: 42
                  Value: false
          Namespace:
            Type: AWS::S3Tables::Namespace
            DependsOn: [Bucket]
            Properties:
              TableBucketARN: !GetAtt Bucket.TableBucketARN
              Namespace: !Join ["_", [!Ref Param, db]]
          Custom:
            Type: Custom::Anything
            Properties:
              Whatever: [1, {two: 2}]
          Function:
            Type: AWS::Serverless::Function
            Connectors: {}
            Properties:
              LeftToSamsSchema: true
        """);
        assertTrue(
                errors.isEmpty(),
                () -> "errors where intrinsics, scalars or unchecked types belong:\n" + lines(errors));
    }

    private static JsonNode template() {
        return SamTemplate.read(ProjectFiles.root().resolve("template.yaml")).root();
    }

    /** The errors of a template, written to a file and read as template.yaml is. */
    private static List<CloudFormationSpec.Error> check(Path dir, String yaml) throws IOException {
        Path file = Files.writeString(dir.resolve("template.yaml"), yaml);
        return SPEC.check(SamTemplate.read(file).root());
    }

    private static String lines(List<CloudFormationSpec.Error> errors) {
        return errors.stream().map(CloudFormationSpec.Error::toString).collect(Collectors.joining("\n"));
    }
}
