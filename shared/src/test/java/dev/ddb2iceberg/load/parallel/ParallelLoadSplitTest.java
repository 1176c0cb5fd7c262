package dev.ddb2iceberg.load.parallel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.export.ExportManifest;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** How the parallel load splits an export's data files into work items (no I/O: counts only). */
class ParallelLoadSplitTest {

    private static List<ExportManifest.DataFile> files(int n, long itemsEach) {
        List<ExportManifest.DataFile> files = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            files.add(new ExportManifest.DataFile("data/" + i + ".json.gz", itemsEach, null));
        }
        return files;
    }

    /** Every file in exactly one work item, in order, and the items' counts add up. */
    private static void assertCovers(List<ExportManifest.DataFile> files, List<ParallelExportLoad.Work> work) {
        int next = 0;
        long items = 0;
        for (int i = 0; i < work.size(); i++) {
            ParallelExportLoad.Work w = work.get(i);
            int at = i;
            assertEquals(i, w.work(), "work items are numbered in order");
            assertEquals(next, w.from(), () -> "work item " + at + " starts where the previous one ended: " + work);
            assertTrue(w.to() > w.from(), () -> "work item " + at + " has a file: " + w);
            next = w.to();
            items += w.items();
        }
        assertEquals(files.size(), next, "every file is in a work item");
        assertEquals(
                files.stream().mapToLong(ExportManifest.DataFile::itemCount).sum(), items);
    }

    @Test
    void aSmallExportGivesOneWorkItemPerWorkerOfAboutEqualSize() {
        var files = files(12, 1_000);
        var work = ParallelExportLoad.split(files, 4);
        assertCovers(files, work);
        assertEquals(4, work.size(), work.toString());
        work.forEach(w -> assertEquals(3_000, w.items(), work.toString()));
    }

    @Test
    void aBillionItemsAreSplitSoThatNoWorkerHasMoreThanItCanLoadInALambdasTime() {
        var files = files(2_000, 500_000); // 1B items
        var work = ParallelExportLoad.split(files, 100);
        assertCovers(files, work);
        assertTrue(work.stream().allMatch(w -> w.items() <= ParallelExportLoad.MAX_ITEMS_PER_WORK), work::toString);
        assertEquals(334, work.size(), "1B / 3M items, rounded up to whole files");
    }

    @Test
    void trailingEmptyFilesJoinTheLastWorkItemAndMoreWorkersThanFilesGetAFileEach() {
        var files = new ArrayList<>(files(3, 10));
        files.add(new ExportManifest.DataFile("data/empty.json.gz", 0, null));
        var work = ParallelExportLoad.split(files, 8);
        assertCovers(files, work);
        assertEquals(3, work.size(), work.toString());
        assertEquals(4, work.get(2).to());
    }

    @Test
    void workItemsStopAtWhatAStateMachinesStateCanCarry() {
        var files = files(10_000, 10);
        var work = ParallelExportLoad.split(files, 10_000);
        assertCovers(files, work);
        assertTrue(
                work.size() <= ParallelExportLoad.MAX_WORK_ITEMS && work.size() > 3_000, work.size() + " work items");
    }
}
