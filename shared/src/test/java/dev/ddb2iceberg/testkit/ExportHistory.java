package dev.ddb2iceberg.testkit;

import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.Operation;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A source table's history around a DynamoDB export, for the export-load tests: 400 items older
 * than the stream (only the export has them), 300 changes before the export (still in the stream),
 * and 300 changes plus 50 new items after it.
 *
 * @param exported the items the export holds
 */
public record ExportHistory(List<Change> before, List<Change> after, List<Map<String, DdbValue>> exported) {

    public static ExportHistory of(long seed) {
        KeyedWorkload w = new KeyedWorkload(seed, 400);
        List<Change> older = new ArrayList<>(); // before the stream's 24 hours: only the export has them
        for (int i = 0; i < 400; i++) {
            older.add(w.upsert(i, Operation.INSERT));
        }
        List<Change> before = w.next(300);
        List<Change> after = new ArrayList<>(w.next(300)); // updates and removes of exported items
        for (int i = 400; i < 450; i++) {
            after.add(w.upsert(i, Operation.INSERT)); // items created after the export
        }
        ExpectedTable atExport = new ExpectedTable();
        atExport.apply(older);
        atExport.apply(before);
        return new ExportHistory(before, after, new ArrayList<>(atExport.items().values()));
    }
}
