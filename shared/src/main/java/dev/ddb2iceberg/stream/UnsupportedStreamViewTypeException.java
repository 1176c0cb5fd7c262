package dev.ddb2iceberg.stream;

/**
 * The table's stream does not carry new images, so the item's state after a change cannot be
 * known. This is a setting of the source table, not of one record: nothing can be staged until it
 * is changed.
 */
public class UnsupportedStreamViewTypeException extends IllegalStateException {
    public UnsupportedStreamViewTypeException(String viewType) {
        super("The DynamoDB stream has StreamViewType " + viewType
                + ", which carries no new item image. Enable the stream with StreamViewType NEW_IMAGE or"
                + " NEW_AND_OLD_IMAGES (aws dynamodb update-table --stream-specification"
                + " StreamEnabled=true,StreamViewType=NEW_AND_OLD_IMAGES) and point the stager at the new stream.");
    }
}
