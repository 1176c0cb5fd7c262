package dev.ddb2iceberg.local;

import dev.ddb2iceberg.config.Setting;
import dev.ddb2iceberg.config.Settings;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A function's environment for a local run, in sam local invoke's order: the template's variables,
 * then the settings of the shell's environment, then the env-vars file's. A setting exported in the
 * shell is honoured, as sam honours it, and named on stderr, so that a variable the shell happens to
 * hold (TABLE_NAME, say) never decides silently where a function writes.
 */
final class FunctionEnvironment {
    /** What the shell gives every local run without a note: the region and credentials, as for any AWS tool. */
    private static final Set<String> EXPECTED_FROM_SHELL = Set.of(
            Settings.AWS_REGION.name(),
            Settings.AWS_ACCESS_KEY_ID.name(),
            Settings.AWS_SECRET_ACCESS_KEY.name(),
            Settings.AWS_SESSION_TOKEN.name());

    private FunctionEnvironment() {}

    /** The environment with this process's own shell environment. */
    static Map<String, String> of(SamTemplate template, String logicalId, Path envVars, PrintWriter err) {
        return of(template, logicalId, envVars, System.getenv(), err);
    }

    /**
     * Function {@code logicalId}'s variables: its template's, then the catalogue's settings found in
     * {@code shell}, then those of the env-vars file {@code envVars} (may be null). The settings taken
     * from the shell, and not overridden by the file, are named on {@code err}.
     */
    static Map<String, String> of(
            SamTemplate template, String logicalId, Path envVars, Map<String, String> shell, PrintWriter err) {
        SamTemplate.Function function = template.function(logicalId);
        Map<String, String> env = new LinkedHashMap<>();
        env.put(Settings.AWS_REGION.name(), Settings.AWS_REGION.defaultValue());
        env.putAll(function.environment());
        List<String> fromShell = new ArrayList<>();
        for (Setting s : Settings.all()) {
            String value = shell.get(s.name());
            if (value != null) {
                env.put(s.name(), value);
                fromShell.add(s.name());
            }
        }
        if (envVars != null) {
            Map<String, String> file = EnvVarsFile.variables(envVars, logicalId, template.functionIds());
            env.putAll(file);
            fromShell.removeAll(file.keySet());
        }
        fromShell.removeAll(EXPECTED_FROM_SHELL);
        if (!fromShell.isEmpty()) {
            err.println("Settings from the shell's environment: " + String.join(", ", fromShell)
                    + " (an env-vars file's values win over the shell's; the template's lose to both)");
            err.flush();
        }
        return env;
    }
}
