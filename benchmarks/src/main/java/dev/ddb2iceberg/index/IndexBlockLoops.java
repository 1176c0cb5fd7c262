package dev.ddb2iceberg.index;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
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
 * JMH: finding one key in a key index part held in memory ({@link PartFile#find}), as a merge does
 * for each changed key whose block no other key of the merge falls in: check the block's CRC,
 * decompress it, decode entries up to the key. At a billion rows nearly every changed key is alone
 * in its block, so this is a lookup's whole CPU cost there. The keys are the merge benchmark's (a
 * string partition key and a number sort key), the sequences DynamoDB's, 250 data files. The score
 * is microseconds a key, for each raw block size; {@code findOneKeyDecompressed} is the same scan in
 * a block a cache with room kept decompressed ({@link IndexCache#keepsDecompressed}). Setup prints the part's stored bytes per entry and
 * its footer's memory per entry, the other side of the trade. {@code writeWholePart} writes the
 * part's 200,000 entries into a new part, as a fold rewrites a part: microseconds a part. Run:
 * {@code benchmarks/run --jmh}, or
 * {@code java -cp … org.openjdk.jmh.Main IndexBlockLoops}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(
        value = 1,
        jvmArgsAppend = {"-XX:+UseParallelGC", "-Xmx2g"}) // the merger's collector, as the template sets it
public class IndexBlockLoops {
    private static final int ENTRIES = 200_000;
    private static final int LOOKUPS = 4096;

    @Param({"2048", "4096", "8192"})
    public int blockBytes;

    private PartFile.Footer footer;
    private byte[] part;
    private byte[][] lookups;
    /** Each block decompressed, as a cache with room keeps them ({@link IndexCache#keepsDecompressed}). */
    private byte[][] decompressed;

    private int next;

    private byte[][] keys;
    private PartFile.FileTable table;
    private byte[][] sequences;
    private int[] fileRefs;
    private long[] positions;

    @Setup
    public void setUp() {
        // Keys as the merge benchmark's items have them: partition key cust-(n/10), sort key n.
        byte[][] keys = new byte[ENTRIES][];
        for (int n = 0; n < ENTRIES; n++) {
            long item = n * 50L; // one item in 50: the keys of one part of 64 and more
            keys[n] = IndexKeys.encode(List.of(String.format("cust-%09d", item / 10), item));
        }
        Arrays.sort(keys, Arrays::compareUnsigned);
        String[] files = new String[250];
        for (int f = 0; f < files.length; f++) {
            files[f] = "s3://bench/warehouse/ddb2iceberg.db/orders/data/pk_bucket=" + (f % 64) + "/00012-3-" + f
                    + "-9f3d-4c55-a2b1-7e2f44c2d9aa-0-00001.parquet";
        }
        table = new PartFile.FileTable();
        for (String f : files) {
            table.ref(f);
        }
        Random random = new Random(1);
        BigInteger firstSequence = new BigInteger("100000000000000000000");
        this.keys = keys;
        sequences = new byte[ENTRIES][];
        fileRefs = new int[ENTRIES];
        positions = new long[ENTRIES];
        for (int n = 0; n < ENTRIES; n++) {
            sequences[n] = firstSequence
                    .add(BigInteger.valueOf(random.nextInt(1 << 30)))
                    .toByteArray();
            fileRefs[n] = random.nextInt(files.length);
            positions[n] = random.nextInt(1_000_000);
        }
        PartFile.Writer writer = writePart(table);
        part = writer.finish();
        footer = PartFile.footer("bench-part", part.length, part);
        decompressed = new byte[footer.blocks()][];
        for (int b = 0; b < footer.blocks(); b++) {
            decompressed[b] = PartFile.decompressBlock(footer, b, part, (int) footer.offset(b));
        }
        lookups = new byte[LOOKUPS][];
        for (int i = 0; i < LOOKUPS; i++) {
            lookups[i] = keys[random.nextInt(ENTRIES)];
        }
        System.err.printf(
                "%n%d-byte blocks: %d blocks, %.2f stored bytes an entry, footer in memory %.2f bytes an entry%n",
                blockBytes, footer.blocks(), (double) part.length / ENTRIES, (double) footer.memoryBytes() / ENTRIES);
    }

    /** The part's entries written into a new part, block by block, as a fold writes each part it rewrites. */
    private PartFile.Writer writePart(PartFile.FileTable files) {
        PartFile.Writer writer = new PartFile.Writer(files, ENTRIES, blockBytes);
        for (int n = 0; n < ENTRIES; n++) {
            writer.add(keys[n], 0, keys[n].length, fileRefs[n], positions[n], sequences[n], 0, sequences[n].length);
        }
        return writer;
    }

    /**
     * Writing a whole part of 200,000 entries (encoding and compressing each block, then the footer),
     * as a fold does for each part it rewrites: microseconds a part.
     */
    @Benchmark
    public int writeWholePart() {
        return writePart(table).finish().length;
    }

    @Benchmark
    public int findOneKey() {
        byte[] key = lookups[next++ & (LOOKUPS - 1)];
        int block = footer.blockOf(key);
        List<IndexEntries.Entry> found =
                PartFile.find(footer, block, part, (int) footer.offset(block), new ArrayList<>(List.of(key)));
        if (found.size() != 1) {
            throw new IllegalStateException("a key the part holds was not found in block " + block);
        }
        return (int) found.get(0).position();
    }

    /** As {@link #findOneKey}, in a block a cache kept decompressed: no CRC check, no decompression. */
    @Benchmark
    public int findOneKeyDecompressed() {
        byte[] key = lookups[next++ & (LOOKUPS - 1)];
        int block = footer.blockOf(key);
        List<IndexEntries.Entry> found =
                PartFile.findDecompressed(footer, block, decompressed[block], new ArrayList<>(List.of(key)));
        if (found.size() != 1) {
            throw new IllegalStateException("a key the part holds was not found in block " + block);
        }
        return (int) found.get(0).position();
    }
}
