package dev.ddb2iceberg.write;

import dev.ddb2iceberg.lookup.LiveRow;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.deletes.Deletes;
import org.apache.iceberg.deletes.PositionDeleteIndex;
import org.apache.iceberg.inmemory.InMemoryCatalog;
import org.apache.iceberg.inmemory.InMemoryOutputFile;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;
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
 * JMH: writing one file-scoped position delete file ({@link PositionDeleteFileWriter}) into memory,
 * for a data file with a few hundred deleted positions (a merge's new ones) and with 20,000 (what a
 * data file carries forward after many merges before compaction). The score is microseconds a file;
 * divide by the positions for the cost of one. And the positions such a file holds: those positions
 * deleted earlier (a bitmap index, as the merger holds them) and a merge's 300 new ones, ascending
 * and distinct ({@code carriedPositions}, the merger's way: sort the new ones, merge; {@code
 * carriedPositionsSortedWhole}, the way before 2026-12-05 kept as the baseline: sort both). In this
 * package, beside the writer, because the writer is the library's own (package-private). Run:
 * {@code benchmarks/run --jmh}, or
 * {@code java -cp … org.openjdk.jmh.Main DeleteFileLoops}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(
        value = 1,
        jvmArgsAppend = {"-XX:+UseParallelGC", "-Xmx2g"}) // the merger's collector, as the template sets it
public class DeleteFileLoops {
    @Param({"500", "20000"})
    public int positions;

    private Table table;
    private DataFile dataFile;
    private long[] deleted;
    private Map<String, String> settings;
    private int next;
    private PositionDeleteIndex earlier;
    private List<LiveRow> now;

    @Setup
    public void setUp() {
        InMemoryCatalog catalog = new InMemoryCatalog();
        catalog.initialize("bench", Map.of());
        catalog.createNamespace(Namespace.of("bench"));
        table = catalog.createTable(
                TableIdentifier.of("bench", "t"),
                new Schema(Types.NestedField.required(1, "pk", Types.StringType.get())),
                PartitionSpec.unpartitioned());
        // A path as long as the merger's: warehouse, table, partition, a writer's unique name.
        dataFile = DataFiles.builder(table.spec())
                .withPath("s3://bench/warehouse/ddb2iceberg.db/orders/data/pk_bucket=7/"
                        + "00012-3-4b2a7c1e-9f3d-4c55-a2b1-7e2f44c2d9aa-0-00001.parquet")
                .withFileSizeInBytes(128L << 20)
                .withRecordCount(1_000_000)
                .withFormat(FileFormat.PARQUET)
                .build();
        deleted = new long[positions];
        Random random = new Random(1);
        long p = 0;
        for (int i = 0; i < positions; i++) {
            p += 1 + random.nextInt(20); // ascending and distinct, as a merge hands them over
            deleted[i] = p;
        }
        settings = MergeWriter.mergeFileSettings(table.properties());
        earlier = Deletes.toPositionIndex(
                CloseableIterable.withNoopClose(Arrays.stream(deleted).boxed().toList()));
        now = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            now.add(new LiveRow(null, random.nextLong(p + 1), java.math.BigInteger.ONE));
        }
    }

    /** One delete file, its bytes compressed as a merge writes them (µs a file). */
    @Benchmark
    public DeleteFile writePositionDeleteFile() {
        return PositionDeleteFileWriter.write(
                table, new InMemoryOutputFile("mem://deletes-" + next++), dataFile, deleted, settings);
    }

    /** The positions a data file's new delete file holds, the merger's way (µs a file). */
    @Benchmark
    public long[] carriedPositions() {
        return MergeWriter.positionsOf(earlier, now);
    }

    /** The baseline: both sets collected and sorted whole, as before 2026-12-05. */
    @Benchmark
    public long[] carriedPositionsSortedWhole() {
        long[] all = new long[(int) (now.size() + earlier.cardinality())];
        int n = 0;
        for (LiveRow row : now) {
            all[n++] = row.position();
        }
        int[] at = {n};
        earlier.forEach(pos -> all[at[0]++] = pos);
        Arrays.sort(all, 0, at[0]);
        int distinct = 0;
        for (int i = 0; i < at[0]; i++) {
            if (distinct == 0 || all[i] != all[distinct - 1]) {
                all[distinct++] = all[i];
            }
        }
        return Arrays.copyOf(all, distinct);
    }
}
