package dev.ddb2iceberg.model;

/** What a stream record did to its item; the names are DynamoDB's {@code eventName}s. */
public enum Operation {
    INSERT,
    MODIFY,
    REMOVE;

    /** True when the item exists after this change (its new image is the item's whole state). */
    public boolean isUpsert() {
        return this != REMOVE;
    }
}
