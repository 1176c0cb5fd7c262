package dev.ddb2iceberg.table;

import java.util.AbstractList;
import java.util.RandomAccess;

/**
 * An item's key as its key columns' values: an immutable list, equal to (and hashing as) any
 * other list of the same values, whose hash is worked out once.
 *
 * <p>A merge keys several maps by the item key (each key's newest change, its live rows, the
 * removals it remembers), so each key is hashed many times, and a list's hash follows the list to
 * every value and asks each for its own: a cache miss or more each time. This one reads its values
 * once, when they were just made.
 */
public final class ItemKey extends AbstractList<Object> implements RandomAccess {
    private final Object[] values;
    private final int hash;

    /** {@code values}: the key columns' values, none null; the array is kept, not copied. */
    ItemKey(Object[] values) {
        int h = 1;
        for (Object v : values) {
            h = 31 * h + v.hashCode(); // List.hashCode's formula, so that equal lists hash alike
        }
        this.values = values;
        this.hash = h;
    }

    @Override
    public Object get(int index) {
        return values[index];
    }

    @Override
    public int size() {
        return values.length;
    }

    @Override
    public int hashCode() {
        return hash;
    }

    @Override
    public boolean equals(Object o) {
        if (o == this) {
            return true;
        }
        if (o instanceof ItemKey other) {
            if (other.hash != hash || other.values.length != values.length) {
                return false;
            }
            for (int i = 0; i < values.length; i++) {
                if (!values[i].equals(other.values[i])) {
                    return false;
                }
            }
            return true;
        }
        return super.equals(o); // any other list of the same values
    }
}
