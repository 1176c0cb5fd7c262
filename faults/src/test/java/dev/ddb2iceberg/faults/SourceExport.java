package dev.ddb2iceberg.faults;

import dev.ddb2iceberg.commit.ExportProgress;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.export.ExportLocation;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.model.DdbValue;
import dev.ddb2iceberg.model.Operation;
import dev.ddb2iceberg.testkit.DynamoDbExportFiles;
import dev.ddb2iceberg.testkit.ExpectedTable;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.Table;

/**
 * The DynamoDB export a seed with an initial load starts from: items written before the stream
 * began, plus the stream's first changes (in the export and in the stream: the overlap the load
 * must absorb), as export files in S3; and which of its items a table's load cursor says are in.
 */
final class SourceExport {
    private static final int FILES = 3;
    private final boolean enabled;
    /** Items only the export has (written before the stream), as changes older than any other. */
    private final List<Change> history = new ArrayList<>();
    /** The export's items in the order the export files hold them, as the loader turns them into changes. */
    private final List<Change> exported = new ArrayList<>();

    private String location;

    SourceExport(boolean enabled) {
        this.enabled = enabled;
    }

    /** Items from before the stream, some early stream changes, and an export of the table as it then is. */
    void write(
            FaultPlan plan, SourceTable source, EmbeddedS3Server server, String bucket, Trail trail, FaultStats stats) {
        for (int i = 0; i < 40; i++) {
            if (plan.itemBeforeTheStream()) {
                Map<String, DdbValue> image = new LinkedHashMap<>(source.key(i));
                image.put("status", new DdbValue.S("legacy"));
                image.put("total", new DdbValue.N(Integer.toString(plan.totalBeforeTheStream())));
                history.add(new Change(source.key(i), Operation.INSERT, image, "1", 0, false));
            }
        }
        source.change(plan.changesInTheExport()); // in the stream as well as in the export: overlap
        ExpectedTable atExport = new ExpectedTable();
        atExport.apply(history);
        atExport.apply(source.changes());
        Instant time = Instant.now();
        List<Map<String, DdbValue>> items = new ArrayList<>(atExport.items().values());
        for (Map<String, DdbValue> item : items) {
            Map<String, DdbValue> key = new LinkedHashMap<>();
            source.key(0).keySet().forEach(k -> key.put(k, item.get(k)));
            exported.add(new Change(
                    key,
                    Operation.INSERT,
                    item,
                    Long.toString(time.toEpochMilli() * 1000),
                    time.toEpochMilli(),
                    false));
        }
        location = new DynamoDbExportFiles(server.newClient(), bucket, "exports/")
                .writeFull("0176446080000" + plan.seed() % 10 + "-seed" + plan.seed(), time, items, FILES);
        trail.add("export of " + items.size() + " items (" + history.size() + " from before the stream)");
        stats.count("seeds with an initial load");
    }

    /** Where the export is, once written. */
    String location() {
        return location;
    }

    /** The items from before the stream (none without an export). */
    List<Change> history() {
        return history;
    }

    /** The export items the table's load cursor says are in: whole files before it, lines before it in its file. */
    List<Change> loadedBy(Table table) {
        if (!enabled) {
            return List.of();
        }
        ExportProgress.Load load =
                ExportProgress.read(table).get(ExportLocation.parse(location).exportId());
        if (load == null) {
            return List.of();
        }
        List<Change> loaded = new ArrayList<>();
        for (int i = 0; i < exported.size(); i++) { // DynamoDbExportFiles puts item i in file i % files, line i / files
            int file = i % FILES;
            if (file < load.file() || (file == load.file() && i / FILES < load.line())) {
                loaded.add(exported.get(i));
            }
        }
        return loaded;
    }
}
