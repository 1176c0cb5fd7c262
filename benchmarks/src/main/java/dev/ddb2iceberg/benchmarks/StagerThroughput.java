package dev.ddb2iceberg.benchmarks;

import com.amazonaws.services.lambda.runtime.events.DynamodbEvent;
import com.amazonaws.services.lambda.runtime.serialization.PojoSerializer;
import com.amazonaws.services.lambda.runtime.serialization.events.LambdaEventSerializers;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.staging.StagedFormat;
import dev.ddb2iceberg.stream.StreamRecordDecoder;
import dev.ddb2iceberg.testkit.StreamEvents;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import javax.management.ObjectName;

/**
 * Stager throughput on one thread: a 10,000-record batch of ~600-byte items, decoded from the
 * Lambda event objects into changes, encoded and compressed into one staged object (the stager's
 * work, excluding the network). Also reports the Lambda runtime's JSON deserialization of the same
 * batch, which happens before the handler runs, and the read-back speed the merger sees.
 *
 * <p>Run: {@code mvn -q -pl benchmarks -am install -DskipTests && mvn -q -pl benchmarks exec:java}
 */
public final class StagerThroughput {
    private static final int RECORDS = 10_000;

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 30;
        List<Change> changes = realisticBatch(new Random(1));
        DynamodbEvent event = StreamEvents.batch(changes);
        PojoSerializer<DynamodbEvent> serializer =
                LambdaEventSerializers.serializerFor(DynamodbEvent.class, StagerThroughput.class.getClassLoader());
        ByteArrayOutputStream json = new ByteArrayOutputStream();
        serializer.toJson(event, json);
        byte[] eventJson = json.toByteArray();
        byte[] staged = StagedFormat.write(changes);
        // The staged body before compression is close to DynamoDB's own item size (names + values).
        int body = ByteBuffer.wrap(staged, 10, 4).getInt();
        System.out.printf(
                "batch: %,d records of ~%,d bytes (uncompressed staged form), event JSON %,d bytes per record,"
                        + " staged object %,d bytes (%.1fx smaller than the event)%n",
                RECORDS,
                body / RECORDS,
                eventJson.length / RECORDS,
                staged.length,
                (double) eventJson.length / staged.length);

        double stage = best(rounds, () -> {
            List<Change> decoded = new ArrayList<>(RECORDS);
            for (var r : event.getRecords()) {
                decoded.add(StreamRecordDecoder.decode(r));
            }
            return StagedFormat.write(decoded).length;
        });
        double runtimeJson = best(
                rounds,
                () -> serializer
                        .fromJson(new ByteArrayInputStream(eventJson))
                        .getRecords()
                        .size());
        double readBack = best(rounds, () -> StagedFormat.read(staged, "bench").size());

        Held held = held(staged, 50);

        System.out.printf("stager decode + encode + compress: %,.0f records/s%n", RECORDS / stage);
        System.out.printf(
                "Lambda runtime JSON -> DynamodbEvent (before the handler): %,.0f records/s%n", RECORDS / runtimeJson);
        System.out.printf("merger read-back (decompress + decode): %,.0f records/s%n", RECORDS / readBack);
        Results.report(
                "stager: decode + encode + compress, 10,000-record batches of ~600-byte items, one thread",
                ">= 100,000 records/s",
                String.format("%,.0f records/s", RECORDS / stage));
        Results.report(
                "merger read-back of a staged object (decompress + decode), one thread",
                "-",
                String.format("%,.0f records/s", RECORDS / readBack));
        System.out.printf(
                "merger: %,d changes read back hold %,.0f bytes and %.1f objects a change%n",
                held.changes(), held.bytes(), held.objects());
        Results.report(
                "merger: heap a staged change holds once read back (what a merge holds until it commits), these items",
                "-",
                String.format("%,.0f bytes, %.1f objects a change", held.bytes(), held.objects()));
    }

    record Held(int changes, double bytes, double objects) {}

    /**
     * The heap and objects that {@code copies} read-backs of {@code staged} hold, per change: a merge
     * holds every change of its run until it commits, and the collector copies and marks each of
     * those objects, so their count is what a run of a million changes pays for.
     */
    private static Held held(byte[] staged, int copies) throws Exception {
        long bytesBefore = heapUsed();
        long objectsBefore = liveObjects();
        List<List<Change>> read = new ArrayList<>(copies);
        for (int i = 0; i < copies; i++) {
            read.add(StagedFormat.read(staged, "held-" + i));
        }
        long bytes = heapUsed() - bytesBefore;
        long objects = liveObjects() - objectsBefore;
        int changes = read.stream().mapToInt(List::size).sum();
        return new Held(changes, (double) bytes / changes, (double) objects / changes);
    }

    private static long heapUsed() {
        System.gc();
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    /** Objects on the heap that are reachable: the total of the JVM's live class histogram (a full collection). */
    private static long liveObjects() throws Exception {
        String histogram = (String) ManagementFactory.getPlatformMBeanServer()
                .invoke(
                        new ObjectName("com.sun.management:type=DiagnosticCommand"),
                        "gcClassHistogram",
                        new Object[] {new String[0]},
                        new String[] {String[].class.getName()});
        String[] lines = histogram.trim().split("\n");
        return Long.parseLong(lines[lines.length - 1].trim().split("\\s+")[1]); // "Total <objects> <bytes>"
    }

    interface Work {
        int run() throws Exception;
    }

    /** Best of {@code rounds} timings in seconds, after the JIT has warmed up on the same work. */
    private static double best(int rounds, Work work) throws Exception {
        long sink = 0;
        double best = Double.MAX_VALUE;
        for (int i = 0; i < rounds; i++) {
            long t0 = System.nanoTime();
            sink += work.run();
            best = Math.min(best, (System.nanoTime() - t0) / 1e9);
        }
        if (sink == 42) {
            System.out.println();
        }
        return best;
    }

    /** Orders-like items of about 600 bytes: strings, numbers, a flag, a small map and a list. */
    static List<Change> realisticBatch(Random random) {
        List<Change> out = new ArrayList<>(RECORDS);
        for (int i = 0; i < RECORDS; i++) {
            Map<String, DdbValue> keys = new LinkedHashMap<>();
            keys.put("customer_id", new DdbValue.S("CUST-" + (100000 + random.nextInt(900000))));
            keys.put("order_id", new DdbValue.N(Long.toString(1_000_000_000L + random.nextInt(1_000_000_000))));
            Operation op = i % 10 == 9 ? Operation.REMOVE : (i % 3 == 0 ? Operation.INSERT : Operation.MODIFY);
            Map<String, DdbValue> image = null;
            if (op.isUpsert()) {
                image = new LinkedHashMap<>(keys);
                image.put(
                        "status",
                        new DdbValue.S(new String[] {"PLACED", "PAID", "SHIPPED", "DELIVERED"}[random.nextInt(4)]));
                image.put("total", new DdbValue.N(random.nextInt(100000) + "." + random.nextInt(100)));
                image.put("currency", new DdbValue.S("EUR"));
                image.put("created_at", new DdbValue.S("2026-11-" + (10 + random.nextInt(20)) + "T12:34:56.789Z"));
                image.put("gift", new DdbValue.Bool(random.nextBoolean()));
                image.put("note", new DdbValue.S(randomText(random, 200)));
                Map<String, DdbValue> address = new LinkedHashMap<>();
                address.put("street", new DdbValue.S(random.nextInt(999) + " " + randomText(random, 14) + " Street"));
                address.put("city", new DdbValue.S(randomText(random, 10)));
                address.put("zip", new DdbValue.S(Integer.toString(10000 + random.nextInt(89999))));
                address.put("country", new DdbValue.S("DE"));
                image.put("shipping_address", new DdbValue.M(address));
                List<DdbValue> lines = new ArrayList<>();
                for (int l = 0; l < 3; l++) {
                    Map<String, DdbValue> line = new LinkedHashMap<>();
                    line.put("sku", new DdbValue.S("SKU-" + random.nextInt(100000)));
                    line.put("qty", new DdbValue.N(Integer.toString(1 + random.nextInt(5))));
                    line.put("price", new DdbValue.N(random.nextInt(500) + "." + random.nextInt(100)));
                    lines.add(new DdbValue.M(line));
                }
                image.put("lines", new DdbValue.L(lines));
                image.put("tags", new DdbValue.SS(List.of("web", "promo-" + random.nextInt(20))));
            }
            out.add(new Change(
                    keys,
                    op,
                    image,
                    Long.toString(4_000_000_000_000_000_000L + i * 100L),
                    1_764_460_800_000L + i,
                    false));
        }
        return out;
    }

    private static String randomText(Random random, int n) {
        StringBuilder sb = new StringBuilder(n);
        for (int i = 0; i < n; i++) {
            sb.append(i % 6 == 5 ? ' ' : (char) ('a' + random.nextInt(26)));
        }
        return sb.toString();
    }
}
