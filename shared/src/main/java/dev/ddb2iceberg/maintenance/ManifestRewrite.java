package dev.ddb2iceberg.maintenance;

import dev.ddb2iceberg.commit.Checkpoint;
import dev.ddb2iceberg.commit.PipelineProperties;
import dev.ddb2iceberg.index.KeyIndex;
import java.util.List;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.RewriteManifests;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.util.PropertyUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Rewrites the current snapshot's small data manifests into few, once there are too many. They are
 * clustered by partition spec only: the merge plans every file anyway, and with a bucketed spec
 * every small manifest spans all buckets, so clustering by partition would only multiply them.
 */
final class ManifestRewrite {
    private static final Logger LOG = LoggerFactory.getLogger(ManifestRewrite.class);

    private final Table table;
    private final int threshold;

    ManifestRewrite(Table table, int threshold) {
        this.table = table;
        this.threshold = threshold;
    }

    /** Returns the small manifests rewritten (or that would be, on a dry run). */
    int run(boolean dryRun) {
        table.refresh();
        Snapshot current = table.currentSnapshot();
        if (current == null) {
            return 0;
        }
        long small = PropertyUtil.propertyAsLong(
                        table.properties(),
                        TableProperties.MANIFEST_TARGET_SIZE_BYTES,
                        TableProperties.MANIFEST_TARGET_SIZE_BYTES_DEFAULT)
                / 2;
        List<ManifestFile> smallOnes = current.allManifests(table.io()).stream()
                .filter(m -> m.length() < small)
                .toList();
        if (smallOnes.size() <= threshold || dryRun) {
            return smallOnes.size() > threshold ? smallOnes.size() : 0;
        }
        RewriteManifests rewrite = table.rewriteManifests()
                .rewriteIf(m -> m.length() < small)
                .clusterBy(file -> Integer.toString(file.specId()));
        Checkpoint.carried(table).forEach(rewrite::set);
        // Rows stay where they are: the key index still holds.
        rewrite.set(PipelineProperties.KEY_INDEX_MOVES, KeyIndex.NO_MOVES);
        rewrite.commit();
        LOG.info("Rewrote {} small manifests", smallOnes.size());
        return smallOnes.size();
    }
}
