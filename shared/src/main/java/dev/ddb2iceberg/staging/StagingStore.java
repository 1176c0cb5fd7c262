package dev.ddb2iceberg.staging;

import dev.ddb2iceberg.config.StagingSettings;
import dev.ddb2iceberg.model.Change;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import software.amazon.awssdk.core.ResponseInputStream;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.DeleteObjectsResponse;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Request;
import software.amazon.awssdk.services.s3.model.ObjectIdentifier;
import software.amazon.awssdk.services.s3.model.S3Object;

/** The staging area in S3: staged change batches under one prefix, poison records under another. */
public final class StagingStore {
    private final S3Client s3;
    private final String bucket;
    private final String stagingPrefix;
    private final String quarantinePrefix;

    public StagingStore(S3Client s3, StagingSettings settings) {
        this.s3 = s3;
        this.bucket = settings.bucket();
        this.stagingPrefix = settings.stagingPrefix();
        this.quarantinePrefix = settings.quarantinePrefix();
    }

    public String bucket() {
        return bucket;
    }

    public String stagingPrefix() {
        return stagingPrefix;
    }

    public String quarantinePrefix() {
        return quarantinePrefix;
    }

    /** Writes one batch as one object named by its first and last sequence numbers; returns the name. */
    public StagedObjectName putBatch(List<Change> changes) {
        if (changes.isEmpty()) {
            throw new IllegalArgumentException("an empty batch is not staged");
        }
        StagedObjectName name = StagedObjectName.of(
                stagingPrefix,
                changes.get(0).sequenceNumber(),
                changes.get(changes.size() - 1).sequenceNumber());
        byte[] body = StagedFormat.write(changes);
        s3.putObject(
                b -> b.bucket(bucket).key(name.key()).contentType("application/vnd.ddb2iceberg.stage"),
                RequestBody.fromBytes(body));
        return name;
    }

    /** Stores a record that can never be decoded, as JSON, under the quarantine prefix. */
    public void putQuarantined(String relativeKey, byte[] json) {
        s3.putObject(
                b -> b.bucket(bucket).key(quarantinePrefix + relativeKey).contentType("application/json"),
                RequestBody.fromBytes(json));
    }

    /** Staged objects, oldest first (names sort by first sequence number). */
    public List<StagedObject> list() {
        List<StagedObject> out = new ArrayList<>();
        ListObjectsV2Request request = ListObjectsV2Request.builder()
                .bucket(bucket)
                .prefix(stagingPrefix)
                .build();
        for (S3Object o : s3.listObjectsV2Paginator(request).contents()) {
            StagedObjectName name = StagedObjectName.parse(stagingPrefix, o.key());
            if (name != null) {
                out.add(new StagedObject(name, o.size(), o.lastModified()));
            }
        }
        out.sort(Comparator.comparing(o -> o.name().key()));
        return out;
    }

    /**
     * Whether anything waits under the staging prefix: one LIST of a few keys, the cheap question a
     * continuous merger asks between merges (an object already applied but not yet deleted counts;
     * the next merge deletes it).
     */
    public boolean anyStaged() {
        return s3.listObjectsV2(b -> b.bucket(bucket).prefix(stagingPrefix).maxKeys(20)).contents().stream()
                .anyMatch(o -> StagedObjectName.parse(stagingPrefix, o.key()) != null);
    }

    public List<Change> read(StagedObjectName name) {
        return StagedFormat.read(bytesOf(name.key()), name.key());
    }

    /**
     * An object's bytes, read into one array of its length. The SDK's getObjectAsBytes grows a
     * buffer by doubling and copies it twice: about 14 MB allocated for a 3 MB object, 110 MB of
     * what a merge of 100,000 changes allocates (30 MB staged), all of it paid for by the collector.
     * A read that ends short of the length S3 gave is an I/O error (the run fails and the next one
     * reads the object again), never a damaged object to quarantine.
     */
    private byte[] bytesOf(String key) {
        try (ResponseInputStream<GetObjectResponse> in =
                s3.getObject(b -> b.bucket(bucket).key(key))) {
            Long length = in.response().contentLength();
            if (length == null) {
                return in.readAllBytes();
            }
            if (length > Integer.MAX_VALUE - 8) {
                throw new IllegalStateException("staged object " + key + " is " + length
                        + " bytes, more than one array holds; the stager writes objects far smaller");
            }
            // Into the array itself: readNBytes(int) would read 8 KB chunks and copy them over.
            byte[] bytes = new byte[(int) (long) length];
            int read = in.readNBytes(bytes, 0, bytes.length);
            if (read != bytes.length) {
                throw new IOException("the body ended after " + read + " of its " + length + " bytes");
            }
            // Reading on to the end lets the SDK check the object's checksum and reuse the connection.
            if (in.read() != -1) {
                throw new IOException("the body runs past the " + length + " bytes S3 gave as its length");
            }
            return bytes;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read staged object " + key + ": " + e.getMessage(), e);
        }
    }

    /**
     * Deletes staged objects in batches of up to 1,000 (S3's limit per request); returns the keys
     * that could not be deleted. Deleting an object that is already gone succeeds.
     */
    public Set<String> delete(Collection<StagedObjectName> names) {
        Set<String> failed = new LinkedHashSet<>();
        List<StagedObjectName> all = new ArrayList<>(names);
        for (int i = 0; i < all.size(); i += 1000) {
            List<ObjectIdentifier> ids = all.subList(i, Math.min(all.size(), i + 1000)).stream()
                    .map(n -> ObjectIdentifier.builder().key(n.key()).build())
                    .toList();
            try {
                DeleteObjectsResponse response = s3.deleteObjects(
                        b -> b.bucket(bucket).delete(d -> d.objects(ids).quiet(true)));
                response.errors().forEach(e -> failed.add(e.key()));
            } catch (SdkException e) {
                ids.forEach(id -> failed.add(id.key()));
            }
        }
        return failed;
    }

    /**
     * Moves a staged object that cannot be read to the quarantine, with the reason beside it, so
     * it stops blocking the merge and stays available to a person.
     */
    public void quarantineStaged(StagedObjectName name, String reason) {
        String base = quarantinePrefix + "staged/" + name.key().substring(stagingPrefix.length());
        s3.copyObject(b -> b.sourceBucket(bucket)
                .sourceKey(name.key())
                .destinationBucket(bucket)
                .destinationKey(base));
        s3.putObject(
                b -> b.bucket(bucket).key(base + ".reason.txt").contentType("text/plain; charset=utf-8"),
                RequestBody.fromString(reason + "\n"));
        s3.deleteObject(b -> b.bucket(bucket).key(name.key()));
    }
}
