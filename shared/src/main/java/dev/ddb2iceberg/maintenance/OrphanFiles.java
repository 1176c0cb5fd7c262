package dev.ddb2iceberg.maintenance;

import dev.ddb2iceberg.commit.Checkpoint;
import dev.ddb2iceberg.index.KeyIndex;
import dev.ddb2iceberg.removals.RemovalsIndex;
import dev.ddb2iceberg.table.DerivedFiles;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.ContentFile;
import org.apache.iceberg.ManifestContent;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.ManifestFiles;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.ReachableFileUtil;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.FileInfo;
import org.apache.iceberg.io.SupportsBulkOperations;
import org.apache.iceberg.io.SupportsPrefixOperations;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Files under the table's location that no metadata references (left by failed or abandoned
 * commits), older than a minimum age so a commit still being written is never touched. Anything
 * under the staging prefix is never a candidate, even if the table lives beside it.
 */
final class OrphanFiles {
    private static final Logger LOG = LoggerFactory.getLogger(OrphanFiles.class);
    private final Table table;
    private final String protectedPrefix;
    private final boolean listTableLocation;

    /**
     * @param protectedPrefix an s3:// URI prefix that must never be deleted (the staging area)
     * @param listTableLocation false where the table's storage cannot be listed (an S3 table bucket,
     *     which removes unreferenced files itself): then only the pipeline's own files are looked at
     */
    OrphanFiles(Table table, String protectedPrefix, boolean listTableLocation) {
        this.table = table;
        this.protectedPrefix = ReferencedFiles.canonical(protectedPrefix);
        this.listTableLocation = listTableLocation;
    }

    /** Orphans older than {@code olderThan}; deleted in bulk unless {@code dryRun}. */
    List<String> run(Instant olderThan, boolean dryRun) {
        FileIO io = table.io();
        if (!(io instanceof SupportsPrefixOperations prefixes)) {
            throw new IllegalStateException(
                    "the table's FileIO (" + io.getClass().getName() + ") cannot list files");
        }
        ReferencedFiles referenced = referencedFiles();
        List<String> locations = new ArrayList<>();
        if (listTableLocation) {
            locations.add(table.location().endsWith("/") ? table.location() : table.location() + "/");
        }
        if (DerivedFiles.separate(table)) {
            locations.add(DerivedFiles.location(table)); // the removals index and key index, kept elsewhere
        }
        List<String> orphans = new ArrayList<>();
        List<String> keptInDoubt = new ArrayList<>();
        for (String location : locations) {
            for (FileInfo f : prefixes.listPrefix(location)) {
                String listed = f.location();
                if (referenced.references(listed)) {
                    String spelled = referenced.spelledDifferently(listed);
                    if (spelled != null) {
                        keptInDoubt.add(listed + " (referenced as " + spelled + ")");
                    }
                } else if (f.createdAtMillis() < olderThan.toEpochMilli()
                        && !ReferencedFiles.canonical(listed).startsWith(protectedPrefix)) {
                    orphans.add(listed);
                }
            }
        }
        if (!keptInDoubt.isEmpty()) {
            LOG.warn(
                    "Kept {} files that the table references under another spelling of the same key (an"
                            + " empty path segment, s3a://, an escape), e.g. {}; compaction rewrites such"
                            + " delete files away",
                    keptInDoubt.size(),
                    keptInDoubt.subList(0, Math.min(3, keptInDoubt.size())));
        }
        if (!dryRun && !orphans.isEmpty()) {
            if (io instanceof SupportsBulkOperations bulk) {
                bulk.deleteFiles(orphans);
            } else {
                orphans.forEach(io::deleteFile);
            }
        }
        return orphans;
    }

    /** Every file any snapshot or metadata version of the table needs. */
    private ReferencedFiles referencedFiles() {
        ReferencedFiles files = new ReferencedFiles();
        // The current metadata file and those its log names; not recursively: the table deletes older
        // ones after each commit (write.metadata.delete-after-commit), and following the log into
        // them logged an error per missing file (hundreds an hour at continuous mode's commit rate).
        ReachableFileUtil.metadataFileLocations(table, false).forEach(files::add);
        ReachableFileUtil.manifestListLocations(table).forEach(files::add);
        ReachableFileUtil.statisticsFilesLocations(table).forEach(files::add);
        // The merger's files of recent removals, which snapshot summaries name (not Iceberg metadata).
        RemovalsIndex.namedByAnySnapshot(table).forEach(files::add);
        String versionHint = ReachableFileUtil.versionHintLocation(table);
        if (versionHint != null) {
            files.add(versionHint);
        }
        Map<Integer, PartitionSpec> specs = table.specs();
        Set<String> seenManifests = new HashSet<>();
        for (Snapshot snapshot : table.snapshots()) {
            // The merger's key index and checkpoint, which snapshot summaries name (not Iceberg metadata).
            KeyIndex.filesOf(table, snapshot).forEach(files::add);
            String checkpoint = Checkpoint.fileOf(snapshot);
            if (checkpoint != null) {
                files.add(checkpoint);
            }
            for (ManifestFile manifest : snapshot.allManifests(table.io())) {
                if (!seenManifests.add(manifest.path())) {
                    continue;
                }
                files.add(manifest.path());
                try (CloseableIterable<? extends ContentFile<?>> entries = manifest.content() == ManifestContent.DATA
                        ? ManifestFiles.read(manifest, table.io(), specs)
                        : ManifestFiles.readDeleteManifest(manifest, table.io(), specs)) {
                    for (ContentFile<?> file : entries) {
                        files.add(file.location());
                    }
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }
        }
        return files;
    }
}
