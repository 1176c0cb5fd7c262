package dev.ddb2iceberg.stager;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.amazonaws.services.lambda.runtime.serialization.events.LambdaEventSerializers;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.PackagedFunction;
import dev.ddb2iceberg.embedded.ProjectFiles;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.testkit.LocalStack;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** The deployable jar itself, in a fresh JVM with its settings in real environment variables. */
@ExtendWith(S3ServerExtension.class)
class StagerPackageIT {
    @TempDir
    Path dir;

    @Test
    void theLambdaJarStagesTheSampleBatch(EmbeddedS3Server server) throws Exception {
        String bucket = S3ServerExtension.newBucket(server);
        var env = new LocalStack(server, bucket, dir).environment("orders");
        PackagedFunction.Result r = PackagedFunction.invoke(
                Path.of("target/stager-lambda.jar"),
                StagerHandler.class.getName(),
                env,
                ProjectFiles.event("stager-batch.json"),
                LambdaEventSerializers.class);
        assertEquals(0, r.exit(), r.log());
        assertEquals("{\"batchItemFailures\":[]}", r.response().strip(), r.log());
        try (var s3 = server.newClient()) {
            assertEquals(
                    1,
                    s3.listObjectsV2(b -> b.bucket(bucket).prefix("staging/"))
                            .contents()
                            .size());
        }
    }
}
