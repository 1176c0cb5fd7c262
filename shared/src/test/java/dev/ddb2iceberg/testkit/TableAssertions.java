package dev.ddb2iceberg.testkit;

import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.staging.BatchStager;
import dev.ddb2iceberg.staging.StagingStore;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.Table;

/**
 * What most tests do between merges: stage a stream batch as the stager would, and check that a
 * table holds exactly what its model says, read back as a query engine would. Failures are
 * AssertionErrors that say what differed (the test kit does not depend on a test framework).
 */
public final class TableAssertions {
    private TableAssertions() {}

    /** Stages {@code changes} as the stager would; fails unless every one was staged. */
    public static void stage(StagingStore store, List<Change> changes) {
        BatchStager.Result r =
                new BatchStager(store).stage(StreamEvents.batch(changes).getRecords());
        if (!r.complete()) {
            throw new AssertionError("staging failed at " + r.firstFailedSequenceNumber() + ": " + r.failure());
        }
    }

    /** Fails, with the difference, unless {@code table} holds exactly the items of {@code model}. */
    public static void assertHolds(Table table, ExpectedTable model) {
        Map<Map<String, DdbValue>, Map<String, DdbValue>> expected = model.items();
        var actual = TableItems.read(table);
        if (!expected.equals(actual)) {
            throw new AssertionError("the table differs from its model (" + expected.size() + " items expected, "
                    + actual.size() + " rows read): " + ExpectedTable.diff(expected, actual));
        }
    }
}
