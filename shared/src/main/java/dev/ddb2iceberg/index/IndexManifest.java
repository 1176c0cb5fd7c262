package dev.ddb2iceberg.index;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.io.FileIO;

/**
 * The files that make up one version of the key index: a base part per hash part of the keys, each
 * with an overlay or none, and the deltas written since, oldest first. Deltas are numbered by
 * generation, and each part records the generation it has absorbed (into its base or its overlay):
 * a key's entry is in the deltas newer than its part's generation, else in its overlay, else in its
 * base. So parts are folded a few at a time (see {@link KeyIndex#withChanges}), and a delta is
 * dropped once every part has absorbed it. A snapshot summary names the manifest of the index that
 * describes exactly that snapshot.
 *
 * @param format {@link #FORMAT}, or {@link #FORMAT_WITHOUT_OVERLAYS} when no part has an overlay
 * @param parts how many parts the keys are spread over (by {@link IndexKeys#part})
 * @param base each part, in part order
 * @param overlays each part's overlay, in part order ({@link KeyIndex#emptyPart} where it has none),
 *     or empty: no part has one
 * @param deltas delta files, oldest first; a newer delta's entry wins over an older one's
 * @param generation the newest delta's generation (or what the parts absorbed, with no deltas)
 * @param baseEntries entries in the parts (their overlays left out)
 * @param deltaEntries entries in the deltas (some replace parts' entries)
 * @param bytes size of all the files in storage
 */
public record IndexManifest(
        int format,
        int parts,
        List<Part> base,
        @JsonInclude(JsonInclude.Include.NON_EMPTY) List<Part> overlays,
        List<Delta> deltas,
        long generation,
        long baseEntries,
        long deltaEntries,
        long bytes) {
    /**
     * 3: parts with overlays. A version without overlays (a small table's, every removals index) is
     * written as format 2 (parts read by block, no overlays), so a release from before overlays
     * still reads it; format 1 (whole-file parts) is rebuilt, once.
     */
    public static final int FORMAT = 3;

    /** The format of a version without overlays, written as before there were any. */
    public static final int FORMAT_WITHOUT_OVERLAYS = 2;

    /** Strict: an unknown or missing field (a damaged manifest) fails the read, never reads as zero. */
    private static final ObjectMapper JSON =
            new ObjectMapper().enable(DeserializationFeature.FAIL_ON_MISSING_CREATOR_PROPERTIES);

    /**
     * One part: its file ({@code null} while it has no entries), the file's length and the bytes
     * its footer and tail take at its end (so the footer is one ranged GET of exactly those), its
     * entries and the delta generation it has absorbed.
     */
    public record Part(String path, long length, int footer, long entries, long absorbed) {}

    /** One delta file: its generation, entries and length. */
    public record Delta(String path, long generation, long entries, long length) {}

    /** A version of these parts (no overlays) and deltas, its entry and byte totals summed from them. */
    static IndexManifest of(List<Part> base, List<Delta> deltas, long generation) {
        return of(base, List.of(), deltas, generation);
    }

    /**
     * A version of these parts, their overlays (empty: none) and deltas, its entry and byte totals
     * summed from them. Overlays that are all empty are kept as none.
     */
    static IndexManifest of(List<Part> base, List<Part> overlays, List<Delta> deltas, long generation) {
        boolean none = overlays.stream().allMatch(o -> o.path() == null);
        return new IndexManifest(
                none ? FORMAT_WITHOUT_OVERLAYS : FORMAT,
                base.size(),
                List.copyOf(base),
                none ? List.of() : List.copyOf(overlays),
                List.copyOf(deltas),
                generation,
                base.stream().mapToLong(Part::entries).sum(),
                deltas.stream().mapToLong(Delta::entries).sum(),
                partBytes(base)
                        + partBytes(none ? List.of() : overlays)
                        + deltas.stream().mapToLong(Delta::length).sum());
    }

    /** Part {@code p}'s overlay ({@link KeyIndex#emptyPart} when it has none). */
    public Part overlay(int p) {
        return overlays.isEmpty() ? KeyIndex.emptyPart() : overlays.get(p);
    }

    /** Entries in the overlays (some replace or remove their parts' entries). */
    public long overlayEntries() {
        return overlays.stream().mapToLong(Part::entries).sum();
    }

    /** Size of the parts and their overlays in storage, the deltas left out. */
    public long baseBytes() {
        return partBytes(base) + partBytes(overlays);
    }

    private static long partBytes(List<Part> parts) {
        return parts.stream().mapToLong(Part::length).sum();
    }

    /** Every file of this version, manifest aside: what orphan cleanup must keep. */
    public List<String> files() {
        List<String> all = new ArrayList<>();
        deltas.forEach(d -> all.add(d.path()));
        base.stream().filter(p -> p.path() != null).forEach(p -> all.add(p.path()));
        overlays.stream().filter(p -> p.path() != null).forEach(p -> all.add(p.path()));
        return all;
    }

    static IndexManifest read(FileIO io, String location) {
        try (InputStream in = io.newInputFile(location).newStream()) {
            JsonNode tree = JSON.readTree(in);
            int format = tree == null ? 0 : tree.path("format").asInt();
            if (format == 1) {
                throw new DamagedIndexException("key index manifest " + location
                        + " is format 1 (parts read whole); this version reads parts by block (format "
                        + FORMAT_WITHOUT_OVERLAYS + " or " + FORMAT + ")");
            }
            if (format == FORMAT_WITHOUT_OVERLAYS && tree instanceof ObjectNode without && !tree.has("overlays")) {
                without.putArray("overlays");
            }
            IndexManifest m = JSON.treeToValue(tree, IndexManifest.class);
            boolean overlays = m.overlays() != null && !m.overlays().isEmpty();
            if ((m.format() != FORMAT && m.format() != FORMAT_WITHOUT_OVERLAYS)
                    || m.parts() < 1
                    || m.base() == null
                    || m.base().size() != m.parts()
                    || m.overlays() == null
                    || overlays != (m.format() == FORMAT)
                    || (overlays && m.overlays().size() != m.parts())
                    || m.deltas() == null) {
                throw new DamagedIndexException(location + " is not a format " + FORMAT_WITHOUT_OVERLAYS + " or "
                        + FORMAT + " key index manifest");
            }
            return m;
        } catch (JacksonException e) {
            throw new DamagedIndexException(
                    "key index manifest " + location + " is damaged: " + e.getOriginalMessage());
        } catch (NotFoundException e) {
            throw new DamagedIndexException("key index manifest " + location + " is missing");
        } catch (IOException e) {
            // Anything else (a network error) may pass: the run fails and the next one reads the index again.
            throw new UncheckedIOException("could not read key index manifest " + location, e);
        }
    }

    void write(FileIO io, String location) {
        try (OutputStream out = io.newOutputFile(location).createOrOverwrite()) {
            JSON.writeValue(out, this);
        } catch (IOException e) {
            throw new UncheckedIOException("could not write key index manifest " + location, e);
        }
    }
}
