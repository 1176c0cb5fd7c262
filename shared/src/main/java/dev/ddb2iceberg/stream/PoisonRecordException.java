package dev.ddb2iceberg.stream;

/** A stream record that can never be decoded, however often it is retried. */
public class PoisonRecordException extends Exception {
    public PoisonRecordException(String reason) {
        super(reason);
    }
}
