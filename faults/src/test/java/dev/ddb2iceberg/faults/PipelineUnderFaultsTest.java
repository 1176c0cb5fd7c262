package dev.ddb2iceberg.faults;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * The whole pipeline, seed after seed, under random workloads, deliveries, crashes, commit races
 * and S3 errors (see {@link PipelineHarness}). Which seeds: {@link Seeds} (a fixed range, and a window
 * that changes with each commit); {@code -Dfaults.seed=S} runs one seed, as a failure message says.
 * Real S3 server and SQLite catalog; DynamoDB and its stream are modelled ({@link SourceTable}).
 */
class PipelineUnderFaultsTest {
    private static final FaultStats STATS = new FaultStats();
    private static final long[] SEEDS = Seeds.chosen();
    /**
     * One S3 server per worker thread: injected faults act on a whole server, so two seeds running
     * at once must not share one.
     */
    private static final Queue<EmbeddedS3Server> SERVERS = new ConcurrentLinkedQueue<>();

    private static final ThreadLocal<EmbeddedS3Server> SERVER = ThreadLocal.withInitial(() -> {
        EmbeddedS3Server server = EmbeddedS3Server.inMemory();
        SERVERS.add(server);
        return server;
    });

    @TempDir
    Path dir;

    @TestFactory
    List<DynamicTest> theTableEqualsTheSourceWhateverHappens() {
        List<DynamicTest> tests = new ArrayList<>();
        for (long seed : SEEDS) {
            tests.add(DynamicTest.dynamicTest("seed " + seed, () -> {
                Path work = Files.createDirectories(dir.resolve("seed-" + seed));
                EmbeddedS3Server server = SERVER.get();
                new PipelineHarness(seed, server, S3ServerExtension.newBucket(server), work, STATS).run(14);
            }));
        }
        return tests;
    }

    @AfterAll
    static void report() {
        SERVERS.forEach(EmbeddedS3Server::close);
        System.out.println("Pipeline under faults, all seeds:\n" + STATS);
        assertTrue(STATS.get("seeds") > 0 || SEEDS.length == 0, "no seed ran");
    }
}
