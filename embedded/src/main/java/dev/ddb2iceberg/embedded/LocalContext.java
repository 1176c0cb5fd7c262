package dev.ddb2iceberg.embedded;

import com.amazonaws.services.lambda.runtime.ClientContext;
import com.amazonaws.services.lambda.runtime.CognitoIdentity;
import com.amazonaws.services.lambda.runtime.Context;
import com.amazonaws.services.lambda.runtime.LambdaLogger;
import java.nio.charset.StandardCharsets;
import java.util.UUID;

/** The Lambda context of a local or test invocation: names, a request id, and a logger to stderr. */
public final class LocalContext implements Context {
    private final String functionName;
    private final int memoryMb;
    private final long deadline;
    private final String requestId = UUID.randomUUID().toString();

    public LocalContext(String functionName, int memoryMb, int timeoutSeconds) {
        this.functionName = functionName;
        this.memoryMb = memoryMb;
        this.deadline = System.currentTimeMillis() + timeoutSeconds * 1000L;
    }

    @Override
    public String getAwsRequestId() {
        return requestId;
    }

    @Override
    public String getLogGroupName() {
        return "/aws/lambda/" + functionName;
    }

    @Override
    public String getLogStreamName() {
        return "local";
    }

    @Override
    public String getFunctionName() {
        return functionName;
    }

    @Override
    public String getFunctionVersion() {
        return "$LATEST";
    }

    @Override
    public String getInvokedFunctionArn() {
        return "arn:aws:lambda:us-east-1:000000000000:function:" + functionName;
    }

    @Override
    public CognitoIdentity getIdentity() {
        return null;
    }

    @Override
    public ClientContext getClientContext() {
        return null;
    }

    @Override
    public int getRemainingTimeInMillis() {
        return (int) Math.max(0, deadline - System.currentTimeMillis());
    }

    @Override
    public int getMemoryLimitInMB() {
        return memoryMb;
    }

    @Override
    public LambdaLogger getLogger() {
        return new LambdaLogger() {
            @Override
            public void log(String message) {
                System.err.print(message);
            }

            @Override
            public void log(byte[] message) {
                System.err.print(new String(message, StandardCharsets.UTF_8));
            }
        };
    }
}
