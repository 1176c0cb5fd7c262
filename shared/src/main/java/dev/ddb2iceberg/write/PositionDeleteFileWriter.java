package dev.ddb2iceberg.write;

import dev.ddb2iceberg.util.ZstdCompression;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
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
import org.apache.parquet.bytes.BytesInput;
import org.apache.parquet.bytes.HeapByteBufferAllocator;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.column.Encoding;
import org.apache.parquet.column.ParquetProperties;
import org.apache.parquet.column.ParquetProperties.WriterVersion;
import org.apache.parquet.column.page.DictionaryPage;
import org.apache.parquet.column.statistics.Statistics;
import org.apache.parquet.column.values.delta.DeltaBinaryPackingValuesWriterForLong;
import org.apache.parquet.column.values.rle.RunLengthBitPackingHybridEncoder;
import org.apache.parquet.compression.CompressionCodecFactory.BytesInputCompressor;
import org.apache.parquet.conf.ParquetConfiguration;
import org.apache.parquet.conf.PlainParquetConfiguration;
import org.apache.parquet.hadoop.CodecFactory;
import org.apache.parquet.hadoop.ParquetFileWriter;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.codec.ZstandardCodec;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.parquet.io.PositionOutputStream;
import org.apache.parquet.io.api.Binary;
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
 * a record per position, encoding the same path again for each. Here the file is written page by
 * page through Parquet's file writer: the path's pages are the same few bytes whatever the positions,
 * and a page of positions is the positions' bytes. A file-scoped delete file carries the data file's
 * earlier positions forward, so every merge rewrites them all until compaction: at about 35 ns a
 * position instead of 250 (mostly compressing them), that costs a merge little.
 *
 * <p>The pages are those Iceberg's writer writes for the table's Parquet page version ({@code
 * write.delete.parquet.page-version}, else {@code write.parquet.page-version}; v1 by default). In
 * v1 pages the positions are plain, 8 bytes each before compression, which every reader reads. In
 * v2 pages they are delta-encoded: the gaps between them, bit-packed, take about a byte a position
 * once a file's carried deletes are dense, and leave zstd little to do. For tables whose readers all
 * read Parquet's v2 pages (BENCHMARKS.md, "Delete files").
 */
final class PositionDeleteFileWriter {
    private static final Set<Integer> FILE_AND_POS =
            Set.of(MetadataColumns.DELETE_FILE_PATH.fieldId(), MetadataColumns.DELETE_FILE_POS.fieldId());
    private static final MessageType SCHEMA = ParquetSchemaUtil.convert(DeleteSchemaUtil.pathPosSchema(), "table");
    private static final ColumnDescriptor PATH = SCHEMA.getColumns().get(0);
    private static final ColumnDescriptor POS = SCHEMA.getColumns().get(1);
    /** Rows a page: Parquet's and Iceberg's default page row limit. */
    static final int PAGE_ROWS = 20_000;
    /** Parquet's delta encoding as its v2 writer sets it up: blocks of 128 values in 4 mini blocks. */
    private static final int DELTA_BLOCK_SIZE = 128;

    private static final int DELTA_MINI_BLOCKS = 4;
    /** Parquet's defaults: page checksums, column index bounds truncated to 64 bytes. */
    private static final ParquetProperties PROPERTIES =
            ParquetProperties.builder().build();

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
        if (positions.length == 0) {
            throw new IllegalArgumentException("no positions to delete in " + dataFile.location());
        }
        PartitionSpec spec = table.specs().get(dataFile.specId());
        String path = dataFile.location();
        ParquetOut file = new ParquetOut(out);
        CompressionCodecName codec = codec(settings);
        CodecFactory codecs = codec == CompressionCodecName.ZSTD
                ? null
                : new CodecFactory(configuration(settings), PAGE_ROWS * Long.BYTES);
        BytesInputCompressor compressor =
                codecs == null ? new ZstdPages(zstdLevel(settings)) : codecs.getCompressor(codec);
        boolean v2Pages = pageVersion(settings) == WriterVersion.PARQUET_2_0;
        ParquetMetadata footer;
        try {
            footer = writeParquet(file, Binary.fromString(path), positions, codec, compressor, v2Pages);
        } catch (IOException e) {
            throw new UncheckedIOException("writing position deletes to " + out.location(), e);
        } finally {
            if (codecs != null) {
                codecs.release();
            }
        }
        Metrics metrics = MetricsUtil.copyWithoutFieldCounts(
                ParquetUtil.footerMetrics(footer, Stream.empty(), MetricsConfig.forPositionDelete()), FILE_AND_POS);
        return FileMetadata.deleteFileBuilder(spec)
                .ofPositionDeletes()
                .withFormat(FileFormat.PARQUET)
                .withPath(out.location())
                .withPartition(dataFile.partition())
                .withSplitOffsets(ParquetUtil.getSplitOffsets(footer))
                .withFileSizeInBytes(file.length)
                .withMetrics(metrics)
                .withReferencedDataFile(path)
                .build();
    }

    /**
     * The file, page by page, as Parquet's record writer would write it: one row group; the path
     * dictionary-encoded (a one-entry dictionary, then runs of id 0), the positions plain in v1 pages
     * and delta-encoded in v2 pages; pages of {@link #PAGE_ROWS} rows, each with its statistics (they
     * give the file its bounds and column index). Parquet's record writer spends about 200 ns a row on
     * the path alone, hashing it into the dictionary and comparing it with the statistics' bounds, for
     * a value that never changes.
     */
    private static ParquetMetadata writeParquet(
            ParquetOut file,
            Binary path,
            long[] positions,
            CompressionCodecName codec,
            BytesInputCompressor compressor,
            boolean v2Pages)
            throws IOException {
        ParquetFileWriter writer = new ParquetFileWriter(
                file,
                SCHEMA,
                // The name is new (OutputFileFactory: the run's id and a counter), so no check for
                // an object there first: CREATE would cost a HEAD request per delete file.
                ParquetFileWriter.Mode.OVERWRITE,
                ParquetWriter.DEFAULT_BLOCK_SIZE,
                ParquetWriter.MAX_PADDING_SIZE_DEFAULT,
                null,
                PROPERTIES);
        try {
            writer.start();
            writer.startBlock(positions.length);

            writer.startColumn(PATH, positions.length, codec);
            byte[] entry = path.getBytes();
            BytesInput dictionary = BytesInput.concat(BytesInput.fromInt(entry.length), BytesInput.from(entry));
            // Written at once (as every page here), so the compressor's buffer may be reused after.
            // Parquet's v1 pages name a dictionary's encoding PLAIN_DICTIONARY; its v2 pages, PLAIN.
            writer.writeDictionaryPage(new DictionaryPage(
                    compressor.compress(dictionary),
                    (int) dictionary.size(),
                    1,
                    v2Pages ? Encoding.PLAIN : Encoding.PLAIN_DICTIONARY));
            // Every page holds the one path: the same statistics, and the same ids for every full page.
            Statistics<?> pathStats = Statistics.createStats(PATH.getPrimitiveType());
            pathStats.updateStats(path);
            BytesInput fullPageIds = positions.length >= PAGE_ROWS ? dictionaryIds(PAGE_ROWS) : null;
            for (int from = 0; from < positions.length; from += PAGE_ROWS) {
                int rows = Math.min(PAGE_ROWS, positions.length - from);
                BytesInput ids = rows == PAGE_ROWS ? fullPageIds : dictionaryIds(rows);
                Encoding encoding = v2Pages ? Encoding.RLE_DICTIONARY : Encoding.PLAIN_DICTIONARY;
                writePage(writer, compressor, ids, rows, pathStats, encoding, v2Pages);
            }
            writer.endColumn();

            writer.startColumn(POS, positions.length, codec);
            if (v2Pages) {
                writeDeltaPositions(writer, compressor, positions);
            } else {
                writePlainPositions(writer, compressor, positions);
            }
            writer.endColumn();

            writer.endBlock();
            writer.end(Map.of());
        } catch (IOException | RuntimeException e) {
            // No footer for a file that failed half way (it is never committed; orphan removal
            // takes it); close() then only frees the writer's buffers.
            writer.abort();
            try {
                writer.close();
            } catch (IOException | RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
        return writer.getFooter();
    }

    /** The positions in v1 pages, plain: each page is the positions' little-endian bytes. */
    private static void writePlainPositions(ParquetFileWriter writer, BytesInputCompressor compressor, long[] positions)
            throws IOException {
        byte[] page = new byte[Math.min(PAGE_ROWS, positions.length) * Long.BYTES];
        ByteBuffer values = ByteBuffer.wrap(page).order(ByteOrder.LITTLE_ENDIAN);
        for (int from = 0; from < positions.length; from += PAGE_ROWS) {
            int rows = Math.min(PAGE_ROWS, positions.length - from);
            values.clear();
            values.asLongBuffer().put(positions, from, rows);
            writePage(
                    writer,
                    compressor,
                    BytesInput.from(page, 0, rows * Long.BYTES),
                    rows,
                    positionStats(positions, from, rows),
                    Encoding.PLAIN,
                    false);
        }
    }

    /**
     * The positions in v2 pages, delta-encoded by Parquet's own encoder, as its v2 writer encodes a
     * column of distinct longs (its dictionary never pays for itself there, so it falls back to this).
     */
    private static void writeDeltaPositions(ParquetFileWriter writer, BytesInputCompressor compressor, long[] positions)
            throws IOException {
        int pageRows = Math.min(PAGE_ROWS, positions.length);
        try (DeltaBinaryPackingValuesWriterForLong deltas = new DeltaBinaryPackingValuesWriterForLong(
                DELTA_BLOCK_SIZE,
                DELTA_MINI_BLOCKS,
                pageRows, // a page's encoding takes about a byte a position; its buffers grow if it takes more
                pageRows * Long.BYTES,
                HeapByteBufferAllocator.getInstance())) {
            for (int from = 0; from < positions.length; from += PAGE_ROWS) {
                int rows = Math.min(PAGE_ROWS, positions.length - from);
                deltas.reset();
                for (int i = from; i < from + rows; i++) {
                    deltas.writeLong(positions[i]);
                }
                // Written at once, before the encoder's buffers are reset for the next page.
                writePage(
                        writer,
                        compressor,
                        deltas.getBytes(),
                        rows,
                        positionStats(positions, from, rows),
                        Encoding.DELTA_BINARY_PACKED,
                        true);
            }
        }
    }

    /** A page's statistics of ascending positions: its first and last. */
    private static Statistics<?> positionStats(long[] positions, int from, int rows) {
        Statistics<?> stats = Statistics.createStats(POS.getPrimitiveType());
        stats.updateStats(positions[from]);
        stats.updateStats(positions[from + rows - 1]);
        return stats;
    }

    /** The dictionary ids of {@code rows} rows of the one path: a bit width of 0, then a run of id 0. */
    private static BytesInput dictionaryIds(int rows) throws IOException {
        // Parquet's own encoder, so the bytes are those its dictionary writer produces.
        try (RunLengthBitPackingHybridEncoder ids =
                new RunLengthBitPackingHybridEncoder(0, 64, 1024, HeapByteBufferAllocator.getInstance())) {
            for (int i = 0; i < rows; i++) {
                ids.writeInt(0);
            }
            return BytesInput.from(BytesInput.concat(BytesInput.from(new byte[] {0}), ids.toBytes())
                    .toByteArray());
        }
    }

    /**
     * One data page of a required column, no levels: a v1 page marks them BIT_PACKED of width 0, as
     * Parquet does; a v2 page has no level bytes at all, and compresses only its values.
     */
    private static void writePage(
            ParquetFileWriter writer,
            BytesInputCompressor compressor,
            BytesInput raw,
            int rows,
            Statistics<?> stats,
            Encoding encoding,
            boolean v2Page)
            throws IOException {
        int size = (int) raw.size();
        if (v2Page) {
            writer.writeDataPageV2(
                    rows,
                    0,
                    rows,
                    BytesInput.empty(),
                    BytesInput.empty(),
                    encoding,
                    compressor.compress(raw),
                    size,
                    stats);
        } else {
            writer.writeDataPage(
                    rows,
                    size,
                    compressor.compress(raw),
                    stats,
                    rows,
                    Encoding.BIT_PACKED,
                    Encoding.BIT_PACKED,
                    encoding);
        }
    }

    /**
     * The delete files' Parquet page version, by Iceberg's rule: the table's for deletes, else its
     * data files', else v1.
     */
    static WriterVersion pageVersion(Map<String, String> settings) {
        String version = settings.getOrDefault(
                TableProperties.DELETE_PARQUET_PAGE_VERSION,
                settings.getOrDefault(
                        TableProperties.PARQUET_PAGE_VERSION, TableProperties.PARQUET_PAGE_VERSION_DEFAULT));
        try {
            return WriterVersion.fromString(version.trim());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    "the table's Parquet page version for deletes is '" + version + "', not v1 or v2 (set "
                            + TableProperties.DELETE_PARQUET_PAGE_VERSION + " to one)",
                    e);
        }
    }

    /** The delete file's codec: the table's for deletes, else its data files', else zstd. */
    private static CompressionCodecName codec(Map<String, String> settings) {
        String codec = settings.getOrDefault(
                TableProperties.DELETE_PARQUET_COMPRESSION,
                settings.getOrDefault(
                        TableProperties.PARQUET_COMPRESSION, TableProperties.PARQUET_COMPRESSION_DEFAULT_SINCE_1_4_0));
        return CompressionCodecName.valueOf(codec.toUpperCase(Locale.ROOT));
    }

    /** The deletes' compression level the table sets (for deletes, else for data), or null. */
    private static String level(Map<String, String> settings) {
        return settings.getOrDefault(
                TableProperties.DELETE_PARQUET_COMPRESSION_LEVEL,
                settings.get(TableProperties.PARQUET_COMPRESSION_LEVEL));
    }

    /** The deletes' zstd level: the table's, else Parquet's default (what its zstd codec would take). */
    private static int zstdLevel(Map<String, String> settings) {
        String level = level(settings);
        if (level == null) {
            return ZstandardCodec.DEFAULT_PARQUET_COMPRESS_ZSTD_LEVEL;
        }
        try {
            return Integer.parseInt(level.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(
                    "the table's zstd level for deletes is '" + level + "', not a whole number (zstd takes 1 to 22;"
                            + " set " + TableProperties.DELETE_PARQUET_COMPRESSION_LEVEL + " to one)",
                    e);
        }
    }

    /**
     * Zstd pages, each one frame compressed at once with a pooled context ({@link ZstdCompression}).
     * Parquet's zstd codec opens a compressing stream for every page, whose set-up (a workspace
     * sized for any input, cleared) cost more than compressing a delete file's small pages.
     */
    private static final class ZstdPages implements BytesInputCompressor {
        private final int level;
        private byte[] out = new byte[0];

        ZstdPages(int level) {
            this.level = level;
        }

        @Override
        public BytesInput compress(BytesInput page) throws IOException {
            ByteBuffer raw = page.toByteBuffer(); // the page's own array, not a copy, when it has one
            if (!raw.hasArray()) {
                raw = ByteBuffer.wrap(page.toByteArray());
            }
            int length = raw.remaining();
            if (out.length < ZstdCompression.bound(length)) {
                out = new byte[ZstdCompression.bound(length)];
            }
            int n = ZstdCompression.compress(out, raw.array(), raw.arrayOffset() + raw.position(), length, level);
            // The same buffer for the next page: the file writer writes each page out before asking for another.
            return BytesInput.from(out, 0, n);
        }

        @Override
        public CompressionCodecName getCodecName() {
            return CompressionCodecName.ZSTD;
        }

        @Override
        public void release() {
            out = new byte[0];
        }
    }

    /**
     * The level of a codec other than zstd ({@link ZstdPages} takes zstd's), as Iceberg passes it to
     * Parquet (its configuration key differs by codec).
     */
    private static ParquetConfiguration configuration(Map<String, String> settings) {
        String level = level(settings);
        Map<String, String> conf = new HashMap<>();
        if (level != null) {
            switch (codec(settings)) {
                case GZIP -> conf.put("zlib.compress.level", level);
                case BROTLI -> conf.put("compression.brotli.quality", level);
                default -> {} // the codec takes no level
            }
        }
        return new PlainParquetConfiguration(conf);
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
