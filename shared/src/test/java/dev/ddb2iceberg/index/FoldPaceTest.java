package dev.ddb2iceberg.index;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * How many parts each commit folds, over many commits: the choice {@link KeyIndex} makes from the
 * manifest alone, run here against a manifest that each simulated commit advances as {@code
 * withChanges} does (a delta added, the chosen parts absorbing every generation so far, deltas
 * every part absorbed dropped). No files: the choice reads only the parts' generations and sizes
 * and the deltas' entries. The deltas' bound is a parameter, so large merges are modelled with small
 * numbers: a bound of 4,000 entries against deltas of 180 is the library's 4M against the 180,000
 * of a merge of 100,000 changes.
 */
class FoldPaceTest {
    private static final int PARTS = 64;
    private static final long BOUND = 4_000;

    /** What the simulated commits did: the most parts one commit folded, all parts folded, the most entries kept. */
    private record Run(int mostFolded, long totalFolded, long mostKept) {}

    private static Run commits(int commits, long entriesPerCommit) {
        List<IndexManifest.Part> base = new ArrayList<>();
        for (int p = 0; p < PARTS; p++) {
            base.add(new IndexManifest.Part("part-" + p, 1L << 20, 100, 1_000, 0));
        }
        List<IndexManifest.Delta> deltas = new ArrayList<>();
        int mostFolded = 0;
        long totalFolded = 0;
        long mostKept = 0;
        for (long generation = 1; generation <= commits; generation++) {
            // As withChanges: the fold ahead chose from the deltas before this commit's (none when
            // there are none), then the commit's delta is added and the chosen parts have absorbed
            // everything before it.
            List<Integer> fold = deltas.isEmpty() ? List.of() : KeyIndex.partsToFold(base, deltas, BOUND);
            deltas.add(new IndexManifest.Delta("delta-" + generation, generation, entriesPerCommit, 1_000));
            for (int p : fold) {
                IndexManifest.Part before = base.get(p);
                base.set(
                        p,
                        new IndexManifest.Part(
                                before.path(), before.length(), before.footer(), before.entries(), generation - 1));
            }
            long absorbedByAll =
                    base.stream().mapToLong(IndexManifest.Part::absorbed).min().orElseThrow();
            deltas.removeIf(d -> d.generation() <= absorbedByAll);
            mostFolded = Math.max(mostFolded, fold.size());
            totalFolded += fold.size();
            mostKept = Math.max(
                    mostKept,
                    deltas.stream().mapToLong(IndexManifest.Delta::entries).sum());
        }
        return new Run(mostFolded, totalFolded, mostKept);
    }

    @Test
    void smallMergesFoldOnePartACommit() {
        Run run = commits(500, 8); // 64 commits of deltas stay far under the bound
        assertEquals(1, run.mostFolded(), "most parts one commit folded: " + run);
        assertTrue(run.mostKept() <= 65 * 8, "deltas kept: " + run);
    }

    @Test
    void largeMergesFoldAFewPartsEveryCommitInsteadOfMostOfTheIndexNowAndThen() {
        Run run = commits(500, 180);
        // The pace the bound asks for: 64 parts within the 4,000 / 180 = 22 commits the deltas may
        // span, about 3 a commit. Without the pacing one commit in 23 folded 42 parts.
        double pace = PARTS * 180 / (BOUND * 15.0 / 16);
        assertTrue(run.mostFolded() <= Math.ceil(pace) + 1, "most parts one commit folded: " + run + ", pace " + pace);
        assertTrue(run.mostKept() <= BOUND + 180, "the deltas stay within their bound: " + run);
        // About the work of folding at the bound's edge (64 parts every 23 commits, 2.8 a commit).
        assertTrue(run.totalFolded() <= 500 * pace * 1.05, "parts folded over 500 commits: " + run + ", pace " + pace);
    }
}
