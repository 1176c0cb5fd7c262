package dev.ddb2iceberg.benchmarks;

import com.amazonaws.services.lambda.runtime.serialization.events.LambdaEventSerializers;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.PackagedFunction;
import dev.ddb2iceberg.embedded.ProjectFiles;
import dev.ddb2iceberg.testkit.LocalStack;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.sqlite.JDBC;

/**
 * Cold start: a fresh JVM running a function's deployable jar to its first handled event (a small
 * one), median of several runs, with the Lambda runtime's advice (-XX:+TieredCompilation
 * -XX:TieredStopAtLevel=1, which template.yaml gives the stager) and with the flags template.yaml
 * gives the function (the merger and maintenance: -XX:+UseParallelGC, the full JIT). Needs `mvn
 * package` first.
 *
 * <p>Run: {@code java -cp ... dev.ddb2iceberg.benchmarks.ColdStart [runs]}
 */
public final class ColdStart {
    public static void main(String[] args) throws Exception {
        int runs = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        Path root = ProjectFiles.root();
        Path dir = Files.createTempDirectory("cold-start");
        try (EmbeddedS3Server server = EmbeddedS3Server.inMemory()) {
            server.createBucket("cold");
            Map<String, String> env = new LocalStack(server, "cold", dir).environment("cold");
            List<String> c1 = List.of("-XX:+TieredCompilation", "-XX:TieredStopAtLevel=1");
            List<String> parallel = List.of("-XX:+UseParallelGC");
            String[][] functions = {
                {"stager", "dev.ddb2iceberg.stager.StagerHandler", "stager-batch.json"},
                {"merger", "dev.ddb2iceberg.merger.MergerHandler", "merger-schedule.json"},
                {"maintenance", "dev.ddb2iceberg.maintainer.MaintenanceHandler", "maintenance-schedule.json"}
            };
            System.out.printf("%-12s %-22s %-22s%n", "function", "C1 only (ms)", "template's flags (ms)");
            for (String[] f : functions) {
                Path jar = root.resolve("functions/" + f[0] + "/target/" + f[0] + "-lambda.jar");
                Path event = root.resolve("events/" + f[2]);
                long c1Only = median(runs, jar, f[1], env, event, c1);
                long template = f[0].equals("stager") ? c1Only : median(runs, jar, f[1], env, event, parallel);
                System.out.printf("%-12s %-22d %-22d%n", f[0], c1Only, template);
                Results.report(
                        "cold start, " + f[0] + " (median of " + runs + "; C1 only / the template's flags)",
                        "<= 1.0 s",
                        String.format("%.2f / %.2f s", c1Only / 1000.0, template / 1000.0));
            }
        }
    }

    private static long median(
            int runs, Path jar, String handler, Map<String, String> env, Path event, List<String> flags)
            throws Exception {
        long[] times = new long[runs];
        for (int i = 0; i < runs; i++) {
            long t0 = System.nanoTime();
            PackagedFunction.Result r =
                    PackagedFunction.invoke(jar, handler, env, event, flags, LambdaEventSerializers.class, JDBC.class);
            times[i] = (System.nanoTime() - t0) / 1_000_000;
            if (r.exit() != 0) {
                throw new IllegalStateException(handler + " failed: " + r.log());
            }
        }
        Arrays.sort(times);
        return times[runs / 2];
    }
}
