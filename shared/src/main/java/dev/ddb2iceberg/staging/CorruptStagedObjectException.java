package dev.ddb2iceberg.staging;

/** A staged object that cannot be read: not ours, of an unknown format version, truncated or damaged. */
public class CorruptStagedObjectException extends RuntimeException {
    public CorruptStagedObjectException(String message) {
        super(message);
    }

    public CorruptStagedObjectException(String message, Throwable cause) {
        super(message, cause);
    }
}
