package dev.ddb2iceberg.staging;

import dev.ddb2iceberg.model.SequenceNumbers;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The name of a staged object: {@code <prefix><first>-<last>.ddbstage}, where first and last are
 * the batch's first and last sequence numbers padded to 40 digits. A retried batch therefore
 * overwrites its own object, and listing the prefix returns objects oldest first.
 */
public record StagedObjectName(String key, String firstSequence, String lastSequence) {
    public static final String SUFFIX = ".ddbstage";
    private static final Pattern NAME = Pattern.compile("(\\d{40})-(\\d{40})" + Pattern.quote(SUFFIX));

    public static StagedObjectName of(String prefix, String firstSequence, String lastSequence) {
        String first = SequenceNumbers.pad(firstSequence);
        String last = SequenceNumbers.pad(lastSequence);
        return new StagedObjectName(prefix + first + "-" + last + SUFFIX, first, last);
    }

    /** Parses a key listed under {@code prefix}; null if it is not a staged object's name. */
    public static StagedObjectName parse(String prefix, String key) {
        if (!key.startsWith(prefix)) {
            return null;
        }
        Matcher m = NAME.matcher(key.substring(prefix.length()));
        return m.matches() ? new StagedObjectName(key, m.group(1), m.group(2)) : null;
    }
}
