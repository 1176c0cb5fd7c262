package dev.ddb2iceberg.faults;

import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.testkit.RandomValues;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * The DynamoDB side, from a seed: a table whose items change (inserts, updates, hot keys, deletes,
 * TTL expiries, items near the 400 KB limit, every attribute type) and its stream, as shards that
 * split into child shards. Stands in for DynamoDB and DynamoDB Streams, which cannot run here.
 *
 * <p>Every key lives on one open shard; a split closes a shard and moves its keys to a new child
 * whose records come later. Sequence numbers only grow, as within a DynamoDB shard.
 */
final class SourceTable {
    /** Key shapes a seed may pick: a DynamoDB table has one of these for all its items. */
    enum KeySchema {
        STRING_AND_NUMBER,
        NUMBER,
        BINARY_AND_STRING
    }

    static final class Shard {
        final int id;
        final Shard parent;
        final List<Change> records = new ArrayList<>();
        int delivered; // Lambda's position: records before it are acknowledged
        boolean closed;

        Shard(int id, Shard parent) {
            this.id = id;
            this.parent = parent;
        }

        /** Lambda reads a child shard only once its parent is done. */
        boolean readable() {
            return delivered < records.size() && (parent == null || parent.done());
        }

        boolean done() {
            return closed && delivered == records.size() && (parent == null || parent.done());
        }
    }

    private final Random random;
    private final RandomValues values;
    private final KeySchema keySchema;
    private final int keySpace;
    private final List<Shard> shards = new ArrayList<>();
    private final List<Shard> open = new ArrayList<>();
    private final List<Change> all = new ArrayList<>();
    private long sequence;
    private long clock = 1_764_460_800_000L;
    int bigItems;

    SourceTable(Random random, KeySchema keySchema, int keySpace, int shardCount) {
        this.random = random;
        this.values = new RandomValues(random);
        this.keySchema = keySchema;
        this.keySpace = keySpace;
        this.sequence = 100_000_000_000_000_000L + random.nextInt(1_000_000);
        for (int i = 0; i < shardCount; i++) {
            Shard s = new Shard(shards.size(), null);
            shards.add(s);
            open.add(s);
        }
    }

    List<Shard> shards() {
        return shards;
    }

    /** Every change made so far, in the order DynamoDB made them. */
    List<Change> changes() {
        return all;
    }

    Map<String, DdbValue> key(int i) {
        Map<String, DdbValue> k = new LinkedHashMap<>();
        switch (keySchema) {
            case STRING_AND_NUMBER -> {
                k.put("pk", new DdbValue.S("user-" + i % (keySpace / 3 + 1)));
                k.put("sk", new DdbValue.N(Integer.toString(i)));
            }
            case NUMBER -> k.put("id", new DdbValue.N(Integer.toString(i * 7919 - 3000)));
            case BINARY_AND_STRING -> {
                k.put("pk", new DdbValue.B(new byte[] {(byte) (i % 5), (byte) 0xff, 0}));
                k.put("sk", new DdbValue.S("item#" + i));
            }
        }
        return k;
    }

    /** Makes {@code n} changes to the table, each appended to the stream shard its key lives on. */
    void change(int n) {
        for (int j = 0; j < n; j++) {
            int i = random.nextInt(4) == 0 ? random.nextInt(3) : random.nextInt(keySpace); // keys 0-2 are hot
            int op = random.nextInt(10);
            Map<String, DdbValue> key = key(i);
            Change c;
            sequence += 1 + random.nextInt(1000);
            clock += random.nextInt(50);
            if (op < 7) {
                Map<String, DdbValue> image = new LinkedHashMap<>(key);
                image.put("status", new DdbValue.S(random.nextBoolean() ? "open" : "shipped"));
                image.put("total", new DdbValue.N(random.nextInt(100_000) + "." + random.nextInt(100)));
                image.putAll(values.map(3, random.nextInt(4)));
                if (random.nextInt(250) == 0) { // near DynamoDB's 400 KB item limit
                    image.put("blob", new DdbValue.S("x".repeat(380_000)));
                    bigItems++;
                }
                c = new Change(
                        key,
                        op < 3 ? Operation.INSERT : Operation.MODIFY,
                        image,
                        Long.toString(sequence),
                        clock,
                        false);
            } else {
                c = new Change(key, Operation.REMOVE, null, Long.toString(sequence), clock, op == 9);
            }
            all.add(c);
            shardOf(key).records.add(c);
        }
    }

    private Shard shardOf(Map<String, DdbValue> key) {
        return open.get(Math.floorMod(key.hashCode(), open.size()));
    }

    /** Closes an open shard and gives its keys to a new child shard (keys keep one shard each). */
    void split() {
        int index = random.nextInt(open.size());
        Shard parent = open.get(index);
        parent.closed = true;
        Shard child = new Shard(shards.size(), parent);
        shards.add(child);
        open.set(index, child);
    }

    void closeAll() {
        shards.forEach(s -> s.closed = true);
    }
}
