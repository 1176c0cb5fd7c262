package dev.ddb2iceberg.local;

/** A mistake in how the tool was called: shown as one line, with a non-zero exit code. */
final class UserError extends RuntimeException {
    UserError(String message) {
        super(message);
    }
}
