package dev.ddb2iceberg.testkit;

import dev.ddb2iceberg.config.Environment;
import dev.ddb2iceberg.embedded.EmbeddedS3Server;
import dev.ddb2iceberg.embedded.S3ServerExtension;
import dev.ddb2iceberg.function.MergerSettings;
import dev.ddb2iceberg.merge.Merger;
import dev.ddb2iceberg.model.Change;
import dev.ddb2iceberg.staging.StagingStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.io.CloseableIterable;

/**
 * The merger's parts as most tests set them up: the table {@code orders} in a bucket of its own on
 * the embedded S3 server, the SQLite catalog, the settings the merger function would read from
 * {@link #env}, its staging store, and the model of the source table the staged changes describe.
 */
public final class MergerFixture {
    /** The functions' environment; after changing it, {@link #reconfigure()}. */
    public final Map<String, String> env = new HashMap<>();
    /** The source table, as the changes staged through {@link #stage} left it. */
    public final ExpectedTable model = new ExpectedTable();

    private final EmbeddedS3Server server;
    private final String bucket;
    private MergerSettings settings;
    private Catalog catalog;
    private StagingStore store;

    public MergerFixture(EmbeddedS3Server server, Path dir, Map<String, String> overrides) {
        this.server = server;
        this.bucket = S3ServerExtension.newBucket(server);
        env.putAll(new LocalStack(server, bucket, dir).environment("orders"));
        env.putAll(overrides);
        reconfigure();
    }

    /** Reads {@link #env} again, as a function started with it would. */
    public void reconfigure() {
        use(MergerSettings.from(new Environment(env)));
    }

    /** Uses these settings from now on (a test that builds them itself). */
    public void use(MergerSettings settings) {
        this.settings = settings;
        this.catalog = settings.catalog().load();
        this.store = new StagingStore(server.newClient(), settings.staging());
    }

    public EmbeddedS3Server server() {
        return server;
    }

    /** The bucket staging, the warehouse and the test's own files (exports) share. */
    public String bucket() {
        return bucket;
    }

    public MergerSettings settings() {
        return settings;
    }

    public Catalog catalog() {
        return catalog;
    }

    public StagingStore store() {
        return store;
    }

    /** Stages a stream batch as the stager would, and applies it to the model under the removal policy. */
    public void stage(List<Change> batch) {
        TableAssertions.stage(store, batch);
        model.apply(batch, settings.table().removals());
    }

    /** A merger of the current settings, as one scheduled run makes it. */
    public Merger merger() {
        return new Merger(catalog, settings.table(), store, settings.options());
    }

    public Table table() {
        return catalog.loadTable(TableIdentifier.of(
                settings.table().namespace(), settings.table().name()));
    }

    /** The table's live data files, each with its delete files, by location. */
    public Map<String, List<DeleteFile>> dataFilesWithDeletes() {
        return dataFilesWithDeletes(table());
    }

    /** The live data files of {@code table}, each with its delete files, by location. */
    public static Map<String, List<DeleteFile>> dataFilesWithDeletes(Table table) {
        Map<String, List<DeleteFile>> files = new HashMap<>();
        try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
            for (FileScanTask t : tasks) {
                files.put(t.file().location(), t.deletes());
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return files;
    }

    /** Fails, with the difference, unless the table holds exactly the model's items. */
    public void assertTableHoldsModel() {
        TableAssertions.assertHolds(table(), model);
    }
}
