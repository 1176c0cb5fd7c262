package dev.ddb2iceberg.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.embedded.AwsTools;
import dev.ddb2iceberg.embedded.ProjectFiles;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * template.yaml through AWS's own checks: cfn-lint 1.51.0, which first transforms it with AWS's SAM
 * translator 1.110.0 (what CloudFormation's AWS::Serverless transform runs), then applies
 * CloudFormation's rules to the result. It sees what the schema checks of {@link TemplateTest}
 * cannot: a parameter and a resource SAM generates sharing a name, circular references, values
 * that cannot match once references are resolved.
 *
 * <p>Any error or warning fails the build. A warning that cannot be fixed is suppressed where it
 * arises, in the resource's {@code Metadata: cfn-lint: config: ignore_checks: [W…]}, with a comment
 * saying why, so the template itself lists it; there is none today (2026-12-08). The Python
 * packages are installed when missing ({@link AwsTools}); without them the test fails, never skips.
 */
class CfnLintTest {
    private static final Duration LIMIT = Duration.ofMinutes(3);
    /** cfn-lint as its console script runs it, with the python3 the packages were checked for. */
    private static final List<String> CFN_LINT =
            List.of("-c", "import sys; from cfnlint.runner import main; sys.exit(main())");

    @Test
    void cfnLintFindsNoErrorAndNoWarningInTheTemplate() {
        AwsTools.ensureInstalled();
        AwsTools.Result lint = AwsTools.python(with(CFN_LINT, "template.yaml"), LIMIT);
        assertEquals(
                0,
                lint.exit(),
                () -> "cfn-lint template.yaml exited " + lint.exit()
                        + " (2: errors, 4: warnings, 1: cfn-lint failed):\n" + lint.out() + lint.err());
    }

    /**
     * The check can fail: with the Maintenance function's schedule event named {@code Schedule}
     * again, as it was until 2026-12-08, SAM names the schedule MaintenanceSchedule, the name of a
     * parameter, which CloudFormation refuses.
     */
    @Test
    void cfnLintRejectsAGeneratedResourceNamedAsAParameter(@TempDir Path dir) throws Exception {
        AwsTools.ensureInstalled();
        String template = Files.readString(ProjectFiles.root().resolve("template.yaml"));
        String event = "        ScheduledRun:\n          Type: ScheduleV2\n";
        assertEquals(1, template.split(event, -1).length - 1, "the Maintenance function's schedule event");
        Path broken = dir.resolve("template.yaml");
        Files.writeString(broken, template.replace(event, "        Schedule:\n          Type: ScheduleV2\n"));
        AwsTools.Result lint = AwsTools.python(with(CFN_LINT, broken.toString()), LIMIT);
        assertTrue(
                lint.out().contains("E3007 Resources and Parameters must not share name: MaintenanceSchedule"),
                () -> "cfn-lint exited " + lint.exit() + " without E3007 for MaintenanceSchedule:\n" + lint.out()
                        + lint.err());
    }

    private static List<String> with(List<String> command, String argument) {
        List<String> all = new ArrayList<>(command);
        all.add(argument);
        return all;
    }
}
