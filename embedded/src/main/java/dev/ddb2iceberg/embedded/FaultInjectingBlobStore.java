package dev.ddb2iceberg.embedded;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Predicate;
import org.gaul.s3proxy.blobstore.BlobStore;
import org.gaul.s3proxy.blobstore.ForwardingBlobStore;
import org.gaul.s3proxy.blobstore.S3Exceptions;
import software.amazon.awssdk.core.ResponseInputStream;
import software.amazon.awssdk.services.s3.model.DeleteObjectRequest;
import software.amazon.awssdk.services.s3.model.DeleteObjectResponse;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.HeadObjectRequest;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Request;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Response;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;
import software.amazon.awssdk.services.s3.model.PutObjectResponse;

/**
 * Makes the embedded server fail chosen requests the way S3 can (an HTTP 503 to the client), so
 * tests see real SDK exceptions, real retries and real partial failures.
 *
 * <p>A rule fails every request for the n-th and later distinct objects it sees: an outage that
 * begins at a known object and lasts until {@link #clear()}. A retry of a request counts as the
 * same object, so the SDK's own retries get the same answer and tests stay deterministic.
 */
public final class FaultInjectingBlobStore extends ForwardingBlobStore {
    public enum Operation {
        PUT,
        GET,
        LIST,
        DELETE,
        /** HEAD of an object: whether it exists, and its length. */
        HEAD
    }

    private volatile Rule rule;
    private final Map<Operation, LongAdder> counts = new EnumMap<>(Operation.class);

    {
        for (Operation op : Operation.values()) {
            counts.put(op, new LongAdder());
        }
    }

    FaultInjectingBlobStore(BlobStore delegate) {
        super(delegate);
    }

    private record Rule(
            Operation operation, Predicate<String> keyMatches, int firstFailing, Map<String, Integer> seen) {
        /** The 1-based order in which this key was first seen. */
        synchronized int order(String key) {
            return seen.computeIfAbsent(key, k -> seen.size() + 1);
        }
    }

    /** Fails {@code operation} on the {@code n}-th (1-based) and every later distinct key that matches. */
    public void failFrom(Operation operation, int n, Predicate<String> keyMatches) {
        if (n < 1) {
            throw new IllegalArgumentException("n counts from 1");
        }
        rule = new Rule(operation, keyMatches, n, new HashMap<>());
    }

    public void failFrom(Operation operation, int n) {
        failFrom(operation, n, key -> true);
    }

    /** How many distinct objects the current rule has seen (failed or not). */
    public int seen() {
        Rule r = rule;
        if (r == null) {
            return 0;
        }
        synchronized (r) {
            return r.seen().size();
        }
    }

    public void clear() {
        rule = null;
    }

    /** Requests of each kind served or failed since the server started: what a run would be billed for. */
    public long requests(Operation op) {
        return counts.get(op).sum();
    }

    private void check(Operation op, String key) {
        counts.get(op).increment();
        Rule r = rule;
        if (r != null && r.operation() == op && r.keyMatches().test(key) && r.order(key) >= r.firstFailing()) {
            throw S3Exceptions.fromStatusCode(503); // "Service Unavailable", as S3 answers when it sheds load
        }
    }

    @Override
    public PutObjectResponse putBlob(PutObjectRequest request, InputStream content) {
        try {
            check(Operation.PUT, request.key());
        } catch (RuntimeException fault) {
            drain(content); // read the body as S3 would, or the client's kept-alive connection is left mid-request
            throw fault;
        }
        return super.putBlob(request, content);
    }

    private static void drain(InputStream content) {
        try {
            content.transferTo(OutputStream.nullOutputStream());
        } catch (IOException ignored) {
            // the fault is what the client sees either way
        }
    }

    @Override
    public ResponseInputStream<GetObjectResponse> getBlob(GetObjectRequest request) {
        check(Operation.GET, request.key());
        return super.getBlob(request);
    }

    @Override
    public HeadObjectResponse blobMetadata(HeadObjectRequest request) {
        check(Operation.HEAD, request.key());
        return super.blobMetadata(request);
    }

    @Override
    public ListObjectsV2Response list(ListObjectsV2Request request) {
        check(Operation.LIST, request.prefix() == null ? "" : request.prefix());
        return super.list(request);
    }

    @Override
    public DeleteObjectResponse removeBlob(DeleteObjectRequest request) {
        check(Operation.DELETE, request.key());
        return super.removeBlob(request);
    }
}
