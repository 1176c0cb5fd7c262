package dev.ddb2iceberg.function;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ddb2iceberg.maintenance.MaintenanceResult;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The result records are written with the fields the hand-built JSON had, and no others. */
class ResultsTest {
    private static final MaintenanceResult NOTHING =
            new MaintenanceResult(true, MaintenanceResult.Compaction.NONE, 0, 0, List.of(), 0, List.of(), 0);

    @Test
    void aMaintenanceResultIsTheTablesWithItsHistoryOrANote() throws Exception {
        String table = FunctionCall.JSON.writeValueAsString(NOTHING);
        String inner = table.substring(1, table.length() - 1);
        assertEquals(table, FunctionCall.JSON.writeValueAsString(new MaintenanceRun.Result(NOTHING, null, null)));
        assertEquals(
                "{" + inner + ",\"note\":\"n\"}",
                FunctionCall.JSON.writeValueAsString(new MaintenanceRun.Result(NOTHING, "n", null)));
        assertEquals(
                "{" + inner + ",\"history\":" + table + "}",
                FunctionCall.JSON.writeValueAsString(new MaintenanceRun.Result(NOTHING, null, NOTHING)));
    }

    @Test
    void anExportLoadsPlanAndStepsKeepTheirFieldNames() throws Exception {
        assertEquals(
                "{\"loadId\":\"l\",\"exportId\":\"e\",\"items\":3,\"files\":1,\"lookups\":false,\"concurrency\":2,"
                        + "\"work\":[{\"work\":0,\"items\":3}],\"indexGroups\":[0]}",
                FunctionCall.JSON.writeValueAsString(new ExportLoadSteps.Planned(
                        "l", "e", 3, 1, false, 2, List.of(new ExportLoadSteps.WorkItem(0, 3)), List.of(0))));
        assertEquals(
                "{\"group\":1,\"parts\":2,\"entries\":3}",
                FunctionCall.JSON.writeValueAsString(new ExportLoadSteps.Indexed(1, 2, 3)));
        assertEquals(
                "{\"loadId\":\"l\",\"aborted\":true,\"filesDeleted\":4}",
                FunctionCall.JSON.writeValueAsString(new ExportLoadSteps.Aborted("l", true, 4)));
        assertEquals(
                "{\"mode\":\"continuous\",\"stoppedBecause\":\"IDLE\",\"deadline\":\"2026-12-01T00:00:00Z\","
                        + "\"commits\":0,\"changesApplied\":0,\"longestMergeMillis\":0,\"merges\":[]}",
                FunctionCall.JSON.writeValueAsString(new MergeRun.ContinuousResult(
                        "continuous", "IDLE", "2026-12-01T00:00:00Z", 0, 0, 0, List.of())));
    }
}
