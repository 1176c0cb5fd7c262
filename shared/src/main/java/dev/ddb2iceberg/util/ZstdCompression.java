package dev.ddb2iceberg.util;

import com.github.luben.zstd.Zstd;
import com.github.luben.zstd.ZstdCompressCtx;
import com.github.luben.zstd.ZstdException;
import java.util.Arrays;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * One-shot zstd compression of a whole buffer (a key index block, a delete file's page) with pooled
 * contexts. Each call writes one standard zstd frame, its content size in the header, which any
 * zstd reader decodes (Parquet's among them).
 *
 * <p>Why not a new context, or a stream, per buffer: {@code Zstd.compress} creates and frees a
 * context on every call, and a compressing stream (what Parquet's codec makes for every page)
 * allocates and clears a workspace and buffers sized for any input, not for the small one it is
 * given. For a delete file of 500 positions that set-up was most of the file's cost and of its
 * allocation (JMH {@code writePositionDeleteFile}: 30 against 76 µs, 49 against 207 KB); in a
 * whole merge the difference is inside the noise (BENCHMARKS.md, "2026-12-05, third session").
 */
public final class ZstdCompression {
    /**
     * Contexts not in use. A context is used by one thread at a time; there are at most as many as
     * threads that ever compressed at once, each keeping the workspace of the largest buffer it met.
     */
    private static final Queue<ZstdCompressCtx> IDLE = new ConcurrentLinkedQueue<>();

    private ZstdCompression() {}

    /** The most bytes {@link #compress} may write for {@code length} bytes of input. */
    public static int bound(int length) {
        long bound = Zstd.compressBound(length);
        if (bound > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(length + " bytes are too many to compress into one array");
        }
        return (int) bound;
    }

    /**
     * Compresses {@code src[offset, offset + length)} at {@code level} into {@code dst} (at least
     * {@link #bound} bytes long) and returns the compressed length.
     */
    public static int compress(byte[] dst, byte[] src, int offset, int length, int level) {
        if (dst.length < bound(length)) {
            throw new IllegalArgumentException(dst.length + " bytes cannot hold " + length
                    + " compressed in the worst case (" + bound(length) + ")");
        }
        ZstdCompressCtx context = IDLE.poll();
        if (context == null) {
            context = new ZstdCompressCtx();
        }
        int written;
        try {
            written = context.setLevel(level).compressByteArray(dst, 0, dst.length, src, offset, length);
        } catch (ZstdException | IllegalArgumentException e) {
            context.close(); // not trusted again after an error
            throw e;
        }
        IDLE.offer(context);
        return written;
    }

    /** {@code src[offset, offset + length)} compressed at {@code level}, in an array of its own length. */
    public static byte[] compress(byte[] src, int offset, int length, int level) {
        byte[] dst = new byte[bound(length)];
        int n = compress(dst, src, offset, length, level);
        return n == dst.length ? dst : Arrays.copyOf(dst, n);
    }
}
