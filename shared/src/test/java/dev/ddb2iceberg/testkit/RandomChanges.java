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
 * Random changes with values of every type over a small key space (so keys repeat), in increasing
 * sequence-number order: a format and codec workout rather than a realistic workload.
 */
public final class RandomChanges {
    private RandomChanges() {}

    public static List<Change> generate(long seed, int n) {
        Random random = new Random(seed);
        RandomValues values = new RandomValues(random);
        List<Change> out = new ArrayList<>(n);
        long seq = 100_000_000_000_000_000L;
        for (int i = 0; i < n; i++) {
            Map<String, DdbValue> keys = new LinkedHashMap<>();
            keys.put("pk", new DdbValue.S("item-" + random.nextInt(50)));
            keys.put("sk", new DdbValue.N(values.number()));
            Operation op = Operation.values()[random.nextInt(3)];
            Map<String, DdbValue> image = null;
            if (op.isUpsert()) {
                image = new LinkedHashMap<>(keys);
                image.putAll(values.map(3, random.nextInt(12)));
            }
            seq += 1 + random.nextInt(1000);
            out.add(new Change(
                    keys,
                    op,
                    image,
                    seq + "0000",
                    random.nextLong() >>> 20,
                    op == Operation.REMOVE && random.nextBoolean()));
        }
        return out;
    }
}
