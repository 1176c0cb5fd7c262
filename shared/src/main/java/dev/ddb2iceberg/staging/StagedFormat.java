package dev.ddb2iceberg.staging;

import com.github.luben.zstd.Zstd;
import com.github.luben.zstd.ZstdCompressCtx;
import com.github.luben.zstd.ZstdDecompressCtx;
import com.github.luben.zstd.ZstdException;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.ItemMap;
import dev.ddb2iceberg.model.Operation;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * The staged-object format: a batch of {@link Change}s, lossless, compact and quick to read back.
 *
 * <pre>
 * header  "DDBSTAGE" (8 bytes) · format version (1 byte) · codec (1 byte, 2 = zstd)
 *         · body length before compression (4 bytes)
 * body    one zstd frame (with content checksum) of: change count (varint), then per change:
 *           operation (byte) · flags (byte: 1 = TTL expiry, 2 = has new image)
 *           sequence number (string) · approximate creation time (8 bytes, epoch ms)
 *           keys (map) · new image (map, if flagged)
 * values  a tag byte, then: S, N: string; B: bytes; BOOL and NULL: nothing more;
 *         M: count, (name, value)*; L: count, value*; SS, NS: count, string*; BS: count, bytes*
 * strings and bytes are a varint length then UTF-8 / raw bytes.
 * </pre>
 *
 * The header is outside the compression so a reader can tell what an object is before inflating
 * it; zstd's frame checksum and the recorded length catch truncated or damaged objects. zstd at
 * level 1 compresses several times faster than gzip at a similar ratio, and staging speed is the
 * stager's whole cost. A change to the body
 * layout gets a new format version, and readers refuse versions they do not know.
 */
public final class StagedFormat {
    static final byte[] MAGIC = "DDBSTAGE".getBytes(StandardCharsets.US_ASCII);
    public static final int VERSION = 1;
    static final int CODEC_ZSTD = 2;
    private static final int HEADER_LENGTH = MAGIC.length + 2 + 4;
    /** A Lambda batch is at most 6 MB of JSON; anything claiming far more is damaged. */
    private static final int MAX_BODY_LENGTH = 256 << 20;

    private static final int ZSTD_LEVEL = 1;

    private static final int FLAG_TTL = 1;
    private static final int FLAG_NEW_IMAGE = 2;

    private static final byte T_S = 1;
    private static final byte T_N = 2;
    private static final byte T_B = 3;
    private static final byte T_TRUE = 4;
    private static final byte T_FALSE = 5;
    private static final byte T_NULL = 6;
    private static final byte T_M = 7;
    private static final byte T_L = 8;
    private static final byte T_SS = 9;
    private static final byte T_NS = 10;
    private static final byte T_BS = 11;

    private static final Operation[] OPERATIONS = Operation.values();

    private StagedFormat() {}

    /** Encodes and compresses a batch. */
    public static byte[] write(List<Change> changes) {
        Output body = new Output(Math.max(256, changes.size() * 512));
        body.varint(changes.size());
        for (Change c : changes) {
            body.raw(c.operation().ordinal());
            body.raw((c.ttlExpiry() ? FLAG_TTL : 0) | (c.newImage() != null ? FLAG_NEW_IMAGE : 0));
            body.string(c.sequenceNumber());
            body.int64(c.approximateCreationMillis());
            body.map(c.keys());
            if (c.newImage() != null) {
                body.map(c.newImage());
            }
        }
        try (ZstdCompressCtx zstd = new ZstdCompressCtx()) {
            zstd.setLevel(ZSTD_LEVEL).setChecksum(true);
            byte[] out = new byte[HEADER_LENGTH + (int) Zstd.compressBound(body.length)];
            System.arraycopy(MAGIC, 0, out, 0, MAGIC.length);
            out[MAGIC.length] = (byte) VERSION;
            out[MAGIC.length + 1] = CODEC_ZSTD;
            ByteBuffer.wrap(out, MAGIC.length + 2, 4).putInt(body.length);
            int n = zstd.compressByteArray(out, HEADER_LENGTH, out.length - HEADER_LENGTH, body.buf, 0, body.length);
            return Arrays.copyOf(out, HEADER_LENGTH + n);
        }
    }

    /** Decompresses and decodes a staged object; {@code name} is only used in error messages. */
    public static List<Change> read(byte[] object, String name) {
        if (object.length < HEADER_LENGTH || !Arrays.equals(Arrays.copyOf(object, MAGIC.length), MAGIC)) {
            throw new CorruptStagedObjectException("'" + name + "' is not a staged object (no DDBSTAGE header)");
        }
        int version = object[MAGIC.length] & 0xFF;
        if (version != VERSION) {
            throw new CorruptStagedObjectException("'" + name + "' has staged format version " + version
                    + "; this reader knows version " + VERSION + " only. Deploy the merger that matches the stager.");
        }
        int codec = object[MAGIC.length + 1] & 0xFF;
        if (codec != CODEC_ZSTD) {
            throw new CorruptStagedObjectException("'" + name + "' uses unknown codec " + codec);
        }
        int length = ByteBuffer.wrap(object, MAGIC.length + 2, 4).getInt();
        if (length < 0 || length > MAX_BODY_LENGTH) {
            throw new CorruptStagedObjectException("'" + name + "' is damaged: body length " + length);
        }
        byte[] body = new byte[length];
        try (ZstdDecompressCtx zstd = new ZstdDecompressCtx()) {
            int n = zstd.decompressByteArray(body, 0, length, object, HEADER_LENGTH, object.length - HEADER_LENGTH);
            if (n != length) {
                throw new CorruptStagedObjectException(
                        "'" + name + "' is truncated: " + n + " of " + length + " bytes");
            }
        } catch (ZstdException e) {
            throw new CorruptStagedObjectException("'" + name + "' is truncated or damaged: " + e.getMessage(), e);
        }
        try {
            Input in = new Input(body);
            int count = in.varint();
            List<Change> changes = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                int opIndex = in.raw();
                if (opIndex >= OPERATIONS.length) {
                    throw new CorruptStagedObjectException("'" + name + "': unknown operation " + opIndex);
                }
                in.change = i + 1;
                int flags = in.raw();
                String seq = in.string();
                long millis = in.int64();
                ItemMap keys = in.item();
                ItemMap image = null;
                if ((flags & FLAG_NEW_IMAGE) != 0) {
                    image = in.item();
                    keys = keys.sharingValuesOf(image); // one copy of each key value while the merge holds both
                }
                changes.add(new Change(keys, OPERATIONS[opIndex], image, seq, millis, (flags & FLAG_TTL) != 0));
            }
            if (in.pos != body.length) {
                throw new CorruptStagedObjectException(
                        "'" + name + "' has " + (body.length - in.pos) + " bytes after its last change");
            }
            return changes;
        } catch (IndexOutOfBoundsException | IllegalArgumentException e) {
            if (e instanceof CorruptStagedObjectException) {
                throw e;
            }
            throw new CorruptStagedObjectException("'" + name + "' is damaged: " + e.getMessage(), e);
        }
    }

    /** A growable byte buffer with the few primitives the format needs. */
    private static final class Output {
        byte[] buf;
        int length;

        Output(int capacity) {
            buf = new byte[capacity];
        }

        private void ensure(int extra) {
            if (length + extra > buf.length) {
                buf = Arrays.copyOf(buf, Math.max(buf.length * 2, length + extra));
            }
        }

        void raw(int b) {
            ensure(1);
            buf[length++] = (byte) b;
        }

        void varint(int v) {
            ensure(5);
            while ((v & ~0x7F) != 0) {
                buf[length++] = (byte) ((v & 0x7F) | 0x80);
                v >>>= 7;
            }
            buf[length++] = (byte) v;
        }

        void int64(long v) {
            ensure(8);
            for (int shift = 56; shift >= 0; shift -= 8) {
                buf[length++] = (byte) (v >>> shift);
            }
        }

        void bytes(byte[] b) {
            varint(b.length);
            ensure(b.length);
            System.arraycopy(b, 0, buf, length, b.length);
            length += b.length;
        }

        void string(String s) {
            bytes(s.getBytes(StandardCharsets.UTF_8));
        }

        void map(Map<String, DdbValue> m) {
            varint(m.size());
            for (Map.Entry<String, DdbValue> e : m.entrySet()) {
                string(e.getKey());
                value(e.getValue());
            }
        }

        void value(DdbValue v) {
            if (v instanceof DdbValue.S s) {
                raw(T_S);
                string(s.value());
            } else if (v instanceof DdbValue.N n) {
                raw(T_N);
                string(n.text());
            } else if (v instanceof DdbValue.B b) {
                raw(T_B);
                bytes(b.bytes());
            } else if (v instanceof DdbValue.Bool b) {
                raw(b.value() ? T_TRUE : T_FALSE);
            } else if (v instanceof DdbValue.Null) {
                raw(T_NULL);
            } else if (v instanceof DdbValue.M m) {
                raw(T_M);
                map(m.fields());
            } else if (v instanceof DdbValue.L l) {
                raw(T_L);
                varint(l.elements().size());
                l.elements().forEach(this::value);
            } else if (v instanceof DdbValue.SS ss) {
                raw(T_SS);
                varint(ss.elements().size());
                ss.elements().forEach(this::string);
            } else if (v instanceof DdbValue.NS ns) {
                raw(T_NS);
                varint(ns.elements().size());
                ns.elements().forEach(this::string);
            } else if (v instanceof DdbValue.BS bs) {
                raw(T_BS);
                varint(bs.elements().size());
                bs.elements().forEach(this::bytes);
            } else {
                throw new IllegalStateException("unknown value " + v);
            }
        }
    }

    private static final class Input {
        /** Slots of the names cache: more than the attributes of any table we have seen. */
        private static final int NAME_SLOTS = 256;

        final byte[] buf;
        int pos;
        /**
         * Attribute names met so far, by a hash of their bytes (a slot keeps the last name that hashed
         * to it): every item of a table repeats the same few names, so each becomes one String per
         * object instead of one per item. A merge holds its changes' images until it commits, and
         * the names were 15 % of what reading a staged object allocated.
         */
        private final String[] names = new String[NAME_SLOTS];

        private final byte[][] nameBytes = new byte[NAME_SLOTS][];

        /** Values of up to this many bytes are looked up in the values cache ({@link #scalar}). */
        private static final int SHORT_VALUE = 16;

        /** The values cache: recurring short values, by their bytes, two slots a hash. */
        private static final int VALUE_SLOTS = 1024;

        private final byte[][] valueBytes = new byte[VALUE_SLOTS][];
        private final DdbValue[] values = new DdbValue[VALUE_SLOTS];

        /** For each pair of value slots, whether the second was used last. */
        private final boolean[] usedLast = new boolean[VALUE_SLOTS / 2];

        /** Hashes of short values met, and the change each was last met in: a value is cached once it recurs. */
        private static final int SEEN_SLOTS = 4096;

        private final int[] seenHash = new int[SEEN_SLOTS];
        private final int[] seenIn = new int[SEEN_SLOTS];

        /** The change being read, counted from 1. */
        int change;

        /**
         * The last item (keys or image), and the last map value, read of each number of attributes:
         * the next one of as many mostly has the same names, and shares their list ({@link
         * ItemMap.Builder#build(ItemMap)}). Apart, so that keys and a map value of as many
         * attributes do not take each other's place.
         */
        private final ItemMap[] lastItemOfSize = new ItemMap[64];

        private final ItemMap[] lastMapValueOfSize = new ItemMap[64];

        Input(byte[] buf) {
            this.buf = buf;
        }

        int raw() {
            return buf[pos++] & 0xFF;
        }

        int varint() {
            int v = 0;
            for (int shift = 0; shift < 35; shift += 7) {
                int b = raw();
                v |= (b & 0x7F) << shift;
                if ((b & 0x80) == 0) {
                    if (v < 0) {
                        throw new IllegalArgumentException("negative length");
                    }
                    return v;
                }
            }
            throw new IllegalArgumentException("malformed varint at " + pos);
        }

        long int64() {
            long v = 0;
            for (int i = 0; i < 8; i++) {
                v = (v << 8) | raw();
            }
            return v;
        }

        byte[] bytes() {
            int n = varint();
            if (n > buf.length - pos) {
                throw new IllegalArgumentException("length " + n + " runs past the end");
            }
            byte[] out = Arrays.copyOfRange(buf, pos, pos + n);
            pos += n;
            return out;
        }

        String string() {
            int n = varint();
            if (n > buf.length - pos) {
                throw new IllegalArgumentException("length " + n + " runs past the end");
            }
            String s = new String(buf, pos, n, StandardCharsets.UTF_8);
            pos += n;
            return s;
        }

        /** A change's keys or new image: a {@link #map}. */
        ItemMap item() {
            return map(lastItemOfSize);
        }

        /**
         * A map, built as the item map the change keeps (no copy), holding the list of names of the
         * last map in {@code shapes} of as many attributes when its names are the same.
         */
        ItemMap map(ItemMap[] shapes) {
            int n = varint();
            if (n > buf.length - pos) {
                throw new IllegalArgumentException("map of " + n + " attributes runs past the end");
            }
            ItemMap.Builder m = new ItemMap.Builder(n);
            for (int i = 0; i < n; i++) {
                m.put(name(), value());
            }
            if (n >= shapes.length) {
                return m.build();
            }
            return shapes[n] = m.build(shapes[n]);
        }

        /** A map's key (an attribute name): {@link #string}, the same String each time it recurs. */
        String name() {
            int n = varint();
            if (n > buf.length - pos) {
                throw new IllegalArgumentException("length " + n + " runs past the end");
            }
            int slot = hashOf(n) & (NAME_SLOTS - 1);
            byte[] known = nameBytes[slot];
            if (known == null || !Arrays.equals(known, 0, known.length, buf, pos, pos + n)) {
                known = Arrays.copyOfRange(buf, pos, pos + n);
                nameBytes[slot] = known;
                names[slot] = new String(known, StandardCharsets.UTF_8);
            }
            pos += n;
            return names[slot];
        }

        /** A hash of the next {@code n} bytes. */
        private int hashOf(int n) {
            int h = n;
            for (int i = pos; i < pos + n; i++) {
                h = 31 * h + buf[i];
            }
            return h ^ (h >>> 16);
        }

        /**
         * A string or number value. A short one is the same object each time it recurs within the
         * object (from its third time: it takes a slot once it recurs), as names are: a status, a
         * country or a small count repeats across items, and a merge holds every change's values
         * until it commits (three objects a value otherwise).
         */
        DdbValue scalar(boolean number) {
            int n = varint();
            if (n > buf.length - pos) {
                throw new IllegalArgumentException("length " + n + " runs past the end");
            }
            if (n > SHORT_VALUE) {
                String s = new String(buf, pos, n, StandardCharsets.UTF_8);
                pos += n;
                return number ? new DdbValue.N(s) : new DdbValue.S(s);
            }
            // Two slots a hash (on a miss, the one used last is kept): two recurring values whose
            // hashes meet both stay. A string and a number of the same text hash apart: each
            // recurs as itself.
            int hash = mixed(hashOf(n) * 31 + (number ? 1 : 0));
            int first = (hash & (VALUE_SLOTS / 2 - 1)) * 2;
            int slot = first;
            DdbValue value;
            if (holds(slot, n, number) || holds(slot = first + 1, n, number)) {
                value = values[slot];
            } else {
                String s = new String(buf, pos, n, StandardCharsets.UTF_8);
                value = number ? new DdbValue.N(s) : new DdbValue.S(s);
                // A value takes a slot only once an earlier change had it too: most values met
                // once (ids) then cost no copy, and take no recurring value's place.
                int seenAt = (hash >>> 16) & (SEEN_SLOTS - 1);
                if (seenHash[seenAt] != hash || seenIn[seenAt] == change) {
                    seenHash[seenAt] = hash;
                    seenIn[seenAt] = change;
                    pos += n;
                    return value;
                }
                slot = usedLast[first / 2] ? first : first + 1; // the other one
                values[slot] = value;
                valueBytes[slot] = Arrays.copyOfRange(buf, pos, pos + n);
            }
            usedLast[first / 2] = slot != first;
            pos += n;
            return value;
        }

        /** Whether value slot {@code slot} holds the next {@code n} bytes as a string, or as a number. */
        private boolean holds(int slot, int n, boolean number) {
            byte[] known = valueBytes[slot];
            return known != null
                    && values[slot] instanceof DdbValue.N == number
                    && Arrays.equals(known, 0, known.length, buf, pos, pos + n);
        }

        /**
         * {@code h} with its bits mixed (MurmurHash3's finalizer): ids that count up hash to numbers
         * that count up, and would sweep the slots in order, evicting recurring values on their way.
         */
        private static int mixed(int h) {
            h *= 0x85ebca6b;
            h ^= h >>> 13;
            h *= 0xc2b2ae35;
            return h ^ (h >>> 16);
        }

        List<String> strings(int n) {
            List<String> out = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                out.add(string());
            }
            return out;
        }

        DdbValue value() {
            int tag = raw();
            switch (tag) {
                case T_S:
                    return scalar(false);
                case T_N:
                    return scalar(true);
                case T_B:
                    return new DdbValue.B(bytes());
                case T_TRUE:
                    return DdbValue.Bool.TRUE;
                case T_FALSE:
                    return DdbValue.Bool.FALSE;
                case T_NULL:
                    return DdbValue.Null.INSTANCE;
                case T_M:
                    return new DdbValue.M(map(lastMapValueOfSize));
                case T_L: {
                    int n = varint();
                    List<DdbValue> out = new ArrayList<>(n);
                    for (int i = 0; i < n; i++) {
                        out.add(value());
                    }
                    return new DdbValue.L(out);
                }
                case T_SS:
                    return new DdbValue.SS(strings(varint()));
                case T_NS:
                    return new DdbValue.NS(strings(varint()));
                case T_BS: {
                    int n = varint();
                    List<byte[]> out = new ArrayList<>(n);
                    for (int i = 0; i < n; i++) {
                        out.add(bytes());
                    }
                    return new DdbValue.BS(out);
                }
                default:
                    throw new IllegalArgumentException("unknown value tag " + tag + " at " + (pos - 1));
            }
        }
    }
}
