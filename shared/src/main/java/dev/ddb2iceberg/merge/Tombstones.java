package dev.ddb2iceberg.merge;

import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.SequenceNumbers;
import dev.ddb2iceberg.staging.StagedFormat;
import dev.ddb2iceberg.table.TableLayout;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.Table;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.OutputFile;

/**
 * Items the table removed recently, with the sequence number of the removing change.
 *
 * <p>A removed item has no row left to carry its sequence number, yet Lambda can deliver an older
 * change of it again later: a batch staged, then retried or bisected after the stager failed, lands
 * in a second staged object that the merger may take after the first was applied. Without a
 * record of the removal, that older change would bring the item back. So each merge commit names,
 * in its snapshot summary, a file of recent removals (kept {@code Merger.REMOVALS_KEPT}, longer than
 * the stream keeps records, counted from the oldest staged object still waiting), and an upsert of
 * an item with no live row is skipped when a removal at least as new is on file. The file is
 * written before the commit that names it, so it and the table change together.
 */
final class Tombstones {
  static final String PROPERTY = "ddb2iceberg.tombstones";

  private final Map<List<Object>, Change> byKey;
  private final String location;

  private Tombstones(Map<List<Object>, Change> byKey, String location) {
    this.byKey = byKey;
    this.location = location;
  }

  /** The removals named by the table's checkpoint snapshot; none for a new table. */
  static Tombstones read(Table table, TableLayout layout) {
    String location = Checkpoint.readProperty(table, PROPERTY);
    Map<List<Object>, Change> byKey = new HashMap<>();
    if (location != null) {
      InputFile in = table.io().newInputFile(location);
      byte[] bytes;
      try (InputStream s = in.newStream()) {
        bytes = s.readAllBytes();
      } catch (IOException e) {
        throw new UncheckedIOException("Cannot read the removals file " + location, e);
      }
      for (Change c : StagedFormat.read(bytes, location)) {
        List<Object> key = layout.keyOf(c);
        if (key != null) {
          byKey.put(key, c);
        }
      }
    }
    return new Tombstones(byKey, location);
  }

  /** Whether an upsert of {@code key} at {@code sequence} is older than a removal on file. */
  boolean removedAfter(List<Object> key, String sequence) {
    Change removal = byKey.get(key);
    return removal != null && SequenceNumbers.compare(removal.sequenceNumber(), sequence) >= 0;
  }

  int size() {
    return byKey.size();
  }

  /**
   * The file's location after this run: unchanged when nothing was removed, upserted or expired;
   * else a new file holding the run's removals, without the keys it wrote and the expired ones.
   */
  String update(Table table, TableLayout layout, Collection<Change> applied, long nowMillis, long forgetBeforeMillis,
      String runId) {
    // A removal's time field says when a merge recorded it; those recorded before the cutoff go.
    Map<List<Object>, Change> next = new HashMap<>(byKey);
    boolean changed = next.values().removeIf(c -> c.approximateCreationMillis() < forgetBeforeMillis);
    for (Change c : applied) {
      List<Object> key = layout.keyOf(c);
      if (c.operation().isUpsert()) {
        changed |= next.remove(key) != null;
      } else {
        next.put(key, new Change(c.keys(), c.operation(), null, c.sequenceNumber(), nowMillis, c.ttlExpiry()));
        changed = true;
      }
    }
    if (!changed) {
      return location;
    }
    if (next.isEmpty()) {
      return null;
    }
    List<Change> removals = new ArrayList<>(next.values());
    removals.sort((a, b) -> SequenceNumbers.compare(a.sequenceNumber(), b.sequenceNumber()));
    String path = dev.ddb2iceberg.table.DerivedFiles.location(table) + "ddb2iceberg/removals-" + runId + ".ddbstage";
    OutputFile out = table.io().newOutputFile(path);
    try (OutputStream s = out.createOrOverwrite()) {
      s.write(StagedFormat.write(removals));
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot write the removals file " + path, e);
    }
    return path;
  }
}
