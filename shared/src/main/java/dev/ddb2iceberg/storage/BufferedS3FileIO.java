package dev.ddb2iceberg.storage;

import java.io.IOException;
import java.io.OutputStream;
import java.util.Map;
import org.apache.commons.io.output.UnsynchronizedByteArrayOutputStream;
import org.apache.iceberg.aws.s3.S3FileIO;
import org.apache.iceberg.aws.s3.S3FileIOProperties;
import org.apache.iceberg.encryption.NativeFileCryptoParameters;
import org.apache.iceberg.encryption.NativelyEncryptedFile;
import org.apache.iceberg.exceptions.AlreadyExistsException;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.io.PositionOutputStream;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;

/**
 * Iceberg's S3FileIO, except that a file it writes is held in memory and sent in one PUT when it is
 * closed, instead of going through a local staging file. A file that grows past {@link
 * #DEFAULT_MEMORY_LIMIT} is handed, bytes so far included, to S3FileIO's own stream (local staging,
 * multipart upload above its threshold), so memory stays bounded.
 *
 * <p>Why: a merge writes hundreds of small files (a delete file per data file it touches, a data
 * file per partition, index files, manifests), and for each S3FileIO creates a file on local disk,
 * writes it, reads it back and deletes it. Without that, merges of 100,000 changes into 10M rows
 * do 15 % more changes per CPU-second (BENCHMARKS.md, "2026-12-05, third session: uploads from
 * memory").
 *
 * <p>Only where S3FileIO's own upload is a plain PUT: when its properties set server-side
 * encryption, an ACL, write tags, a storage class, checksums or access points, every file goes
 * through S3FileIO's own stream, so those settings keep their meaning. The PUT goes through the
 * same S3 client as S3FileIO's (its retries, credentials, endpoint).
 */
public class BufferedS3FileIO extends S3FileIO {
    /** Below S3FileIO's multipart threshold (32 MB parts x 1.5), so a buffered file is one PUT either way. */
    public static final int DEFAULT_MEMORY_LIMIT = 16 << 20;

    private final int memoryLimit;
    private boolean plainPuts;

    /** As Iceberg's catalogs build a FileIO: by class name, then {@link #initialize}. */
    public BufferedS3FileIO() {
        this(DEFAULT_MEMORY_LIMIT);
    }

    /** With another limit past which a file goes to S3FileIO's own stream (tests write past a small one). */
    public BufferedS3FileIO(int memoryLimit) {
        if (memoryLimit <= 0) {
            throw new IllegalArgumentException("memory limit must be positive, was " + memoryLimit);
        }
        this.memoryLimit = memoryLimit;
    }

    @Override
    public void initialize(Map<String, String> properties) {
        super.initialize(properties);
        this.plainPuts = plainPuts(new S3FileIOProperties(properties()));
    }

    /** True when S3FileIO would upload a small file as a PUT with no options of its own. */
    static boolean plainPuts(S3FileIOProperties s3) {
        return S3FileIOProperties.SSE_TYPE_NONE.equalsIgnoreCase(s3.sseType())
                && s3.acl() == null
                && s3.writeTags().isEmpty()
                && s3.writeStorageClass() == null
                && !s3.isChecksumEnabled()
                && s3.bucketToAccessPointMapping().isEmpty();
    }

    /** Whether this FileIO's files are uploaded from memory (false: each goes through S3FileIO's stream). */
    public boolean uploadsFromMemory() {
        return plainPuts;
    }

    /**
     * Refuses a location with an empty path segment ({@link ObjectPaths}): every file the pipeline
     * writes to a table goes through here, so a writer that builds such a location fails at once,
     * naming it, instead of leaving a file some readers cannot find.
     */
    @Override
    public OutputFile newOutputFile(String path) {
        if (ObjectPaths.hasEmptySegment(path)) {
            throw new IllegalArgumentException("Refusing to write " + path + ": its path has an empty segment"
                    + " ('//'), which readers that normalise paths spell without it, so they would not find the"
                    + " file. Check the table location and the catalog's warehouse setting for a doubled '/'.");
        }
        OutputFile own = super.newOutputFile(path);
        ObjectKey key = plainPuts ? ObjectKey.of(path) : null;
        return key == null ? own : new BufferedOutputFile(own, key);
    }

    /** An object's bucket and key, from an s3://, s3a:// or s3n:// location; null for any other. */
    record ObjectKey(String bucket, String key) {
        static ObjectKey of(String location) {
            int scheme = location.indexOf("://");
            String name = scheme < 0 ? "" : location.substring(0, scheme);
            if (!name.equals("s3") && !name.equals("s3a") && !name.equals("s3n")) {
                return null;
            }
            int slash = location.indexOf('/', scheme + 3);
            if (slash <= scheme + 3 || slash == location.length() - 1) {
                return null; // no bucket or no key: left to S3FileIO, which names the problem
            }
            return new ObjectKey(location.substring(scheme + 3, slash), location.substring(slash + 1));
        }
    }

    /**
     * S3FileIO's output file with a buffering stream. It keeps S3FileIO's file for what the stream
     * does not change: the existence check, reading the file back, native encryption parameters, and
     * the stream a file too large for memory is handed to.
     */
    private final class BufferedOutputFile implements OutputFile, NativelyEncryptedFile {
        private final OutputFile own;
        private final ObjectKey key;

        BufferedOutputFile(OutputFile own, ObjectKey key) {
            this.own = own;
            this.key = key;
        }

        @Override
        public PositionOutputStream create() {
            if (own.toInputFile().exists()) {
                throw new AlreadyExistsException("Location already exists: %s", own.location());
            }
            return createOrOverwrite();
        }

        @Override
        public PositionOutputStream createOrOverwrite() {
            return new BufferedStream(this);
        }

        @Override
        public String location() {
            return own.location();
        }

        @Override
        public InputFile toInputFile() {
            return own.toInputFile();
        }

        @Override
        public NativeFileCryptoParameters nativeCryptoParameters() {
            return ((NativelyEncryptedFile) own).nativeCryptoParameters();
        }

        @Override
        public void setNativeCryptoParameters(NativeFileCryptoParameters parameters) {
            ((NativelyEncryptedFile) own).setNativeCryptoParameters(parameters);
        }
    }

    /** Bytes held in memory until close (one PUT), or handed to S3FileIO's stream past the limit. */
    private final class BufferedStream extends PositionOutputStream {
        private final BufferedOutputFile file;
        private UnsynchronizedByteArrayOutputStream held = UnsynchronizedByteArrayOutputStream.builder()
                .setBufferSize(8 << 10)
                .get();
        private PositionOutputStream handedOver;
        private long pos;
        private boolean closed;

        BufferedStream(BufferedOutputFile file) {
            this.file = file;
        }

        @Override
        public long getPos() {
            return pos;
        }

        @Override
        public void write(int b) throws IOException {
            target(1).write(b);
            pos++;
        }

        @Override
        public void write(byte[] bytes, int offset, int length) throws IOException {
            target(length).write(bytes, offset, length);
            pos += length;
        }

        /** Where the next {@code length} bytes go: memory, or S3FileIO's stream once they would pass the limit. */
        private OutputStream target(int length) throws IOException {
            if (closed) {
                throw new IOException("stream to " + file.location() + " is closed");
            }
            if (handedOver == null && held.size() + (long) length > memoryLimit) {
                handedOver = file.own.createOrOverwrite();
                held.writeTo(handedOver);
                held = null;
            }
            return handedOver != null ? handedOver : held;
        }

        @Override
        public void flush() throws IOException {
            if (handedOver != null) {
                handedOver.flush();
            }
        }

        @Override
        public void close() throws IOException {
            if (closed) {
                return;
            }
            closed = true;
            if (handedOver != null) {
                handedOver.close();
                return;
            }
            UnsynchronizedByteArrayOutputStream bytes = held;
            held = null;
            // A new stream over the same buffers for each attempt, so the client's retries resend it all.
            client(file.location())
                    .putObject(
                            PutObjectRequest.builder()
                                    .bucket(file.key.bucket())
                                    .key(file.key.key())
                                    .build(),
                            RequestBody.fromContentProvider(
                                    bytes::toInputStream, bytes.size(), "application/octet-stream"));
        }
    }
}
