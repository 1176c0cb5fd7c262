package dev.ddb2iceberg.merge;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.function.MergerSettings;
import dev.ddb2iceberg.testkit.KeyedWorkload;
import dev.ddb2iceberg.testkit.MergerFixture;
import dev.ddb2iceberg.testkit.MovableClock;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Continuous mode against the real merger (embedded S3 over HTTP, the SQLite catalog). Time is a
 * clock the test moves: a merge "takes" the time the test says, and the loop's waits move the clock
 * to the time waited for, during which the stream stages what the test has it stage. So deadlines
 * are checked exactly, without sleeping or timing anything.
 */
@ExtendWith(S3ServerExtension.class)
class ContinuousMergeTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Instant T0 = Instant.parse("2026-11-30T12:00:00Z");

    @TempDir
    Path dir;

    private final KeyedWorkload workload = new KeyedWorkload(7, 200);
    private final MovableClock clock = new MovableClock(T0);
    private MergerFixture pipeline;

    @BeforeEach
    void setUp(EmbeddedS3Server server) {
        pipeline = new MergerFixture(server, dir, Map.of("MERGE_MODE", "continuous"));
    }

    /** One batch of the stream, staged as the stager would, and remembered in the model. */
    private void stageBatch(int changes) {
        pipeline.stage(workload.next(changes));
    }

    /** A merge by the real merger that takes {@code durations[i]} of the test's time (the last one repeats). */
    private final class TimedMerges {
        final List<Instant[]> spans = new ArrayList<>();
        private final Duration[] durations;

        TimedMerges(Duration... durations) {
            this.durations = durations;
        }

        MergeResult run() {
            Instant start = clock.instant();
            MergeResult r = pipeline.merger().run();
            clock.advance(durations[Math.min(spans.size(), durations.length - 1)]);
            spans.add(new Instant[] {start, clock.instant()});
            return r;
        }
    }

    @Test
    void aRunNeverStartsAMergeItCannotCommitBeforeItsDeadlineAndTheNextRunPicksUpCleanly() {
        stageBatch(30);
        // Merges slow down as the run goes on (2, 3, 4, 6 s...), each within twice the longest before it,
        // so a merge started on the rule's estimate commits in time, and one started on less would not.
        TimedMerges merges = new TimedMerges(
                Duration.ofSeconds(2),
                Duration.ofSeconds(3),
                Duration.ofSeconds(4),
                Duration.ofSeconds(6),
                Duration.ofSeconds(8),
                Duration.ofSeconds(12),
                Duration.ofSeconds(16));
        // The stream keeps flowing: every wait ends with a new batch staged.
        ContinuousMerge.Pause streamFlows = t -> {
            clock.set(t);
            stageBatch(10);
        };
        Instant deadline = T0.plus(pipeline.settings().continuous().runLength());
        ContinuousMerge.Result run = new ContinuousMerge(
                        pipeline.settings().continuous(), merges::run, pipeline.store()::anyStaged, clock, streamFlows)
                .run(deadline);

        assertEquals(
                ContinuousMerge.Stop.DEADLINE, run.stoppedBecause(), "a run with changes flowing ends at its deadline");
        for (Instant[] span : merges.spans) {
            assertFalse(
                    span[1].isAfter(deadline),
                    "a merge ran from " + span[0] + " to " + span[1] + ", past the deadline " + deadline);
        }
        Duration needed = Duration.ofMillis(run.longestMergeMillis()).multipliedBy(2);
        assertTrue(
                clock.instant().plus(needed).isAfter(deadline),
                "the run stopped at " + clock.instant() + " although another merge (needing " + needed + ") fit before "
                        + deadline);
        assertTrue(merges.spans.size() >= 6, "merges in 57 s at a 5 s interval: " + merges.spans.size());
        assertEquals(merges.spans.size(), run.commits(), "every merge had changes to commit");

        // The stream goes on between runs; what it stages waits for the next scheduled run.
        stageBatch(10);
        clock.set(T0.plus(Duration.ofMinutes(1)));
        TimedMerges quick = new TimedMerges(Duration.ofSeconds(1));
        ContinuousMerge.Result next = new ContinuousMerge(
                        pipeline.settings().continuous(), quick::run, pipeline.store()::anyStaged, clock, clock::set)
                .run(clock.instant().plus(pipeline.settings().continuous().runLength()));
        assertEquals(ContinuousMerge.Stop.IDLE, next.stoppedBecause(), "nothing more arrives: the run ends idle");
        assertEquals(1, next.commits(), "the next run merges what waited, once");
        assertFalse(pipeline.store().anyStaged(), "nothing is left staged");
        pipeline.assertTableHoldsModel();
    }

    @Test
    void aRunThatFindsNothingStagedReturnsAtOnceAndOneThatStopsReceivingReturnsAfterTheIdleTime() {
        TimedMerges merges = new TimedMerges(Duration.ofSeconds(1));
        List<Instant> waits = new ArrayList<>();
        ContinuousMerge.Pause pause = t -> {
            waits.add(t);
            clock.set(t);
        };
        ContinuousMerge.Result empty = new ContinuousMerge(
                        pipeline.settings().continuous(), merges::run, pipeline.store()::anyStaged, clock, pause)
                .run(T0.plus(Duration.ofSeconds(55)));
        assertEquals(ContinuousMerge.Stop.NOTHING_STAGED, empty.stoppedBecause());
        assertEquals(1, empty.merges().size(), "one look, as a scheduled run would");
        assertEquals(List.of(), waits, "an idle minute does not wait");

        stageBatch(20);
        Instant start = clock.instant();
        ContinuousMerge.Result quiet = new ContinuousMerge(
                        pipeline.settings().continuous(), merges::run, pipeline.store()::anyStaged, clock, pause)
                .run(start.plus(Duration.ofSeconds(55)));
        assertEquals(ContinuousMerge.Stop.IDLE, quiet.stoppedBecause());
        assertEquals(1, quiet.commits());
        // Merge at 0 s; looks every 5 s find nothing; then nothing has come for longer than the idle time.
        List<Instant> expected = new ArrayList<>();
        Duration interval = pipeline.settings().continuous().interval();
        for (Instant t = start.plus(interval);
                !t.isAfter(start.plus(pipeline.settings().continuous().idle()));
                t = t.plus(interval)) {
            expected.add(t);
        }
        assertEquals(6, expected.size(), "looks in 30 s at 5 s intervals");
        assertEquals(
                expected,
                waits,
                "the run looks every MERGE_INTERVAL_SECONDS until MERGE_IDLE_SECONDS pass with nothing staged");
        pipeline.assertTableHoldsModel();
    }

    @Test
    void aBacklogIsMergedAtOnceWithoutWaitingForTheInterval() {
        for (int i = 0; i < 5; i++) {
            stageBatch(20);
        }
        MergerSettings settings = pipeline.settings();
        pipeline.use(new MergerSettings(
                settings.staging(),
                settings.s3(),
                settings.catalog(),
                pipeline.settings().table(),
                pipeline.settings().options().withMaxChanges(20),
                pipeline.settings().continuous()));
        TimedMerges merges = new TimedMerges(Duration.ofSeconds(1));
        List<Instant> waits = new ArrayList<>();
        ContinuousMerge.Result run = new ContinuousMerge(
                        pipeline.settings().continuous(), merges::run, pipeline.store()::anyStaged, clock, t -> {
                            waits.add(t);
                            clock.set(t);
                        })
                .run(T0.plus(Duration.ofSeconds(55)));
        assertEquals(5, run.commits(), "one object (20 changes) a merge");
        for (int i = 1; i < 5; i++) {
            assertEquals(
                    merges.spans.get(i - 1)[1],
                    merges.spans.get(i)[0],
                    "merge " + i + " started when the one before" + " ended, since that one left a backlog");
        }
        assertEquals(ContinuousMerge.Stop.IDLE, run.stoppedBecause());
        pipeline.assertTableHoldsModel();
    }

    @Test
    void aRunWhoseMergesAreHeldForAParallelLoadEndsAfterItsFirstLookInsteadOfSpinning() {
        stageBatch(20);
        pipeline.env.put("INITIAL_LOAD", "parallel-export"); // no export loaded yet: merges wait
        pipeline.reconfigure();
        TimedMerges merges = new TimedMerges(Duration.ofMillis(200));
        ContinuousMerge.Result run = new ContinuousMerge(
                        pipeline.settings().continuous(),
                        merges::run,
                        pipeline.store()::anyStaged,
                        clock,
                        t -> clock.set(t))
                .run(T0.plus(Duration.ofSeconds(55)));
        assertEquals(ContinuousMerge.Stop.HELD, run.stoppedBecause());
        assertEquals(1, run.merges().size(), "one look, then the run returns: " + run.merges());
        assertEquals(1, run.merges().get(0).backlogObjects(), "the staged batch waits");
        assertTrue(
                run.merges().get(0).heldBecause().contains("INITIAL_LOAD=parallel-export"),
                run.merges().get(0).heldBecause());
    }
}
