package dev.ddb2iceberg.load;

/**
 * What one export-load run did, and where the load stands.
 *
 * @param exportId the export
 * @param type FULL or INCREMENTAL
 * @param exportTime the export's point in time (ISO-8601)
 * @param itemsInExport items the manifest lists
 * @param itemsLoaded items read into the table so far, over all runs
 * @param itemsThisRun items this run read
 * @param itemsWritten rows this run wrote: items inserted, or updated over an older row
 * @param skipped items this run skipped because the table holds a newer change of the item (from
 *     the stream) or removed it since
 * @param files data files in the export
 * @param filesDone data files fully loaded
 * @param snapshots commits this run made (one per chunk)
 * @param done the whole export is in the table; loading it again does nothing
 * @param note what to do next, in words
 */
public record ExportLoadResult(
        String exportId,
        String type,
        String exportTime,
        long itemsInExport,
        long itemsLoaded,
        long itemsThisRun,
        long itemsWritten,
        long skipped,
        int files,
        int filesDone,
        int snapshots,
        boolean done,
        String note,
        long millis) {}
