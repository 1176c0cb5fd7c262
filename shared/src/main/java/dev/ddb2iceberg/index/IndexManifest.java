package dev.ddb2iceberg.index;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.io.FileIO;

/**
 * The files that make up one version of the key index: a base file per part (null for a part
 * without keys) and the deltas written since the parts were last rebuilt, oldest first. A snapshot
 * summary names the manifest of the index that describes exactly that snapshot.
 *
 * @param format 1
 * @param parts how many parts the keys are spread over (by {@link IndexKeys#part})
 * @param base each part's base file location, or null
 * @param deltas delta file locations, oldest first; a newer delta's entry wins over an older one's
 * @param baseEntries entries in the base files
 * @param deltaEntries entries in the deltas (some replace base entries)
 * @param bytes size of all the files in storage
 */
public record IndexManifest(
        int format,
        int parts,
        List<String> base,
        List<String> deltas,
        long baseEntries,
        long deltaEntries,
        long bytes) {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** Every file of this version, manifest aside: what orphan cleanup must keep. */
    public List<String> files() {
        List<String> all = new ArrayList<>(deltas);
        base.stream().filter(p -> p != null).forEach(all::add);
        return all;
    }

    static IndexManifest read(FileIO io, String location) {
        try (InputStream in = io.newInputFile(location).newStream()) {
            IndexManifest m = JSON.readValue(in, IndexManifest.class);
            if (m.format() != 1
                    || m.parts() < 1
                    || m.base() == null
                    || m.base().size() != m.parts()
                    || m.deltas() == null) {
                throw new DamagedIndexException(location + " is not a version 1 key index manifest");
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
