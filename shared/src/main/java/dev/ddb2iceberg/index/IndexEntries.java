package dev.ddb2iceberg.index;

import java.io.ByteArrayOutputStream;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
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

  IndexEntries(byte[] keyData, int[] keyEnds, String[] files, int[] fileRefs, long[] positions, byte[] sequenceData,
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

  /** Bytes these entries hold in memory, roughly: what the cache counts. */
  public long memoryBytes() {
    long fileBytes = 0;
    for (String f : files) {
      fileBytes += 40 + 2L * f.length();
    }
    return keyData.length + sequenceData.length + 20L * size() + fileBytes + 100;
  }

  /** The entry of a key, or null when these entries do not mention it. */
  public Entry find(byte[] key) {
    int lo = 0;
    int hi = size() - 1;
    while (lo <= hi) {
      int mid = (lo + hi) >>> 1;
      int from = mid == 0 ? 0 : keyEnds[mid - 1];
      int c = Arrays.compareUnsigned(keyData, from, keyEnds[mid], key, 0, key.length);
      if (c < 0) {
        lo = mid + 1;
      } else if (c > 0) {
        hi = mid - 1;
      } else {
        return entry(mid);
      }
    }
    return null;
  }

  public Entry entry(int i) {
    int keyFrom = i == 0 ? 0 : keyEnds[i - 1];
    int seqFrom = i == 0 ? 0 : sequenceEnds[i - 1];
    return new Entry(Arrays.copyOfRange(keyData, keyFrom, keyEnds[i]), fileRefs[i] < 0 ? null : files[fileRefs[i]],
        positions[i], new BigInteger(Arrays.copyOfRange(sequenceData, seqFrom, sequenceEnds[i])));
  }

  String[] files() {
    return files;
  }

  int fileRef(int i) {
    return fileRefs[i];
  }

  /**
   * These entries with {@code newer} laid over them (newer entries win, key by key); tombstones
   * are dropped when {@code keepTombstones} is false (a base part has nothing under it).
   */
  public IndexEntries overlay(List<IndexEntries> newer, boolean keepTombstones) {
    Map<ByteKey, Entry> merged = new LinkedHashMap<>();
    for (IndexEntries layer : concat(this, newer)) {
      for (int i = 0; i < layer.size(); i++) {
        Entry e = layer.entry(i);
        merged.put(new ByteKey(e.key()), e);
      }
    }
    Builder b = new Builder();
    merged.values().forEach(e -> {
      if (keepTombstones || !e.isTombstone()) {
        b.add(e);
      }
    });
    return b.build();
  }

  private static List<IndexEntries> concat(IndexEntries first, List<IndexEntries> rest) {
    List<IndexEntries> all = new ArrayList<>(rest.size() + 1);
    all.add(first);
    all.addAll(rest);
    return all;
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

  /** Collects entries in any order; a key added twice keeps the last. */
  public static final class Builder {
    private final Map<ByteKey, Entry> entries = new HashMap<>();

    public Builder add(Entry e) {
      entries.put(new ByteKey(e.key()), e);
      return this;
    }

    public int size() {
      return entries.size();
    }

    public IndexEntries build() {
      List<Entry> sorted = new ArrayList<>(entries.values());
      sorted.sort((a, b) -> Arrays.compareUnsigned(a.key(), b.key()));
      Map<String, Integer> fileIds = new LinkedHashMap<>();
      sorted.forEach(e -> {
        if (e.file() != null) {
          fileIds.computeIfAbsent(e.file(), f -> fileIds.size());
        }
      });
      Appender a = new Appender(fileIds.keySet().toArray(String[]::new), sorted.size());
      for (Entry e : sorted) {
        a.append(e.key(), e.file() == null ? -1 : fileIds.get(e.file()), e.position(), e.sequence().toByteArray());
      }
      return a.build();
    }
  }

  /** Takes entries already in key order (as a file holds them), checking the order. */
  static final class Appender {
    private final String[] files;
    private final ByteArrayOutputStream keys = new ByteArrayOutputStream();
    private final ByteArrayOutputStream sequences = new ByteArrayOutputStream();
    private final int[] keyEnds;
    private final int[] seqEnds;
    private final int[] refs;
    private final long[] positions;
    private int n;
    private byte[] last;

    Appender(String[] files, int count) {
      this.files = files;
      keyEnds = new int[count];
      seqEnds = new int[count];
      refs = new int[count];
      positions = new long[count];
    }

    /** False when the key is not above the previous one (a damaged file). */
    boolean append(byte[] key, int fileRef, long position, byte[] sequence) {
      if (last != null && Arrays.compareUnsigned(last, key) >= 0) {
        return false;
      }
      last = key;
      keys.writeBytes(key);
      keyEnds[n] = keys.size();
      sequences.writeBytes(sequence);
      seqEnds[n] = sequences.size();
      refs[n] = fileRef;
      positions[n] = position;
      n++;
      return true;
    }

    IndexEntries build() {
      if (n != keyEnds.length) {
        throw new IllegalStateException(n + " entries appended of " + keyEnds.length);
      }
      return new IndexEntries(keys.toByteArray(), keyEnds, files, refs, positions, sequences.toByteArray(), seqEnds);
    }
  }
}
