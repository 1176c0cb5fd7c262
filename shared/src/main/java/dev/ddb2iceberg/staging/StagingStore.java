package dev.ddb2iceberg.staging;

import dev.ddb2iceberg.model.Change;
import java.util.ArrayList;
import java.util.List;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Request;
import software.amazon.awssdk.services.s3.model.S3Object;

/** The staging area in S3: staged change batches under one prefix, poison records under another. */
public final class StagingStore {
  private final S3Client s3;
  private final String bucket;
  private final String stagingPrefix;
  private final String quarantinePrefix;

  public StagingStore(S3Client s3, String bucket, String stagingPrefix, String quarantinePrefix) {
    this.s3 = s3;
    this.bucket = bucket;
    this.stagingPrefix = stagingPrefix;
    this.quarantinePrefix = quarantinePrefix;
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
        stagingPrefix, changes.get(0).sequenceNumber(), changes.get(changes.size() - 1).sequenceNumber());
    byte[] body = StagedFormat.write(changes);
    s3.putObject(b -> b.bucket(bucket).key(name.key()).contentType("application/vnd.ddb2iceberg.stage"),
        RequestBody.fromBytes(body));
    return name;
  }

  /** Stores a record that can never be decoded, as JSON, under the quarantine prefix. */
  public void putQuarantined(String relativeKey, byte[] json) {
    s3.putObject(b -> b.bucket(bucket).key(quarantinePrefix + relativeKey).contentType("application/json"),
        RequestBody.fromBytes(json));
  }

  /** Staged objects, oldest first (names sort by first sequence number). */
  public List<StagedObjectName> list() {
    List<StagedObjectName> out = new ArrayList<>();
    ListObjectsV2Request request = ListObjectsV2Request.builder().bucket(bucket).prefix(stagingPrefix).build();
    for (S3Object o : s3.listObjectsV2Paginator(request).contents()) {
      StagedObjectName name = StagedObjectName.parse(stagingPrefix, o.key());
      if (name != null) {
        out.add(name);
      }
    }
    out.sort((a, b) -> a.key().compareTo(b.key()));
    return out;
  }

  public List<Change> read(StagedObjectName name) {
    byte[] bytes = s3.getObjectAsBytes(b -> b.bucket(bucket).key(name.key())).asByteArray();
    return StagedFormat.read(bytes, name.key());
  }
}
