package dev.ddb2iceberg.embedded;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.S3Exception;

@ExtendWith(S3ServerExtension.class)
class FaultInjectionTest {
    @Test
    void putsFailFromTheKthRequestOnAndRecoverWhenCleared(EmbeddedS3Server server) {
        String bucket = S3ServerExtension.newBucket(server);
        try (S3Client s3 = server.newClient()) {
            server.faults().failFrom(FaultInjectingBlobStore.Operation.PUT, 2);
            s3.putObject(b -> b.bucket(bucket).key("a"), RequestBody.fromString("1"));
            assertEquals(1, server.faults().seen(), "requests seen after the first put");
            S3Exception e = assertThrows(
                    S3Exception.class, () -> s3.putObject(b -> b.bucket(bucket).key("b"), RequestBody.fromString("2")));
            assertEquals(503, e.statusCode());
            server.faults().clear();
            s3.putObject(b -> b.bucket(bucket).key("b"), RequestBody.fromString("2"));
            assertEquals(
                    "2", s3.getObjectAsBytes(b -> b.bucket(bucket).key("b")).asUtf8String());
        }
    }
}
