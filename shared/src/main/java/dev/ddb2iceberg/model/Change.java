package dev.ddb2iceberg.model;

import java.util.Map;
import java.util.Objects;

/**
 * One decoded DynamoDB Streams record: the change made to one item.
 *
 * @param keys the item's key attributes (partition key, and sort key if the table has one)
 * @param operation insert, modify or remove
 * @param newImage the whole item after the change; null for a remove
 * @param sequenceNumber the stream sequence number (decimal text; compare with {@link SequenceNumbers})
 * @param approximateCreationMillis when DynamoDB wrote the change, epoch milliseconds
 * @param ttlExpiry true when DynamoDB's TTL process, not a user, removed the item
 */
public record Change(
        Map<String, DdbValue> keys,
        Operation operation,
        Map<String, DdbValue> newImage,
        String sequenceNumber,
        long approximateCreationMillis,
        boolean ttlExpiry) {

    public Change {
        Objects.requireNonNull(operation, "operation");
        if (keys == null || keys.isEmpty()) {
            throw new IllegalArgumentException("a change needs its item's key attributes");
        }
        keys = ItemMap.copyOf(keys); // as is when the caller built an item map for this change
        SequenceNumbers.check(sequenceNumber);
        if (operation.isUpsert() && newImage == null) {
            throw new IllegalArgumentException(operation + " change " + sequenceNumber + " has no new image");
        }
        if (!operation.isUpsert() && newImage != null) {
            throw new IllegalArgumentException("REMOVE change " + sequenceNumber + " must not carry a new image");
        }
        newImage = newImage == null ? null : ItemMap.copyOf(newImage);
        if (ttlExpiry && operation != Operation.REMOVE) {
            throw new IllegalArgumentException("only a REMOVE can be a TTL expiry");
        }
    }
}
