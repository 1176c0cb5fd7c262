package dev.ddb2iceberg.load.parallel;

import dev.ddb2iceberg.index.KeyIndex;
import dev.ddb2iceberg.table.DerivedFiles;
import dev.ddb2iceberg.table.StepFiles;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.apache.iceberg.Table;
import org.apache.iceberg.io.FileInfo;
import org.apache.iceberg.io.SupportsBulkOperations;
import org.apache.iceberg.io.SupportsPrefixOperations;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The files a parallel load keeps between its steps, in its folder beside the table's derived
 * files: the plan (JSON), each worker's record (Java serialization: Iceberg's data files are
 * Serializable) and each index group's; and the cleanup of everything a load leaves that its
 * commit does not reference.
 */
final class LoadFiles {
    private static final Logger LOG = LoggerFactory.getLogger(LoadFiles.class);

    private LoadFiles() {}

    /** The run id a load's commit carries, and the prefix of its workers' file names. */
    static String runIdOf(String loadId) {
        return "load-" + loadId;
    }

    static String folder(Table table, String loadId) {
        return DerivedFiles.location(table) + "export-loads/" + loadId + "/";
    }

    static ParallelExportLoad.Plan readPlan(Table table, String loadId) {
        return StepFiles.readJson(
                table,
                folder(table, loadId) + "plan.json",
                ParallelExportLoad.Plan.class,
                "the load's plan is missing");
    }

    /**
     * Deletes the load's folder, the workers' index entries, and the data files and index parts of
     * the load that {@code keep} does not name (all of them when aborting). The load's files are found
     * by the load id in their names.
     */
    static int cleanUp(Table table, String loadId, Set<String> keep) {
        List<String> doomed = new ArrayList<>();
        try {
            if (!(table.io() instanceof SupportsPrefixOperations io)) {
                LOG.warn(
                        "The table's file IO cannot list files: files of failed attempts of load {} stay until orphan cleanup",
                        loadId);
                return 0;
            }
            String data = table.location().endsWith("/") ? table.location() + "data/" : table.location() + "/data/";
            // Each place on its own: an S3 table bucket may refuse listing its data while the derived
            // files' bucket allows it.
            for (String prefix : List.of(
                    data,
                    KeyIndex.fileLocation(table, "load-" + loadId + "-"),
                    folder(table, loadId),
                    KeyIndex.fileLocation(table, "load-" + loadId + "/"))) {
                try {
                    for (FileInfo f : io.listPrefix(prefix)) {
                        boolean ours = !prefix.equals(data) || f.location().contains(runIdOf(loadId) + "-");
                        if (ours && !keep.contains(f.location())) {
                            doomed.add(f.location());
                        }
                    }
                } catch (RuntimeException e) {
                    LOG.warn(
                            "Could not list {} for the files of load {} ({}); orphan cleanup takes any left",
                            prefix,
                            loadId,
                            e.toString());
                }
            }
            if (io instanceof SupportsBulkOperations bulk) {
                bulk.deleteFiles(doomed); // S3FileIO: a thousand keys a request
            } else {
                doomed.forEach(io::deleteFile);
            }
        } catch (RuntimeException e) {
            LOG.warn(
                    "Could not delete all files of load {} that are not in the table ({}); orphan cleanup takes the rest",
                    loadId,
                    e.toString());
        }
        return doomed.size();
    }
}
