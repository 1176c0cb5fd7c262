package dev.ddb2iceberg.testkit;

import dev.ddb2iceberg.model.DdbValue;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * Random DynamoDB values of every type, for tests, the local demo and benchmarks: 38-digit numbers,
 * tiny and huge exponents, empty and non-ASCII strings, binary, sets, nested maps and lists.
 * Reproducible from the {@link Random}'s seed.
 */
public final class RandomValues {
    private static final String[] TYPES = {"S", "N", "B", "BOOL", "NULL", "M", "L", "SS", "NS", "BS"};

    private final Random random;

    public RandomValues(Random random) {
        this.random = random;
    }

    /** Any value; nesting stops at {@code depth} 0. */
    public DdbValue any(int depth) {
        String type = TYPES[random.nextInt(depth > 0 ? TYPES.length : 5)];
        switch (type) {
            case "S":
                return new DdbValue.S(string());
            case "N":
                return new DdbValue.N(number());
            case "B":
                return new DdbValue.B(bytes());
            case "BOOL":
                return new DdbValue.Bool(random.nextBoolean());
            case "NULL":
                return DdbValue.Null.INSTANCE;
            case "M":
                return new DdbValue.M(map(depth - 1, random.nextInt(4)));
            case "L": {
                List<DdbValue> l = new ArrayList<>();
                for (int i = random.nextInt(4); i > 0; i--) {
                    l.add(any(depth - 1));
                }
                return new DdbValue.L(l);
            }
            case "SS": {
                LinkedHashSet<String> s = new LinkedHashSet<>();
                for (int i = 1 + random.nextInt(3); i > 0; i--) {
                    s.add(string() + i);
                }
                return new DdbValue.SS(new ArrayList<>(s));
            }
            case "NS": {
                LinkedHashSet<String> s = new LinkedHashSet<>();
                for (int i = 1 + random.nextInt(3); i > 0; i--) {
                    s.add(number());
                }
                return new DdbValue.NS(new ArrayList<>(s));
            }
            default: {
                List<byte[]> s = new ArrayList<>();
                for (int i = 1 + random.nextInt(3); i > 0; i--) {
                    byte[] b = bytes();
                    b = Arrays.copyOf(b, b.length + 1);
                    b[b.length - 1] = (byte) i; // distinct elements, as in a DynamoDB set
                    s.add(b);
                }
                return new DdbValue.BS(s);
            }
        }
    }

    public Map<String, DdbValue> map(int depth, int size) {
        Map<String, DdbValue> m = new LinkedHashMap<>();
        for (int i = 0; i < size; i++) {
            m.put("f" + random.nextInt(1000), any(depth));
        }
        return m;
    }

    /** A string with ASCII, accented and astral (surrogate pair) characters. */
    public String string() {
        int n = random.nextInt(12);
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) {
            switch (random.nextInt(6)) {
                case 0:
                    sb.append('é');
                    break;
                case 1:
                    sb.appendCodePoint(0x1F600 + random.nextInt(50));
                    break;
                default:
                    sb.append((char) ('a' + random.nextInt(26)));
            }
        }
        return sb.toString();
    }

    /** A DynamoDB number: small integers, 38-digit integers and decimals, extreme exponents. */
    public String number() {
        switch (random.nextInt(5)) {
            case 0:
                return Long.toString(random.nextInt(2001) - 1000);
            case 1:
                return (random.nextBoolean() ? "-" : "") + digits(38);
            case 2:
                return new BigDecimal(new BigInteger(digits(1 + random.nextInt(38))), random.nextInt(40) - 2)
                        .toPlainString();
            case 3:
                return (random.nextBoolean() ? "-" : "") + "1." + digits(10) + "E" + (random.nextInt(250) - 125);
            default:
                return Long.toString(random.nextLong());
        }
    }

    public byte[] bytes() {
        byte[] b = new byte[random.nextInt(24)];
        random.nextBytes(b);
        return b;
    }

    private String digits(int n) {
        StringBuilder sb = new StringBuilder(n);
        sb.append((char) ('1' + random.nextInt(9)));
        for (int i = 1; i < n; i++) {
            sb.append((char) ('0' + random.nextInt(10)));
        }
        return sb.toString();
    }
}
