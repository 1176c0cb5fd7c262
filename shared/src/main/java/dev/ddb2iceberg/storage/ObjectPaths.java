package dev.ddb2iceberg.storage;

/**
 * Rules for the object locations the pipeline writes. S3 keeps {@code a//b} and {@code a/b} as two
 * keys, while Hadoop's {@code Path} (HadoopFileIO, S3A) and some S3-compatible stores collapse the
 * empty segment: a file written under {@code a//b} goes missing for those readers, and orphan
 * removal that lists such a store once deleted a live delete file. So no location has one.
 */
public final class ObjectPaths {
    private ObjectPaths() {}

    /** True when the location's path (after {@code scheme://bucket}) has an empty segment ({@code //}). */
    public static boolean hasEmptySegment(String location) {
        int scheme = location.indexOf("://");
        int from = scheme < 0 ? 0 : scheme + 3;
        return location.indexOf("//", from) >= 0;
    }
}
