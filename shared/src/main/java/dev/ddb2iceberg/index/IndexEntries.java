package dev.ddb2iceberg.index;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Index entries sorted by key, packed into a few arrays (no object per entry, so a part of a
 * million keys costs tens of megabytes, not hundreds): each key's data file, row position and the
 * sequence number of the change that wrote the row. In a delta, an entry without a file is a
 * tombstone: the key has no live row any more.
 */
public final class IndexEntries {
    /** One entry; {@code file} is null for a tombstone. */
    public record Entry(byte[] key, String file, long position, BigInteger sequence) {
        public boolean isTombstone() {
            return file == null;
        }
    }

    static final IndexEntries EMPTY = new Builder().build();

    public static IndexEntries empty() {
        return EMPTY;
    }

    private final byte[] keyData;
    private final int[] keyEnds;
    private final String[] files;
    private final int[] fileRefs; // -1: tombstone
    private final long[] positions;
    private final byte[] sequenceData;
    private final int[] sequenceEnds;

    private IndexEntries(
            byte[] keyData,
            int[] keyEnds,
            String[] files,
            int[] fileRefs,
            long[] positions,
            byte[] sequenceData,
            int[] sequenceEnds) {
        this.keyData = keyData;
        this.keyEnds = keyEnds;
        this.files = files;
        this.fileRefs = fileRefs;
        this.positions = positions;
        this.sequenceData = sequenceData;
        this.sequenceEnds = sequenceEnds;
    }

    public int size() {
        return keyEnds.length;
    }

    private volatile KeyFilter filter; // built at the first lookup: a part's entries are never looked up

    private KeyFilter filter() {
        KeyFilter f = filter;
        if (f == null) {
            synchronized (this) { // a merge's threads look keys up in the same delta at once: one builds
                f = filter;
                if (f == null) {
                    f = new KeyFilter(size());
                    for (int i = 0; i < size(); i++) {
                        f.add(hash(keyData, keyFrom(i), keyEnds[i]));
                    }
                    filter = f;
                }
            }
        }
        return f;
    }

    /** Whether the filter lets a key of this hash through to a search (for tests). */
    boolean filterPasses(long hash) {
        return filter().mayHold(hash);
    }

    /** A 64-bit hash of a key's bytes, for {@link #find(byte[], long)}. */
    public static long hash(byte[] key) {
        return hash(key, 0, key.length);
    }

    private static long hash(byte[] data, int from, int to) {
        long h = 0xcbf29ce484222325L; // FNV-1a, then a 64-bit finalizer to spread the bits
        for (int i = from; i < to; i++) {
            h = (h ^ (data[i] & 0xFF)) * 0x100000001b3L;
        }
        h ^= h >>> 33;
        h *= 0xff51afd7ed558ccdL;
        h ^= h >>> 33;
        h *= 0xc4ceb9fe1a85ec53L;
        return h ^ (h >>> 33);
    }

    /**
     * A blocked Bloom filter over the keys, 16 to 32 bits a key: four bits of one 64-bit word per
     * key, so a lookup reads one word. A key it does not hold is in none of the entries; of the keys
     * not in the entries, a few in a thousand pass it all the same (0.3 % at a merge's 100,000).
     *
     * <p>A merge probes each of its keys in every delta (up to 64 of them), and each key a filter
     * lets through costs a binary search of the delta, mostly cache misses: at 8 to 16 bits a key
     * 1.6 % passed, a needless search a key in all. A delta's filter stays small beside its entries
     * (100,000 keys: 256 KB against about 6 MB).
     */
    private static final class KeyFilter {
        private final long[] words;
        private final int mask;

        KeyFilter(int keys) {
            int n = Integer.highestOneBit(Math.max(1, keys / 4) * 2 - 1); // a power of two, at least keys/4
            this.words = new long[Math.max(1, n)];
            this.mask = words.length - 1;
        }

        void add(long hash) {
            words[(int) (hash >>> 32) & mask] |= bits(hash);
        }

        boolean mayHold(long hash) {
            long b = bits(hash);
            return (words[(int) (hash >>> 32) & mask] & b) == b;
        }

        private static long bits(long hash) {
            return (1L << (hash & 63))
                    | (1L << ((hash >>> 6) & 63))
                    | (1L << ((hash >>> 12) & 63))
                    | (1L << ((hash >>> 18) & 63));
        }
    }

    /** Each entry's part, for {@link #partsOf}'s one count of parts: a delta is folded part by part, commit after commit. */
    private volatile PartsOf partsOf;

    private record PartsOf(int parts, int[] ofEntry) {}

    /**
     * The part ({@link IndexKeys#part}) of each entry in an index of {@code parts} parts, worked out
     * once: a delta stays in a warm merger's memory, and each commit's fold picks out the entries of
     * the parts it folds, which otherwise meant copying and hashing every entry's key again.
     */
    int[] partsOf(int parts) {
        PartsOf known = partsOf;
        if (known == null || known.parts() != parts) {
            int[] ofEntry = new int[size()];
            for (int i = 0; i < ofEntry.length; i++) {
                ofEntry[i] = IndexKeys.part(keyData, keyFrom(i), keyEnds[i], parts);
            }
            known = new PartsOf(parts, ofEntry);
            partsOf = known;
        }
        return known.ofEntry();
    }

    /** Bytes these entries hold in memory, roughly: what the cache counts. */
    public long memoryBytes() {
        long fileBytes = 0;
        for (String f : files) {
            fileBytes += 40 + 2L * f.length();
        }
        // 1 byte a key: the filter; 4 its part, once a fold asked (partsOf)
        return keyData.length + sequenceData.length + 25L * size() + fileBytes + 100;
    }

    /**
     * The entry of a key, or null when these entries do not mention it. The entry holds {@code key}
     * itself as its key (keys are never changed once made).
     */
    public Entry find(byte[] key) {
        return find(key, hash(key));
    }

    /**
     * As {@link #find(byte[])}, with the key's {@link #hash} computed once by a caller that looks it
     * up in many entries (a merge looks each key up in every delta of the index, up to 64): most keys
     * are in none, and the filter answers those without a search.
     */
    public Entry find(byte[] key, long hash) {
        if (!filter().mayHold(hash)) {
            return null;
        }
        int lo = 0;
        int hi = size() - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            int c = Arrays.compareUnsigned(keyData, keyFrom(mid), keyEnds[mid], key, 0, key.length);
            if (c < 0) {
                lo = mid + 1;
            } else if (c > 0) {
                hi = mid - 1;
            } else {
                return entry(mid, key); // the key sought is this entry's: no copy of it
            }
        }
        return null;
    }

    public Entry entry(int i) {
        return entry(i, key(i));
    }

    /** Entry {@code i}, given its key's bytes. */
    private Entry entry(int i, byte[] key) {
        return new Entry(key, fileRefs[i] < 0 ? null : files[fileRefs[i]], positions[i], new BigInteger(sequence(i)));
    }

    byte[] key(int i) {
        return Arrays.copyOfRange(keyData, keyFrom(i), keyEnds[i]);
    }

    byte[] sequence(int i) {
        return Arrays.copyOfRange(sequenceData, i == 0 ? 0 : sequenceEnds[i - 1], sequenceEnds[i]);
    }

    long position(int i) {
        return positions[i];
    }

    int keyFrom(int i) {
        return i == 0 ? 0 : keyEnds[i - 1];
    }

    int keyLength(int i) {
        return keyEnds[i] - keyFrom(i);
    }

    /** The packed keys; entry i's is {@link #keyLength}(i) bytes from {@link #keyFrom}(i). */
    byte[] keyData() {
        return keyData;
    }

    int sequenceFrom(int i) {
        return i == 0 ? 0 : sequenceEnds[i - 1];
    }

    int sequenceLength(int i) {
        return sequenceEnds[i] - sequenceFrom(i);
    }

    /** The packed sequences, as {@link #keyData} packs keys. */
    byte[] sequenceData() {
        return sequenceData;
    }

    /** The keys, for {@link KeySort}. */
    private KeySort.Keys keys() {
        return new KeySort.Keys() {
            @Override
            public byte[] data(int i) {
                return keyData;
            }

            @Override
            public int from(int i) {
                return keyFrom(i);
            }

            @Override
            public int to(int i) {
                return keyEnds[i];
            }
        };
    }

    private int compareKeys(int i, IndexEntries other, int j) {
        return Arrays.compareUnsigned(
                keyData, keyFrom(i), keyEnds[i], other.keyData, other.keyFrom(j), other.keyEnds[j]);
    }

    String[] files() {
        return files;
    }

    int fileRef(int i) {
        return fileRefs[i];
    }

    /** A key as a map key (arrays compare by identity). */
    public record ByteKey(byte[] bytes) {
        @Override
        public boolean equals(Object o) {
            return o instanceof ByteKey k && Arrays.equals(bytes, k.bytes);
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(bytes);
        }
    }

    /**
     * Collects entries in any order, packed as they come (about 60 bytes an entry for a 25-byte
     * key, where a map of entry objects costs 200), and sorts them once in {@link #build}; a key
     * added twice keeps the last. Not thread-safe.
     */
    public static final class Builder {
        private final Appender packed;

        public Builder() {
            this(16);
        }

        /** For about {@code expectedCount} entries: the arrays are not grown and copied on the way there. */
        public Builder(int expectedCount) {
            packed = new Appender(new String[0], expectedCount);
        }

        public Builder add(Entry e) {
            return add(e.key(), e.file(), e.position(), e.sequence().toByteArray());
        }

        public Builder add(byte[] key, String file, long position, byte[] sequence) {
            packed.appendUnordered(key, file == null ? -1 : packed.fileId(file), position, sequence);
            return this;
        }

        /** Adds entry {@code i} of {@code from} (a delta a fold picks a part's entries out of), its key copied once. */
        Builder add(IndexEntries from, int i) {
            int ref = from.fileRefs[i];
            packed.copy(from, i, ref < 0 ? -1 : packed.fileId(from.files[ref]));
            return this;
        }

        public int size() {
            return packed.n;
        }

        /** Memory held so far, roughly. */
        public long memoryBytes() {
            return packed.keys.length + packed.sequences.length + 24L * packed.keyEnds.length;
        }

        public IndexEntries build() {
            IndexEntries unsorted = packed.build();
            int[] order = new int[unsorted.size()];
            for (int i = 0; i < order.length; i++) {
                order[i] = i;
            }
            // Stable: among equal keys the one added last stays last, and wins below.
            KeySort.sort(order, 0, order.length, unsorted.keys());
            Appender sorted = new Appender(new String[0], order.length);
            FileRefs refs = new FileRefs(unsorted.files, sorted::fileId);
            for (int k = 0; k < order.length; k++) {
                int i = order[k];
                if (k + 1 < order.length && unsorted.compareKeys(i, unsorted, order[k + 1]) == 0) {
                    continue; // a later entry of the same key follows
                }
                sorted.copy(unsorted, i, refs.map(unsorted.fileRefs[i]));
            }
            return sorted.build();
        }
    }

    /**
     * Packs entries into growing arrays; {@link #append} takes them in key order (as a file holds
     * them), checking the order.
     */
    static final class Appender {
        private final List<String> files;
        private final Map<String, Integer> fileIds = new HashMap<>();
        private byte[] keys;
        private byte[] sequences;
        private int keyBytes;
        private int sequenceBytes;
        private int[] keyEnds;
        private int[] seqEnds;
        private int[] refs;
        private long[] positions;
        private int n;

        /** {@code files}: the data file table the references given to {@link #append} point into. */
        Appender(String[] files, int expectedCount) {
            this.files = new ArrayList<>(Arrays.asList(files));
            for (int f = 0; f < files.length; f++) {
                fileIds.put(files[f], f);
            }
            int count = Math.max(expectedCount, 1);
            keyEnds = new int[count];
            seqEnds = new int[count];
            refs = new int[count];
            positions = new long[count];
            keys = new byte[count * 16];
            sequences = new byte[count * 8];
        }

        /** The reference of a data file, added to the table if new. */
        int fileId(String file) {
            Integer id = fileIds.get(file); // not computeIfAbsent: its lambda would be a new object an entry
            if (id == null) {
                id = files.size();
                files.add(file);
                fileIds.put(file, id);
            }
            return id;
        }

        /** False when the key is not above the previous one (a damaged file). */
        boolean append(byte[] key, int fileRef, long position, byte[] sequence) {
            return append(key, key.length, fileRef, position, sequence, 0, sequence.length);
        }

        /** {@link #append}, the key the first {@code keyLength} bytes of {@code key}, the sequence a range. */
        boolean append(byte[] key, int keyLength, int fileRef, long position, byte[] seq, int seqFrom, int seqLength) {
            if (n > 0
                    && Arrays.compareUnsigned(keys, n == 1 ? 0 : keyEnds[n - 2], keyEnds[n - 1], key, 0, keyLength)
                            >= 0) {
                return false;
            }
            add(key, 0, keyLength, fileRef, position, seq, seqFrom, seqLength);
            return true;
        }

        void appendUnordered(byte[] key, int fileRef, long position, byte[] sequence) {
            add(key, 0, key.length, fileRef, position, sequence, 0, sequence.length);
        }

        /** Copies entry {@code i} of {@code from} (already in order), with its file as reference {@code fileRef}. */
        void copy(IndexEntries from, int i, int fileRef) {
            int seqFrom = i == 0 ? 0 : from.sequenceEnds[i - 1];
            add(
                    from.keyData,
                    from.keyFrom(i),
                    from.keyEnds[i] - from.keyFrom(i),
                    fileRef,
                    from.positions[i],
                    from.sequenceData,
                    seqFrom,
                    from.sequenceEnds[i] - seqFrom);
        }

        private void add(
                byte[] key, int keyOff, int keyLen, int fileRef, long position, byte[] seq, int seqOff, int seqLen) {
            if (n == keyEnds.length) {
                int grown = n + Math.max(n >> 1, 16);
                keyEnds = Arrays.copyOf(keyEnds, grown);
                seqEnds = Arrays.copyOf(seqEnds, grown);
                refs = Arrays.copyOf(refs, grown);
                positions = Arrays.copyOf(positions, grown);
            }
            keys = ensure(keys, keyBytes + keyLen);
            System.arraycopy(key, keyOff, keys, keyBytes, keyLen);
            keyBytes += keyLen;
            sequences = ensure(sequences, sequenceBytes + seqLen);
            System.arraycopy(seq, seqOff, sequences, sequenceBytes, seqLen);
            sequenceBytes += seqLen;
            keyEnds[n] = keyBytes;
            seqEnds[n] = sequenceBytes;
            refs[n] = fileRef;
            positions[n] = position;
            n++;
        }

        private static byte[] ensure(byte[] a, int size) {
            return size <= a.length ? a : Arrays.copyOf(a, Math.max(size, a.length + (a.length >> 1)));
        }

        IndexEntries build() {
            return new IndexEntries(
                    Arrays.copyOf(keys, keyBytes),
                    Arrays.copyOf(keyEnds, n),
                    files.toArray(String[]::new),
                    Arrays.copyOf(refs, n),
                    Arrays.copyOf(positions, n),
                    Arrays.copyOf(sequences, sequenceBytes),
                    Arrays.copyOf(seqEnds, n));
        }
    }
}
