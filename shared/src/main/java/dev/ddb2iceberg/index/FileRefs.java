package dev.ddb2iceberg.index;

import java.util.Arrays;
import java.util.function.ToIntFunction;

/**
 * Maps the data file references of one set of entries to those of the entries or part being
 * written, adding a file to the new table only when an entry that points to it is copied: files no
 * entry points to any more (rewritten by compaction, every row replaced) leave the table at the
 * next fold.
 */
final class FileRefs {
    private final String[] names;
    private final int[] mapped;
    private final ToIntFunction<String> add;

    /** {@code add}: the new table's reference of a file, adding it if new. */
    FileRefs(String[] names, ToIntFunction<String> add) {
        this.names = names;
        this.mapped = new int[names.length];
        this.add = add;
        Arrays.fill(mapped, -1);
    }

    /** The new reference of {@code ref}; -1 (a tombstone) stays -1. */
    int map(int ref) {
        if (ref < 0) {
            return -1;
        }
        if (mapped[ref] < 0) {
            mapped[ref] = add.applyAsInt(names[ref]);
        }
        return mapped[ref];
    }
}
