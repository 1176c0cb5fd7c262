package dev.ddb2iceberg.write;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileMetadata;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.Metrics;
import org.apache.iceberg.MetricsConfig;
import org.apache.iceberg.MetricsUtil;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.encryption.PlaintextEncryptionManager;
import org.apache.iceberg.io.DeleteSchemaUtil;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.parquet.ParquetSchemaUtil;
import org.apache.iceberg.parquet.ParquetUtil;
import org.apache.parquet.conf.ParquetConfiguration;
import org.apache.parquet.conf.PlainParquetConfiguration;
import org.apache.parquet.hadoop.ParquetFileWriter;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.api.WriteSupport;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.io.PositionOutputStream;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.io.api.RecordConsumer;
import org.apache.parquet.schema.MessageType;

/**
 * Writes one file-scoped position delete file of format v2: the deleted positions of one data file,
 * ascending, as Iceberg's position delete schema ({@code file_path}, {@code pos}) in Parquet, with the
 * metrics Iceberg's own position delete writer gives such a file (bounds, so readers and the commit
 * see which data file it applies to; no value counts).
 *
 * <p>Why not Iceberg's generic writer: a merge writes one such file per data file it touches (tens
 * a merge at 10M rows, thousands at a billion), and that writer builds each file through a new Hadoop
 * {@code Configuration}, which parses Hadoop's 150 KB {@code core-default.xml} every time, then writes
 * a record per position, encoding the same path again for each. Here the file is written through
 * Parquet's own writer with a plain configuration: the path is encoded once, a row is a long.
 */
final class PositionDeleteFileWriter {
    private static final Set<Integer> FILE_AND_POS =
            Set.of(MetadataColumns.DELETE_FILE_PATH.fieldId(), MetadataColumns.DELETE_FILE_POS.fieldId());
    private static final MessageType SCHEMA = ParquetSchemaUtil.convert(DeleteSchemaUtil.pathPosSchema(), "table");

    private PositionDeleteFileWriter() {}

    /**
     * Whether this writer writes the table's position deletes: Parquet delete files (the default)
     * and no table encryption. Any other table goes through Iceberg's writer.
     */
    static boolean handles(Table table) {
        String format = table.properties()
                .getOrDefault(
                        TableProperties.DELETE_DEFAULT_FILE_FORMAT,
                        table.properties()
                                .getOrDefault(
                                        TableProperties.DEFAULT_FILE_FORMAT,
                                        TableProperties.DEFAULT_FILE_FORMAT_DEFAULT));
        return FileFormat.fromString(format) == FileFormat.PARQUET
                && table.encryption() instanceof PlaintextEncryptionManager;
    }

    /**
     * Writes {@code positions} (ascending, distinct) of {@code dataFile} to {@code out}, compressed as
     * {@code settings} (table properties, with a merge's own defaults laid over them) say for deletes.
     */
    static DeleteFile write(
            Table table, OutputFile out, DataFile dataFile, long[] positions, Map<String, String> settings) {
        PartitionSpec spec = table.specs().get(dataFile.specId());
        String path = dataFile.location();
        ParquetOut file = new ParquetOut(out);
        ParquetWriter<Long> writer;
        try {
            writer = new Builder(file, new PathAndPositions(Binary.fromString(path)))
                    .withConf(configuration(settings))
                    .withCompressionCodec(codec(settings))
                    // Positions are distinct: a dictionary never pays for them, but Parquet would
                    // hash each into one until its budget was full or the page ended, then write
                    // them plain anyway. That was two thirds of writing a delete file.
                    .withDictionaryEncoding(MetadataColumns.DELETE_FILE_POS.name(), false)
                    // The name is new (OutputFileFactory: the run's id and a counter), so no check
                    // for an object there first: CREATE would cost a HEAD request per delete file.
                    .withWriteMode(ParquetFileWriter.Mode.OVERWRITE)
                    .build();
            try (writer) {
                for (long position : positions) {
                    writer.write(position);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("writing position deletes to " + out.location(), e);
        }
        Metrics metrics = MetricsUtil.copyWithoutFieldCounts(
                ParquetUtil.footerMetrics(writer.getFooter(), Stream.empty(), MetricsConfig.forPositionDelete()),
                FILE_AND_POS);
        return FileMetadata.deleteFileBuilder(spec)
                .ofPositionDeletes()
                .withFormat(FileFormat.PARQUET)
                .withPath(out.location())
                .withPartition(dataFile.partition())
                .withSplitOffsets(ParquetUtil.getSplitOffsets(writer.getFooter()))
                .withFileSizeInBytes(file.length)
                .withMetrics(metrics)
                .withReferencedDataFile(path)
                .build();
    }

    /** The delete file's codec: the table's for deletes, else its data files', else zstd. */
    private static CompressionCodecName codec(Map<String, String> settings) {
        String codec = settings.getOrDefault(
                TableProperties.DELETE_PARQUET_COMPRESSION,
                settings.getOrDefault(
                        TableProperties.PARQUET_COMPRESSION, TableProperties.PARQUET_COMPRESSION_DEFAULT_SINCE_1_4_0));
        return CompressionCodecName.valueOf(codec.toUpperCase(Locale.ROOT));
    }

    /** The codec's level, as Iceberg passes it to Parquet (its configuration key differs by codec). */
    private static ParquetConfiguration configuration(Map<String, String> settings) {
        String level = settings.getOrDefault(
                TableProperties.DELETE_PARQUET_COMPRESSION_LEVEL,
                settings.get(TableProperties.PARQUET_COMPRESSION_LEVEL));
        Map<String, String> conf = new HashMap<>();
        if (level != null) {
            switch (codec(settings)) {
                case ZSTD -> conf.put("parquet.compression.codec.zstd.level", level);
                case GZIP -> conf.put("zlib.compress.level", level);
                case BROTLI -> conf.put("compression.brotli.quality", level);
                default -> {} // the codec takes no level
            }
        }
        return new PlainParquetConfiguration(conf);
    }

    /** Each row: the one data file's path (the same value, encoded once) and a position. */
    private static final class PathAndPositions extends WriteSupport<Long> {
        private final Binary path;
        private RecordConsumer out;

        PathAndPositions(Binary path) {
            this.path = path;
        }

        @Override
        public WriteContext init(ParquetConfiguration configuration) {
            return new WriteContext(SCHEMA, Map.of());
        }

        @Override
        public WriteContext init(org.apache.hadoop.conf.Configuration configuration) {
            return new WriteContext(SCHEMA, Map.of());
        }

        @Override
        public void prepareForWrite(RecordConsumer recordConsumer) {
            this.out = recordConsumer;
        }

        @Override
        public void write(Long position) {
            out.startMessage();
            out.startField("file_path", 0);
            out.addBinary(path);
            out.endField("file_path", 0);
            out.startField("pos", 1);
            out.addLong(position);
            out.endField("pos", 1);
            out.endMessage();
        }
    }

    private static final class Builder extends ParquetWriter.Builder<Long, Builder> {
        private final WriteSupport<Long> support;

        Builder(org.apache.parquet.io.OutputFile file, WriteSupport<Long> support) {
            super(file);
            this.support = support;
        }

        @Override
        protected Builder self() {
            return this;
        }

        @Override
        protected WriteSupport<Long> getWriteSupport(org.apache.hadoop.conf.Configuration conf) {
            return support;
        }

        @Override
        protected WriteSupport<Long> getWriteSupport(ParquetConfiguration conf) {
            return support;
        }
    }

    /** Iceberg's output file (S3 through the table's FileIO) as Parquet's; it notes the file's length when closed. */
    private static final class ParquetOut implements org.apache.parquet.io.OutputFile {
        private final OutputFile file;
        long length = -1;

        ParquetOut(OutputFile file) {
            this.file = file;
        }

        @Override
        public PositionOutputStream create(long blockSizeHint) {
            return stream(file.create());
        }

        @Override
        public PositionOutputStream createOrOverwrite(long blockSizeHint) {
            return stream(file.createOrOverwrite());
        }

        @Override
        public boolean supportsBlockSize() {
            return false;
        }

        @Override
        public long defaultBlockSize() {
            return 0;
        }

        @Override
        public String getPath() {
            return file.location();
        }

        private PositionOutputStream stream(org.apache.iceberg.io.PositionOutputStream out) {
            return new PositionOutputStream() {
                @Override
                public long getPos() throws IOException {
                    return out.getPos();
                }

                @Override
                public void write(int b) throws IOException {
                    out.write(b);
                }

                @Override
                public void write(byte[] b, int off, int len) throws IOException {
                    out.write(b, off, len);
                }

                @Override
                public void flush() throws IOException {
                    out.flush();
                }

                @Override
                public void close() throws IOException {
                    length = out.getPos();
                    out.close();
                }
            };
        }
    }
}
