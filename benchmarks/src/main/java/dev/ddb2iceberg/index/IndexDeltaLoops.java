package dev.ddb2iceberg.index;

import java.math.BigInteger;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.apache.iceberg.inmemory.InMemoryFileIO;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * JMH: writing one merge's key index delta ({@link IndexFile#write}) into memory: 150,000 entries,
 * what a steady merge of 100,000 changes into 10M rows records (its written and moved rows and its
 * tombstones), on the merge's commit path, on one thread. The score is milliseconds a delta; setup
 * prints its size. Run:
 * {@code benchmarks/run --jmh}, or {@code java -cp … org.openjdk.jmh.Main IndexDeltaLoops}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(
        value = 1,
        jvmArgsAppend = {"-XX:+UseParallelGC", "-Xmx2g"}) // the merger's collector, as the template sets it
public class IndexDeltaLoops {
    private static final int ENTRIES = 150_000;

    private final InMemoryFileIO io = new InMemoryFileIO();
    private IndexEntries delta;

    @Setup
    public void setUp() {
        Random random = new Random(1);
        IndexEntries.Builder b = new IndexEntries.Builder();
        BigInteger firstSequence = new BigInteger("100000000000000000000");
        for (int i = 0; i < ENTRIES; i++) {
            long n = random.nextInt(10_000_000);
            byte[] key = IndexKeys.encode(List.of(String.format("cust-%09d", n / 10), n));
            byte[] sequence = firstSequence.add(BigInteger.valueOf(i)).toByteArray();
            String file = i % 8 == 0
                    ? null // a removed item's tombstone
                    : "s3://bench/warehouse/ddb2iceberg.db/orders/data/pk_bucket=" + (i % 16) + "/00012-3-" + (i % 64)
                            + "-9f3d-4c55-a2b1-7e2f44c2d9aa-0-00001.parquet";
            b.add(key, file, random.nextInt(1_000_000), sequence);
        }
        delta = b.build();
        System.err.printf("%n%,d entries: %,d bytes stored%n", delta.size(), writeDelta());
    }

    @Benchmark
    public long writeDelta() {
        return IndexFile.write(io, "mem://bench/delta.bin", delta);
    }
}
