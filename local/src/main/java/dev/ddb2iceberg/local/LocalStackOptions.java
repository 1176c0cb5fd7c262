package dev.ddb2iceberg.local;

import java.io.PrintWriter;
import java.net.URI;
import java.nio.file.Path;
import java.util.Map;
import java.util.function.Supplier;
import org.apache.iceberg.jdbc.UncheckedSQLException;
import picocli.CommandLine.Option;
import software.amazon.awssdk.core.exception.SdkClientException;

/** The options of commands that act on a deployed-like stack: its settings file and the template. */
final class LocalStackOptions {
    @Option(
            names = {"-n", "--env-vars"},
            defaultValue = "events/env-local.json",
            paramLabel = "FILE",
            description = "JSON environment overrides, in sam's shape (default: ${DEFAULT-VALUE}, the local stack"
                    + " `up` runs by default; for `up --work-dir DIR`, DIR/env-vars.json)")
    Path envVars;

    @Option(
            names = {"-t", "--template"},
            defaultValue = "template.yaml",
            paramLabel = "FILE",
            description = "the SAM template (default: ${DEFAULT-VALUE})")
    Path template;

    private Map<String, String> env = Map.of();

    /**
     * Function {@code logicalId}'s environment from the template, the shell and the env-vars file;
     * refused with the {@code up} command to run when its S3 endpoint does not answer.
     */
    Map<String, String> environment(String logicalId, PrintWriter err) {
        env = FunctionEnvironment.of(SamTemplate.read(template), logicalId, envVars, err);
        LocalStackProbe.requireRunning(env, envVars);
        return env;
    }

    /**
     * Runs {@code work} against the stack's catalog and S3 (after {@link #environment}); a catalog
     * that cannot be opened or an S3 endpoint that stops answering is a one-line error.
     */
    <T> T reach(Supplier<T> work) {
        try {
            return work.get();
        } catch (UncheckedSQLException noCatalog) {
            throw new UserError("cannot open the catalog " + env.get("CATALOG_URI") + " (" + noCatalog.getMessage()
                    + "); for the local stack, start it first: " + LocalStackProbe.upCommand(env));
        } catch (SdkClientException unreachable) {
            String endpoint = env.get("S3_ENDPOINT");
            throw new UserError(
                    endpoint == null || endpoint.isBlank()
                            ? "cannot reach S3 (" + unreachable.getMessage() + ")"
                            : LocalStackProbe.notRunning(
                                    env, URI.create(endpoint.trim()), unreachable.getMessage(), envVars));
        }
    }
}
