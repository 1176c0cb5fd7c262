package dev.ddb2iceberg.testkit;

import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.Operation;
import java.math.BigDecimal;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * A realistic stream, used by the demo and the Spark interop tests: orders (partition key {@code customer_id}, sort key
 * {@code order_id}) that are placed, updated many times (a few hot ones very often), cancelled,
 * or expired by TTL; with nested addresses, line-item lists, tag sets, exact prices and a
 * 38-digit number. Changes are spread over two shards by key, and shard 1 rolls over to a child
 * shard halfway through, as DynamoDB Streams does; sequence numbers increase throughout.
 */
public final class OrderWorkload {
    /** One shard's share of the stream for one simulated minute. */
    public record ShardChanges(String shard, List<Change> changes) {}

    private static final String[] STATUSES = {"PLACED", "PAID", "PACKED", "SHIPPED", "DELIVERED"};

    private final Random random;
    private final int items;
    private final Map<Integer, Map<String, DdbValue>> live = new HashMap<>();
    private long seq = 4_100_000_000_000_000_000L;
    private long clock = 1_764_460_800_000L;
    private int produced;

    public OrderWorkload(long seed, int items) {
        this.random = new Random(seed);
        this.items = items;
    }

    /** The next minute of changes, split by shard in delivery order (a parent before its child). */
    public List<ShardChanges> minute(int count, int total) {
        List<Change> shard0 = new ArrayList<>();
        List<Change> shard1 = new ArrayList<>();
        List<Change> shard1Child = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            Change c = next();
            boolean secondShard = Math.floorMod(c.keys().hashCode(), 2) == 1;
            if (!secondShard) {
                shard0.add(c);
            } else if (produced <= total / 2) {
                shard1.add(c);
            } else {
                shard1Child.add(c);
            }
        }
        return List.of(
                new ShardChanges("shard-0", shard0),
                new ShardChanges("shard-1", shard1),
                new ShardChanges("shard-1-child", shard1Child));
    }

    private Change next() {
        produced++;
        clock += 1 + random.nextInt(5000);
        seq += 1 + random.nextInt(1000);
        int item = random.nextInt(5) == 0 ? random.nextInt(5) : random.nextInt(items); // items 0-4 are hot
        Map<String, DdbValue> keys = keys(item);
        Map<String, DdbValue> current = live.get(item);
        if (current == null) {
            return upsert(item, keys, Operation.INSERT, newOrder(item));
        }
        int roll = random.nextInt(100);
        if (roll < 8) {
            live.remove(item);
            return new Change(keys, Operation.REMOVE, null, Long.toString(seq), clock, false);
        } else if (roll < 14) {
            live.remove(item); // DynamoDB's TTL process expired the order
            return new Change(keys, Operation.REMOVE, null, Long.toString(seq), clock, true);
        }
        Map<String, DdbValue> updated = new LinkedHashMap<>(current);
        updated.put("status", new DdbValue.S(STATUSES[random.nextInt(STATUSES.length)]));
        updated.put("updated_at", new DdbValue.S(Instant.ofEpochMilli(clock).toString()));
        updated.put(
                "version",
                new DdbValue.N(Long.toString(Long.parseLong(((DdbValue.N) current.get("version")).text()) + 1)));
        if (random.nextInt(4) == 0) {
            updated.put("note", new DdbValue.S("call before delivery; gate code " + random.nextInt(10000)));
        }
        return upsert(item, keys, Operation.MODIFY, updated);
    }

    private Change upsert(int item, Map<String, DdbValue> keys, Operation op, Map<String, DdbValue> image) {
        live.put(item, image);
        return new Change(keys, op, image, Long.toString(seq), clock, false);
    }

    private static Map<String, DdbValue> keys(int item) {
        Map<String, DdbValue> k = new LinkedHashMap<>();
        k.put("customer_id", new DdbValue.S(String.format("C-%05d", item / 3)));
        k.put("order_id", new DdbValue.N(Integer.toString(100_000 + item)));
        return k;
    }

    private Map<String, DdbValue> newOrder(int item) {
        Map<String, DdbValue> o = new LinkedHashMap<>(keys(item));
        o.put("status", new DdbValue.S("PLACED"));
        o.put("created_at", new DdbValue.S(Instant.ofEpochMilli(clock).toString()));
        o.put("version", new DdbValue.N("1"));
        o.put(
                "total",
                new DdbValue.N(
                        BigDecimal.valueOf(100 + random.nextInt(100_000), 2).toPlainString()));
        o.put("gift", new DdbValue.Bool(random.nextInt(10) == 0));
        o.put("expires_at", new DdbValue.N(Long.toString(clock / 1000 + 90 * 86400)));
        o.put("loyalty_points", new DdbValue.N("12345678901234567890123456789012345678"));
        Map<String, DdbValue> address = new LinkedHashMap<>();
        address.put("street", new DdbValue.S((1 + random.nextInt(200)) + " Harbour Road"));
        address.put("city", new DdbValue.S(new String[] {"Lisboa", "Zürich", "Kraków", "Dublin"}[random.nextInt(4)]));
        address.put("zip", new DdbValue.S(String.format("%05d", random.nextInt(100_000))));
        o.put("shipping_address", new DdbValue.M(address));
        List<DdbValue> lines = new ArrayList<>();
        for (int i = 0; i <= random.nextInt(3); i++) {
            Map<String, DdbValue> line = new LinkedHashMap<>();
            line.put("sku", new DdbValue.S("SKU-" + random.nextInt(5000)));
            line.put("qty", new DdbValue.N(Integer.toString(1 + random.nextInt(4))));
            lines.add(new DdbValue.M(line));
        }
        o.put("lines", new DdbValue.L(lines));
        o.put("tags", new DdbValue.SS(random.nextBoolean() ? List.of("web") : List.of("app", "promo")));
        if (random.nextInt(5) == 0) {
            o.put("coupon", DdbValue.Null.INSTANCE);
        }
        if (random.nextInt(8) == 0) {
            o.put("signature", new DdbValue.B(new byte[] {(byte) item, 1, 2, 3}));
        }
        return o;
    }
}
