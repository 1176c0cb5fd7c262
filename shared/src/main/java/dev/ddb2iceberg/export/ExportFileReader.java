package dev.ddb2iceberg.export;

import dev.ddb2iceberg.model.Change;
import java.io.BufferedReader;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PushbackInputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.function.ObjIntConsumer;
import java.util.zip.GZIPInputStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Reads one gzip-compressed data file of an export: checks it against its manifest line (MD5 of the
 * stored bytes, number of items), and reads a bounded run of its lines from any line on (gzip
 * cannot seek, so earlier lines are read and skipped without being parsed).
 */
public final class ExportFileReader {
    private static final Logger LOG = LoggerFactory.getLogger(ExportFileReader.class);
    /** Reads of a file in a row that may be cut short before it fails. */
    static final int REREADS = 3;

    private final S3Client s3;
    private final String bucket;

    public ExportFileReader(S3Client s3, String bucket) {
        this.s3 = s3;
        this.bucket = bucket;
    }

    /** Up to {@code max} changes from {@code fromLine} on; {@code nextLine} is where the next read starts. */
    public record Chunk(List<Change> changes, long nextLine, boolean endOfFile) {}

    /** Throws IllegalArgumentException naming the file when its MD5 or item count differs from the manifest. */
    public void verify(ExportManifest.DataFile file) {
        MessageDigest md5 = newMd5();
        long lines = 0;
        try (InputStream raw =
                        new DigestInputStream(s3.getObject(b -> b.bucket(bucket).key(file.key())), md5);
                BufferedReader in = lines(raw)) {
            while (in.readLine() != null) {
                lines++;
            }
            raw.transferTo(OutputStream.nullOutputStream()); // the digest covers every stored byte
        } catch (IOException e) {
            throw new UncheckedIOException("Could not read export data file s3://" + bucket + "/" + file.key(), e);
        }
        check(file, Base64.getEncoder().encodeToString(md5.digest()), lines);
    }

    private void check(ExportManifest.DataFile file, String digest, long lines) {
        if (file.md5() != null && !file.md5().equals(digest)) {
            throw new IllegalArgumentException(
                    "Export data file s3://" + bucket + "/" + file.key() + " has MD5 " + digest
                            + " but manifest-files.json says " + file.md5()
                            + ": the file is damaged or was replaced. Nothing of it was"
                            + " loaded; request the export again.");
        }
        if (lines != file.itemCount()) {
            throw new IllegalArgumentException("Export data file s3://" + bucket + "/" + file.key() + " holds " + lines
                    + " items but manifest-files.json says " + file.itemCount()
                    + ". Nothing of it was loaded; request the"
                    + " export again.");
        }
    }

    /**
     * Reads a whole file in one pass, handing each line's change and its length in bytes to
     * {@code sink}, and checks it as {@link #verify} does at the end (the parallel load's workers read
     * each file once). What the sink was given before a damaged file is found must be discarded by the
     * caller: the exception names the file.
     *
     * <p>The sink may take its time (a worker writes a batch of rows from inside it), and S3 closes a
     * connection left idle that long. A read cut short is opened again and the lines already handed
     * over are skipped (gzip cannot seek), up to {@link #REREADS} times in a row without progress.
     */
    public long readAll(ExportManifest.DataFile file, ExportLines decoder, ObjIntConsumer<Change> sink) {
        long delivered = 0;
        int failures = 0;
        while (true) {
            MessageDigest md5 = newMd5(); // the digest covers one whole read of the stored bytes
            long line = 0;
            long before = delivered;
            try (InputStream raw = new DigestInputStream(
                            s3.getObject(b -> b.bucket(bucket).key(file.key())), md5);
                    BufferedReader in = lines(raw)) {
                String text;
                while ((text = in.readLine()) != null) {
                    if (line >= delivered) {
                        try {
                            sink.accept(decoder.decode(text), text.length());
                        } catch (IllegalArgumentException e) {
                            throw new IllegalArgumentException(
                                    "Line " + (line + 1) + " of export data file s3://" + bucket + "/" + file.key()
                                            + " cannot be loaded: " + e.getMessage(),
                                    e);
                        }
                        delivered++;
                    }
                    line++;
                }
                raw.transferTo(OutputStream.nullOutputStream());
                check(file, Base64.getEncoder().encodeToString(md5.digest()), line);
                return line;
            } catch (IOException | SdkException e) {
                failures = delivered > before ? 1 : failures + 1;
                if (failures > REREADS) {
                    throw new UncheckedIOException(
                            "Could not read export data file s3://" + bucket + "/" + file.key() + " (" + failures
                                    + " reads in a row cut short at line " + (delivered + 1) + ")",
                            e instanceof IOException io ? io : new IOException(e));
                }
                LOG.info(
                        "Reading export data file s3://{}/{} was cut short at line {} ({}); reading it again from there",
                        bucket,
                        file.key(),
                        delivered + 1,
                        e.toString());
            }
        }
    }

    private static MessageDigest newMd5() {
        try {
            return MessageDigest.getInstance("MD5");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    public Chunk read(ExportManifest.DataFile file, long fromLine, int max, ExportLines decoder) {
        List<Change> changes = new ArrayList<>();
        long line = 0;
        try (BufferedReader in = lines(s3.getObject(b -> b.bucket(bucket).key(file.key())))) {
            String text;
            while ((text = in.readLine()) != null) {
                if (line >= fromLine) {
                    if (changes.size() == max) {
                        return new Chunk(changes, line, false);
                    }
                    try {
                        changes.add(decoder.decode(text));
                    } catch (IllegalArgumentException e) {
                        throw new IllegalArgumentException(
                                "Line " + (line + 1) + " of export data file s3://" + bucket + "/" + file.key()
                                        + " cannot be loaded: " + e.getMessage(),
                                e);
                    }
                }
                line++;
            }
        } catch (IOException e) {
            throw new UncheckedIOException("Could not read export data file s3://" + bucket + "/" + file.key(), e);
        }
        return new Chunk(changes, line, true);
    }

    /** The lines of a gzip stream; a zero-byte object (an empty partition) has none. */
    private static BufferedReader lines(InputStream raw) throws IOException {
        PushbackInputStream in = new PushbackInputStream(raw, 1);
        int first = in.read();
        if (first < 0) {
            return new BufferedReader(new InputStreamReader(InputStream.nullInputStream(), StandardCharsets.UTF_8));
        }
        in.unread(first);
        try {
            return new BufferedReader(
                    new InputStreamReader(new GZIPInputStream(in, 64 * 1024), StandardCharsets.UTF_8), 64 * 1024);
        } catch (EOFException e) {
            throw new IOException("not a complete gzip file", e);
        }
    }
}
