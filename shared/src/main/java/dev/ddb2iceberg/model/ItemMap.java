package dev.ddb2iceberg.model;

import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Set;
import java.util.function.BiConsumer;

/**
 * An item's attributes (or a map value's fields), in the order received, unmodifiable: the form a
 * {@link Change} and a {@link DdbValue.M} hold them in.
 *
 * <p>Why not a {@code LinkedHashMap} behind an unmodifiable view, as before: a merge holds every
 * change of its slice at once, 100,000 items of a dozen or more attributes, and a linked hash map
 * costs about 50 bytes an attribute (its entry and its table slot) against 8 here (two array slots).
 * And a change used to copy the map the staged reader had just built for it, so each attribute
 * cost two entries. An item map is built once, by a {@link Builder} that hands it over, or copied
 * once from any other map; a change and a map value take an item map as it is.
 *
 * <p>Looking a name up scans the names, most of which are the same String object as the one asked
 * for (the staged reader gives each recurring name one String); a map of more than {@link
 * #SCAN_LIMIT} attributes builds a hash index at its first look-up.
 */
public final class ItemMap extends AbstractMap<String, DdbValue> {
    /** Up to this many attributes a look-up scans; past it, it hashes. */
    static final int SCAN_LIMIT = 16;

    private static final ItemMap EMPTY = new ItemMap(new String[0], new DdbValue[0]);

    private final String[] names;
    private final DdbValue[] values;
    private volatile Map<String, Integer> index; // built at the first look-up of a large map

    private ItemMap(String[] names, DdbValue[] values) {
        this.names = names;
        this.values = values;
    }

    /** {@code map} itself when it is an item map, else a copy of it, in its iteration order. */
    public static ItemMap copyOf(Map<String, DdbValue> map) {
        if (map instanceof ItemMap item) {
            return item;
        }
        Builder b = new Builder(map.size());
        map.forEach(b::put);
        return b.build();
    }

    public static ItemMap of() {
        return EMPTY;
    }

    /** Builds an item map attribute by attribute; the map it builds keeps its arrays (no copy). */
    public static final class Builder {
        private String[] names;
        private DdbValue[] values;
        private int size;

        public Builder(int expectedSize) {
            names = new String[Math.max(1, expectedSize)];
            values = new DdbValue[names.length];
        }

        /** Adds an attribute; a name may come once only ({@link #build} refuses a repeated one). */
        public Builder put(String name, DdbValue value) {
            if (name == null || value == null) {
                throw new NullPointerException(name == null ? "attribute name" : "value of attribute '" + name + "'");
            }
            if (size == names.length) {
                names = Arrays.copyOf(names, size * 2);
                values = Arrays.copyOf(values, size * 2);
            }
            names[size] = name;
            values[size] = value;
            size++;
            return this;
        }

        /**
         * The map; the builder must not be used after. Throws IllegalArgumentException naming an
         * attribute given twice (an item has each name once; a map that did not would lose one).
         */
        public ItemMap build() {
            return build(null);
        }

        /**
         * The map, holding {@code like}'s array of names when its names are the same String objects
         * in the same order (the staged reader gives each recurring name one String). Items of a
         * table mostly repeat one list of names, and a merge holds every change's item until it
         * commits: sharing the list saves an array an item.
         */
        public ItemMap build(ItemMap like) {
            DdbValue[] v = size == values.length ? values : Arrays.copyOf(values, size);
            String[] n = like != null && sameNames(like.names) ? like.names : null;
            if (n == null) {
                n = size == names.length ? names : Arrays.copyOf(names, size);
                String repeated = repeatedName(n);
                if (repeated != null) {
                    throw new IllegalArgumentException("attribute '" + repeated + "' is given twice");
                }
            }
            names = null;
            values = null;
            return size == 0 ? EMPTY : new ItemMap(n, v);
        }

        private boolean sameNames(String[] other) {
            if (other.length != size) {
                return false;
            }
            for (int i = 0; i < size; i++) {
                if (other[i] != names[i]) {
                    return false;
                }
            }
            return true;
        }

        private static String repeatedName(String[] names) {
            if (names.length <= SCAN_LIMIT) {
                for (int i = 1; i < names.length; i++) {
                    for (int j = 0; j < i; j++) {
                        if (names[i].equals(names[j])) {
                            return names[i];
                        }
                    }
                }
                return null;
            }
            Set<String> seen = new HashSet<>(names.length * 2);
            for (String name : names) {
                if (!seen.add(name)) {
                    return name;
                }
            }
            return null;
        }
    }

    /**
     * This map with each value that {@code other} holds, equal, under the same name replaced by
     * other's object; this map itself when none is. A change's keys repeat its new image's key
     * attributes: sharing them saves the key values' copies while a merge holds the change.
     */
    public ItemMap sharingValuesOf(Map<String, DdbValue> other) {
        DdbValue[] shared = null;
        for (int i = 0; i < names.length; i++) {
            DdbValue same = other.get(names[i]);
            if (same != null && same != values[i] && same.equals(values[i])) {
                if (shared == null) {
                    shared = values.clone();
                }
                shared[i] = same;
            }
        }
        return shared == null ? this : new ItemMap(names, shared);
    }

    /** Whether the two maps hold one array of names, as {@link Builder#build(ItemMap)} shares it. */
    public boolean sharesNamesWith(ItemMap other) {
        return names == other.names;
    }

    @Override
    public int size() {
        return names.length;
    }

    @Override
    public boolean containsKey(Object name) {
        return indexOf(name) >= 0;
    }

    @Override
    public DdbValue get(Object name) {
        int i = indexOf(name);
        return i < 0 ? null : values[i];
    }

    private int indexOf(Object name) {
        if (names.length > SCAN_LIMIT) {
            Integer i = index().get(name);
            return i == null ? -1 : i;
        }
        for (int i = 0; i < names.length; i++) { // identity first: the staged reader shares names
            if (names[i] == name) {
                return i;
            }
        }
        for (int i = 0; i < names.length; i++) {
            if (names[i].equals(name)) {
                return i;
            }
        }
        return -1;
    }

    private Map<String, Integer> index() {
        Map<String, Integer> m = index;
        if (m == null) {
            m = new HashMap<>(names.length * 2);
            for (int i = 0; i < names.length; i++) {
                m.put(names[i], i);
            }
            index = m; // built whole, then published: threads that race each build the same one
        }
        return m;
    }

    @Override
    public void forEach(BiConsumer<? super String, ? super DdbValue> action) {
        for (int i = 0; i < names.length; i++) {
            action.accept(names[i], values[i]);
        }
    }

    @Override
    public Set<Entry<String, DdbValue>> entrySet() {
        return new AbstractSet<>() {
            @Override
            public int size() {
                return names.length;
            }

            @Override
            public Iterator<Entry<String, DdbValue>> iterator() {
                return new Iterator<>() {
                    private int next;

                    @Override
                    public boolean hasNext() {
                        return next < names.length;
                    }

                    @Override
                    public Entry<String, DdbValue> next() {
                        if (next >= names.length) {
                            throw new NoSuchElementException();
                        }
                        Entry<String, DdbValue> e = new SimpleImmutableEntry<>(names[next], values[next]);
                        next++;
                        return e;
                    }
                };
            }
        };
    }
}
