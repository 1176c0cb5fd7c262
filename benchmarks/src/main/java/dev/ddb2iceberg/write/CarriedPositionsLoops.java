package dev.ddb2iceberg.write;

import dev.ddb2iceberg.lookup.LiveRow;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.apache.iceberg.deletes.Deletes;
import org.apache.iceberg.deletes.PositionDeleteIndex;
import org.apache.iceberg.io.CloseableIterable;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * JMH: the positions a data file's new delete file holds, its earlier ones (a bitmap index, as the
 * merger holds them) and a merge's 300 new ones, ascending and distinct. {@code positionsOf} is the
 * merger's way (sort the new ones, merge); {@code sortAll} is the way before 2026-12-05 (collect
 * both, sort all), kept here as the baseline. µs a data file. Run: {@code java -cp …
 * org.openjdk.jmh.Main CarriedPositionsLoops}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(
        value = 1,
        jvmArgsAppend = {"-XX:+UseParallelGC", "-Xmx2g"}) // the merger's collector, as the template sets it
public class CarriedPositionsLoops {
    /** Positions deleted earlier: one merge's share of a file, and what a large file carries after an hour. */
    @Param({"2000", "200000"})
    public int earlier;

    private PositionDeleteIndex before;
    private List<LiveRow> now;

    @Setup
    public void setUp() {
        Random random = new Random(1);
        long[] positions = random.longs(earlier, 0, earlier * 3L).toArray();
        before = Deletes.toPositionIndex(
                CloseableIterable.withNoopClose(Arrays.stream(positions).boxed().toList()));
        now = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            now.add(new LiveRow(null, random.nextLong(earlier * 3L), ""));
        }
    }

    @Benchmark
    public long[] positionsOf() {
        return MergeWriter.positionsOf(before, now);
    }

    /** The baseline: both sets collected and sorted whole. */
    @Benchmark
    public long[] sortAll() {
        long[] all = new long[(int) (now.size() + before.cardinality())];
        int n = 0;
        for (LiveRow row : now) {
            all[n++] = row.position();
        }
        int[] at = {n};
        before.forEach(p -> all[at[0]++] = p);
        n = at[0];
        Arrays.sort(all, 0, n);
        int distinct = 0;
        for (int i = 0; i < n; i++) {
            if (distinct == 0 || all[i] != all[distinct - 1]) {
                all[distinct++] = all[i];
            }
        }
        return Arrays.copyOf(all, distinct);
    }
}
