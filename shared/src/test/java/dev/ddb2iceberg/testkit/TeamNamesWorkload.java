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
 * Changes to items whose attributes are named the way teams name them, and worse: camelCase keys
 * ({@code customerId} S, {@code OrderDate} N), capitals, case twins ({@code Status} and
 * {@code status}), names that map to the same lower-case column ({@code ship-to} and
 * {@code ship_to}), spaces, dots, a leading digit, accents, non-Latin scripts, characters that break
 * a Glue type string, a line break, a name that lower-cases to one of the pipeline's own, and
 * nested maps whose keys do all of that too. Values are typed per attribute most of the time, and
 * of any type some of the time, so both the typed columns and the overflow map are exercised.
 * Reproducible from a seed.
 */
public final class TeamNamesWorkload {
    /** Top-level attribute names, in the order a first item carries them (so the first of twins is known). */
    public static final List<String> ATTRIBUTES = List.of(
            "Status",
            "status",
            "orderTotal",
            "UpdatedAt",
            "ship.to",
            "ship-to",
            "ship_to",
            "gift wrap",
            "2faEnabled",
            "Größe",
            "prénom",
            "日本語",
            "ORDER-ID",
            "a:b,c<d>",
            "line\nbreak",
            "_DDB_seq",
            "Address");
    /** The keys of the nested map {@code Address}. */
    public static final List<String> ADDRESS_KEYS =
            List.of("ZipCode", "zipcode", "line 1", "Straße", "1st", "city.name", "Ünïcode");

    private final Random random;
    private final RandomValues values;
    private final int keySpace;
    private long seq = 700_000_000_000_000_000L;

    public TeamNamesWorkload(long seed, int keySpace) {
        this.random = new Random(seed);
        this.values = new RandomValues(random);
        this.keySpace = keySpace;
    }

    public Map<String, DdbValue> key(int i) {
        Map<String, DdbValue> k = new LinkedHashMap<>();
        k.put("customerId", new DdbValue.S("C-" + i % (keySpace / 3 + 1)));
        k.put("OrderDate", new DdbValue.N(Integer.toString(20_260_000 + i)));
        return k;
    }

    /**
     * Item {@code i}: with {@code all}, every attribute, each of its usual type (so a first item
     * sets the column types: {@code Status} a string column, {@code orderTotal} a long one); else a
     * random subset, now and then of another type.
     */
    public Change upsert(int i, boolean all) {
        Map<String, DdbValue> image = new LinkedHashMap<>(key(i));
        for (String name : ATTRIBUTES) {
            if (all || random.nextInt(3) > 0) {
                image.put(name, all || random.nextInt(10) > 0 ? value(name) : values.any(2));
            }
        }
        return new Change(key(i), Operation.MODIFY, image, next(), 1_764_460_800_000L + seq % 100_000, false);
    }

    /** n changes over the key space: mostly upserts, some removals. */
    public List<Change> next(int n) {
        List<Change> out = new ArrayList<>(n);
        for (int j = 0; j < n; j++) {
            int i = random.nextInt(keySpace);
            if (random.nextInt(8) == 0) {
                out.add(new Change(key(i), Operation.REMOVE, null, next(), 1_764_460_800_000L + seq % 100_000, false));
            } else {
                out.add(upsert(i, false));
            }
        }
        return out;
    }

    /** A value of the attribute's usual type. */
    private DdbValue value(String name) {
        switch (name) {
            case "orderTotal":
            case "Größe":
            case "ORDER-ID":
                return new DdbValue.N(Integer.toString(random.nextInt(100_000)));
            case "2faEnabled":
                return new DdbValue.Bool(random.nextBoolean());
            case "Address": {
                Map<String, DdbValue> address = new LinkedHashMap<>();
                for (String key : ADDRESS_KEYS) {
                    if (random.nextInt(4) > 0) {
                        address.put(key, new DdbValue.S(values.string()));
                    }
                }
                return new DdbValue.M(address);
            }
            default:
                return new DdbValue.S(values.string());
        }
    }

    private String next() {
        return Long.toString(++seq);
    }
}
