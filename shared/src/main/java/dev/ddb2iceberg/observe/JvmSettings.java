package dev.ddb2iceberg.observe;

import com.sun.management.HotSpotDiagnosticMXBean;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.stream.Collectors;

/**
 * The JVM settings that decide a merge's speed, as the JVM reports them, for one log line at cold
 * start: the template asks for the parallel collector and the full JIT for the merger and
 * maintenance (twice the changes a second of Lambda's default, the serial collector with the C1
 * compiler only; BENCHMARKS.md, "The merger's JVM"), and this line shows whether Lambda took them.
 */
public final class JvmSettings {
    private JvmSettings() {}

    /**
     * Logs {@link #describe} from a daemon thread: the management beans take 30–50 ms to start
     * under C1, which would otherwise add to every cold start; beside the catalog's and S3
     * client's set-up (mostly waiting on the network) it costs nothing the invocation waits for.
     */
    public static void logInBackground(org.slf4j.Logger log) {
        Thread t = new Thread(() -> log.info("JVM: {}", describe()), "jvm-settings");
        t.setDaemon(true);
        t.start();
    }

    /**
     * For example "collectors [PS Scavenge, PS MarkSweep], TieredStopAtLevel=4, 2 processors, heap
     * 1808 MB from the start (max 1808 MB)": the JVM's own InitialHeapSize and MaxHeapSize.
     */
    public static String describe() {
        String collectors = ManagementFactory.getGarbageCollectorMXBeans().stream()
                .map(GarbageCollectorMXBean::getName)
                .collect(Collectors.joining(", ", "[", "]"));
        return "collectors " + collectors + ", TieredStopAtLevel=" + option("TieredStopAtLevel") + ", "
                + Runtime.getRuntime().availableProcessors() + " processors, heap " + megabytes("InitialHeapSize")
                + " MB from the start (max " + megabytes("MaxHeapSize") + " MB)";
    }

    /** A size option in MB, or what the JVM says of it when that is not a number. */
    private static String megabytes(String option) {
        String value = option(option);
        try {
            return Long.toString(Long.parseLong(value) >> 20);
        } catch (NumberFormatException e) {
            return value;
        }
    }

    private static String option(String name) {
        try {
            return ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class)
                    .getVMOption(name)
                    .getValue();
        } catch (RuntimeException e) {
            return "unknown";
        }
    }
}
