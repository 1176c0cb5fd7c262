package dev.ddb2iceberg.function;

import com.fasterxml.jackson.annotation.JsonSetter;
import com.fasterxml.jackson.annotation.Nulls;
import dev.ddb2iceberg.maintenance.Maintenance;
import dev.ddb2iceberg.maintenance.MaintenanceOptions;
import dev.ddb2iceberg.maintenance.MaintenanceResult;
import dev.ddb2iceberg.table.TableCreator;
import dev.ddb2iceberg.util.Futures;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * Compaction fanned out, for a table whose hourly compaction no longer fits one Lambda run: the
 * steps a Step Functions distributed map runs (the input's {@code step} says which), or
 * {@link #runInProcess} on a thread pool.
 *
 * <ul>
 *   <li>{@code {"step": "plan", "workers": N}}: the groups worth rewriting now, most benefit per byte
 *       first, each as its files' locations (as many as fit a state's payload; the rest wait for the
 *       next execution), and the {@code concurrency} the map runs at;
 *   <li>{@code {"step": "group", "files": [...]}}: one group rewritten and committed on its own,
 *       validated as a scheduled run's groups are, so a merge racing it never loses a delete; a
 *       group retried after its commit finds its files gone and does nothing;
 *   <li>{@code {"step": "finish"}}: dangling position deletes removed and the group commits'
 *       manifests rewritten into few.
 * </ul>
 *
 * Groups share no file, so workers never invalidate each other; each commit carries the merger's
 * checkpoint and the key index's moves, as the scheduled compaction's do.
 */
public final class CompactionSteps {
    /** Workers at once unless the plan's input says ({@code workers}). */
    public static final int DEFAULT_WORKERS = 10;
    /**
     * The plan's groups stop at this many characters of file locations: a Step Functions state's
     * input and output are at most 256 KB.
     */
    static final int MAX_PLAN_CHARS = 200_000;

    /** A step's input: the fields of all steps (each takes the ones it needs). */
    public record Input(
            String step,
            @JsonSetter(nulls = Nulls.SET) Integer workers,
            @JsonSetter(nulls = Nulls.SET) List<String> files) {}

    /** The plan: the map runs a worker per group, {@code concurrency} at once. */
    public record Planned(int concurrency, List<Group> groups, int groupsLeft) {}

    public record Group(List<String> files) {}

    /** A step that had nothing to do. */
    private static final MaintenanceResult NOTHING =
            new MaintenanceResult(false, MaintenanceResult.Compaction.NONE, 0, 0, List.of(), 0, List.of(), 0);

    private final PipelineSettings settings;
    private final MaintenanceOptions options;
    private final Catalog catalog;
    private final Clock clock;

    public CompactionSteps(PipelineSettings settings, MaintenanceOptions options, Catalog catalog, Clock clock) {
        this.settings = settings;
        this.options = options;
        this.catalog = catalog;
        this.clock = clock;
    }

    public Object run(Input in) {
        String step = in.step() == null ? "" : in.step();
        return switch (step) {
            case "plan" -> {
                only(in, "plan", "\"workers\"", in.files() == null);
                yield plan(in.workers() == null ? DEFAULT_WORKERS : in.workers());
            }
            case "group" -> {
                only(in, "group", "\"files\"", in.workers() == null);
                if (in.files() == null || in.files().isEmpty()) {
                    throw new IllegalArgumentException(
                            "Compaction input step='group' needs \"files\": the locations of one group the plan step"
                                    + " returned; got " + in.files());
                }
                yield existing().compactGroup(in.files());
            }
            case "finish" -> {
                only(in, "finish", "no other field", in.workers() == null && in.files() == null);
                Maintenance maintenance = maintenance();
                // Before the merger's first run the plan was empty: there is nothing to finish.
                yield maintenance == null ? NOTHING : maintenance.finishCompaction();
            }
            default ->
                throw new IllegalArgumentException(
                        "Compaction input step='" + step + "' is not one of plan, group, finish.");
        };
    }

    /** Refuses a field the step does not take, naming what it takes. */
    private static void only(Input in, String step, String takes, boolean ok) {
        if (!ok) {
            throw new IllegalArgumentException(
                    "Compaction input step='" + step + "' takes " + takes + " only; got " + in);
        }
    }

    /** The plan step: groups up to {@link #MAX_PLAN_CHARS} of locations, the most benefit first. */
    public Planned plan(int workers) {
        if (workers <= 0) {
            throw new IllegalArgumentException("Compaction input workers=" + workers + " must be positive.");
        }
        Maintenance maintenance = maintenance();
        List<List<String>> all = maintenance == null ? List.of() : maintenance.compactionGroups();
        List<Group> groups = new ArrayList<>();
        long chars = 0;
        for (List<String> files : all) {
            long size = files.stream().mapToLong(f -> f.length() + 3).sum();
            if (!groups.isEmpty() && chars + size > MAX_PLAN_CHARS) {
                break;
            }
            groups.add(new Group(files));
            chars += size;
        }
        return new Planned(workers, groups, all.size() - groups.size());
    }

    /** The whole fan-out in this process: plan, the groups on {@code workers} threads, finish. */
    public MaintenanceResult runInProcess(int workers) {
        long start = System.nanoTime();
        int[] before = existing().fileCounts();
        Planned plan = plan(workers);
        List<String> conflicts = new ArrayList<>();
        int groups = 0;
        int filesIn = 0;
        long bytesIn = 0;
        int filesOut = 0;
        ExecutorService pool = Executors.newFixedThreadPool(workers);
        try {
            List<Future<MaintenanceResult>> done = new ArrayList<>();
            for (Group g : plan.groups()) {
                done.add(pool.submit(() -> existing().compactGroup(g.files())));
            }
            for (Future<MaintenanceResult> f : done) {
                MaintenanceResult r = Futures.join(f, "compacting a group");
                groups += r.compaction().groups();
                filesIn += r.compaction().filesRewritten();
                bytesIn += r.compaction().bytesRewritten();
                filesOut += r.compaction().filesWritten();
                conflicts.addAll(r.conflicts());
            }
        } finally {
            pool.shutdownNow();
        }
        MaintenanceResult finish = existing().finishCompaction();
        conflicts.addAll(finish.conflicts());
        MaintenanceResult.Compaction c = finish.compaction();
        return new MaintenanceResult(
                false,
                new MaintenanceResult.Compaction(
                        groups,
                        filesIn,
                        bytesIn,
                        filesOut,
                        c.danglingDeletesRemoved(),
                        before[0],
                        before[1],
                        c.dataFilesAfter(),
                        c.deleteFilesAfter(),
                        plan.groupsLeft() + plan.groups().size() - groups),
                finish.manifestsRewritten(),
                0,
                List.of(),
                0,
                conflicts,
                (System.nanoTime() - start) / 1_000_000);
    }

    /** The table's maintenance, for a step that needs the table to exist. */
    private Maintenance existing() {
        Maintenance m = maintenance();
        if (m == null) {
            throw new IllegalStateException("Table " + PipelineSettings.table(settings.table())
                    + " does not exist (the merger creates it on its first run): nothing to compact");
        }
        return m;
    }

    /** The table's maintenance, on the table as it is now; null before the merger created it. */
    private Maintenance maintenance() {
        TableIdentifier id = PipelineSettings.table(settings.table());
        Table table = TableCreator.loadIfExists(catalog, id);
        if (table == null) {
            return null;
        }
        return new Maintenance(table, options, MaintenanceRun.stagingUri(settings), clock)
                .managedStorage(settings.catalog().isS3Tables());
    }
}
