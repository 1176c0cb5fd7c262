package dev.ddb2iceberg.index;

/** A key index file that is missing, truncated or not what its manifest says: rebuild, never trust. */
public final class DamagedIndexException extends RuntimeException {
    public DamagedIndexException(String message) {
        super(message);
    }
}
