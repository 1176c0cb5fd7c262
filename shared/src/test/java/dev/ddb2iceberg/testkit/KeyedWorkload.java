package dev.ddb2iceberg.testkit;

import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.Operation;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * Changes over a fixed key space with a composite key ({@code pk} S, {@code sk} N), in stream order,
 * reproducible from a seed: inserts, modifies, removes (some by TTL), hot keys, and values of every
 * type. For tests and benchmarks of the merge and maintenance.
 */
public final class KeyedWorkload {
    private final Random random;
    private final RandomValues values;
    private final int keySpace;
    private long seq = 500_000_000_000_000_000L;

    public KeyedWorkload(long seed, int keySpace) {
        this.random = new Random(seed);
        this.values = new RandomValues(random);
        this.keySpace = keySpace;
    }

    public Map<String, DdbValue> key(int i) {
        Map<String, DdbValue> k = new LinkedHashMap<>();
        k.put("pk", new DdbValue.S("user-" + i % (keySpace / 4 + 1)));
        k.put("sk", new DdbValue.N(Integer.toString(i)));
        return k;
    }

    public Change upsert(int i, Operation op) {
        Map<String, DdbValue> image = new LinkedHashMap<>(key(i));
        image.put("name", new DdbValue.S("name-" + random.nextInt(1000)));
        image.put("count", new DdbValue.N(Integer.toString(random.nextInt(100_000))));
        if (random.nextBoolean()) {
            image.put("active", new DdbValue.Bool(random.nextBoolean()));
        }
        image.putAll(values.map(2, random.nextInt(4))); // every other type, nested, odd numbers
        return new Change(key(i), op, image, next(), 1_764_460_800_000L + seq % 100_000, false);
    }

    public Change remove(int i, boolean ttl) {
        return new Change(key(i), Operation.REMOVE, null, next(), 1_764_460_800_000L + seq % 100_000, ttl);
    }

    /** n random changes: inserts, modifies, removes (some by TTL), with hot keys changed often. */
    public List<Change> next(int n) {
        List<Change> out = new ArrayList<>(n);
        for (int j = 0; j < n; j++) {
            int i = random.nextInt(5) == 0 ? random.nextInt(3) : random.nextInt(keySpace); // keys 0-2 are hot
            int op = random.nextInt(10);
            if (op < 7) {
                out.add(upsert(i, op < 3 ? Operation.INSERT : Operation.MODIFY));
            } else {
                out.add(remove(i, op == 9));
            }
        }
        return out;
    }

    private String next() {
        seq += 1 + random.nextInt(50);
        return Long.toString(seq) + "00";
    }
}
