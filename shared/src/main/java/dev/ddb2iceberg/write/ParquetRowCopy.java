package dev.ddb2iceberg.write;

import java.io.Closeable;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DoubleFieldMetrics;
import org.apache.iceberg.FieldMetrics;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FloatFieldMetrics;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.MetricsConfig;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetWriter;
import org.apache.iceberg.deletes.EqualityDeleteWriter;
import org.apache.iceberg.deletes.PositionDeleteWriter;
import org.apache.iceberg.encryption.EncryptedOutputFile;
import org.apache.iceberg.io.DataWriter;
import org.apache.iceberg.io.FileWriterFactory;
import org.apache.iceberg.io.OutputFileFactory;
import org.apache.iceberg.parquet.Parquet;
import org.apache.iceberg.parquet.ParquetSchemaUtil;
import org.apache.iceberg.parquet.ParquetValueWriter;
import org.apache.iceberg.parquet.TripleWriter;
import org.apache.iceberg.types.TypeUtil;
import org.apache.parquet.ParquetReadOptions;
import org.apache.parquet.VersionParser;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.column.ColumnReader;
import org.apache.parquet.column.ColumnWriteStore;
import org.apache.parquet.column.ColumnWriter;
import org.apache.parquet.column.impl.ColumnReaderImpl;
import org.apache.parquet.column.page.PageReadStore;
import org.apache.parquet.conf.HadoopParquetConfiguration;
import org.apache.parquet.conf.ParquetConfiguration;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.io.DelegatingSeekableInputStream;
import org.apache.parquet.io.SeekableInputStream;
import org.apache.parquet.io.api.PrimitiveConverter;
import org.apache.parquet.schema.GroupType;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.PrimitiveType;
import org.apache.parquet.schema.Type;

/**
 * Compaction's fast path: rows copied from Parquet data files into new ones value by value, with
 * their repetition and definition levels, below Iceberg's records. Nothing is decoded into Java
 * objects, nothing is converted, and no record is assembled; Iceberg's own Parquet writer still
 * does the encoding, the compression, the row groups and the file's metrics.
 *
 * <p>A file can be copied when each of its columns that the table's schema still has is the same
 * Parquet column (same field ids down its path, same physical and logical type, same levels). A
 * column the file lacks entirely, a top-level column added after it was written, is written as
 * nulls. Anything else (a promoted type, a field added inside a struct, a file without field ids)
 * goes through Iceberg's records instead, which {@link Source#open} tells by returning null.
 */
public final class ParquetRowCopy {
    private ParquetRowCopy() {}

    /**
     * Every row of {@code file} (a data file of {@code table} of its current schema and spec) copied
     * into one new file, as compaction copies them but with nothing deleted, no order to follow and
     * no commit: the limit compaction's copy is measured against. The new file is not committed.
     */
    public static DataFile copyAll(Table table, DataFile file, String operationId) throws IOException {
        MessageType target = target(table.schema());
        try (Source source = Source.open(table.io().newInputFile(file), target)) {
            if (source == null) {
                throw new IllegalArgumentException(file.location() + " has columns of an older schema");
            }
            OutputFileFactory files = OutputFileFactory.builderFor(table, 0, 0)
                    .operationId(operationId)
                    .format(FileFormat.PARQUET)
                    .build();
            DataWriter<Source> writer =
                    writers(table).newDataWriter(files.newOutputFile(), table.spec(), file.partition());
            try (writer) {
                for (long pos = 0; pos < file.recordCount(); pos++) {
                    source.moveTo(pos);
                    writer.write(source);
                }
            }
            return writer.toDataFile();
        }
    }

    /** The Parquet schema Iceberg's writer writes for {@code schema}: the new files' columns. */
    public static MessageType target(Schema schema) {
        return ParquetSchemaUtil.convert(schema, "table");
    }

    /** How one target column's values are copied: which typed get and write to use. */
    private enum Kind {
        BOOLEAN,
        INT32,
        INT64,
        FLOAT,
        DOUBLE,
        BINARY;

        static Kind of(PrimitiveType.PrimitiveTypeName name) {
            return switch (name) {
                case BOOLEAN -> BOOLEAN;
                case INT32 -> INT32;
                case INT64 -> INT64;
                case FLOAT -> FLOAT;
                case DOUBLE -> DOUBLE;
                case BINARY, FIXED_LEN_BYTE_ARRAY, INT96 -> BINARY;
            };
        }
    }

    /**
     * One input data file open for copying: a column reader per target column over its current row
     * group, and the position of the next row they stand at. Positions only move forward.
     */
    public static final class Source implements Closeable {
        private final ParquetFileReader reader;
        private final String location;
        /** Per target column: the file's column, or null when the file lacks it (written as nulls). */
        private final ColumnDescriptor[] columns;

        private final Kind[] kinds;
        private final VersionParser.ParsedVersion writerVersion;
        private final ColumnReader[] readers;
        /** Per target column, where {@link #copyRow} keeps the row's value for the caller, or -1. */
        private final int[] slots;

        /** The target columns of row lineage (v3: {@code _row_id}, {@code _last_updated_sequence_number}), or -1. */
        private final int rowIdColumn;

        private final int lastUpdatedColumn;
        /** The file's first row id and data sequence number, which rows without written lineage inherit. */
        private Long firstRowId;

        private Long fileSequenceNumber;
        private Object[] kept = new Object[0];
        private int group = -1;
        private long groupEnd;
        private long next;

        private Source(
                ParquetFileReader reader,
                String location,
                ColumnDescriptor[] columns,
                Kind[] kinds,
                int rowIdColumn,
                int lastUpdatedColumn) {
            this.reader = reader;
            this.location = location;
            this.columns = columns;
            this.kinds = kinds;
            this.rowIdColumn = rowIdColumn;
            this.lastUpdatedColumn = lastUpdatedColumn;
            this.readers = new ColumnReader[columns.length];
            this.slots = new int[columns.length];
            java.util.Arrays.fill(slots, -1);
            VersionParser.ParsedVersion version;
            try {
                version =
                        VersionParser.parse(reader.getFooter().getFileMetaData().getCreatedBy());
            } catch (VersionParser.VersionParseException | RuntimeException unknown) {
                version = null; // only used to work around old writers' bugs; an unknown writer has none known
            }
            this.writerVersion = version;
        }

        /**
         * How moved files are read: a Hadoop configuration without Hadoop's default resources,
         * shared by every reader and never changed (Parquet only reads it, and takes its defaults
         * from code). Parquet's own default made a new one per file, and parsing Hadoop's
         * core-default.xml into it was about 1 % of a merge's CPU.
         */
        private static final ParquetConfiguration READ_CONF = new HadoopParquetConfiguration(new Configuration(false));

        /**
         * Opens {@code file} for copying into files of {@code target}, or returns null (with the
         * file closed) when a column differs and the file must go through Iceberg's records.
         */
        public static Source open(org.apache.iceberg.io.InputFile file, MessageType target) throws IOException {
            ParquetFileReader reader = ParquetFileReader.open(
                    parquetFile(file), ParquetReadOptions.builder(READ_CONF).build());
            try {
                MessageType own = reader.getFooter().getFileMetaData().getSchema();
                Map<List<Object>, ColumnDescriptor> byIds = new HashMap<>();
                List<Object> topLevel = new ArrayList<>();
                for (Type field : own.getFields()) {
                    topLevel.add(
                            field.getId() == null
                                    ? null
                                    : (Object) field.getId().intValue());
                }
                for (ColumnDescriptor c : own.getColumns()) {
                    List<Object> ids = idPath(own, c.getPath());
                    if (ids == null) {
                        reader.close();
                        return null; // a file without field ids is read by name mapping: the record path
                    }
                    byIds.put(ids, c);
                }
                List<ColumnDescriptor> wanted = target.getColumns();
                ColumnDescriptor[] columns = new ColumnDescriptor[wanted.size()];
                Kind[] kinds = new Kind[wanted.size()];
                List<ColumnDescriptor> read = new ArrayList<>();
                for (int i = 0; i < columns.length; i++) {
                    ColumnDescriptor t = wanted.get(i);
                    List<Object> ids = idPath(target, t.getPath());
                    ColumnDescriptor c = byIds.get(ids);
                    kinds[i] = Kind.of(t.getPrimitiveType().getPrimitiveTypeName());
                    if (c == null) {
                        boolean wholeColumnMissing = !topLevel.contains(ids.get(0))
                                && target.getType(t.getPath()[0]).getRepetition() == Type.Repetition.OPTIONAL;
                        if (!wholeColumnMissing) {
                            reader.close();
                            return null;
                        }
                    } else if (!sameColumn(c, t)) {
                        reader.close();
                        return null;
                    } else {
                        columns[i] = c;
                        read.add(c);
                    }
                }
                reader.setRequestedSchema(read); // a dropped column's chunks are never fetched
                return new Source(
                        reader,
                        file.location(),
                        columns,
                        kinds,
                        topLevelColumn(target, MetadataColumns.ROW_ID.fieldId()),
                        topLevelColumn(target, MetadataColumns.LAST_UPDATED_SEQUENCE_NUMBER.fieldId()));
            } catch (IOException | RuntimeException e) {
                reader.close();
                throw e;
            }
        }

        /**
         * Gives the rows copied from here the lineage of {@code file}, this source's data file, where
         * the file does not hold it: as Iceberg's readers give it, the file's first row id plus the
         * row's position and the file's data sequence number (nulls for a file not committed yet,
         * whose rows are new). A target without the lineage columns takes none.
         */
        public Source inheritLineage(DataFile file) {
            firstRowId = file.firstRowId();
            fileSequenceNumber = file.dataSequenceNumber();
            return this;
        }

        /**
         * Keeps the values of these target columns (top-level, not repeated: the key columns and the
         * sequence number) from each row copied, for {@link #kept}: a long, an int or a
         * {@link org.apache.parquet.io.api.Binary} as Parquet holds it, or null.
         */
        public void keepValuesOf(int... targetColumns) {
            kept = new Object[targetColumns.length];
            for (int slot = 0; slot < targetColumns.length; slot++) {
                slots[targetColumns[slot]] = slot;
            }
        }

        /** The kept value of the row copied last: the {@code slot}'th column given to {@link #keepValuesOf}. */
        public Object kept(int slot) {
            return kept[slot];
        }

        /** Skips the rows before {@code position} (deleted, or taken from another file). */
        public void moveTo(long position) throws IOException {
            if (position < next) {
                throw new IllegalStateException("rows of " + location + " must be copied in position order: asked for "
                        + position + " after " + next);
            }
            if (position >= groupEnd) {
                // Row groups wholly before the position are never read.
                long start = groupEnd;
                while (position >= groupEnd) {
                    group++;
                    if (group >= reader.getRowGroups().size()) {
                        throw new IllegalStateException(location + " has no row at position " + position);
                    }
                    start = groupEnd;
                    groupEnd += reader.getRowGroups().get(group).getRowCount();
                }
                PageReadStore pages = reader.readRowGroup(group);
                for (int i = 0; i < columns.length; i++) {
                    readers[i] = columns[i] == null
                            ? null
                            : new ColumnReaderImpl(
                                    columns[i], pages.getPageReader(columns[i]), NO_CONVERTER, writerVersion);
                }
                next = start;
            }
            for (; next < position; next++) {
                for (ColumnReader r : readers) {
                    if (r != null) {
                        skipRow(r);
                    }
                }
            }
        }

        /** Copies the row at the current position into {@code out} (one writer per target column). */
        void copyRow(ColumnWriter[] out, CopyMetrics metrics) {
            for (int i = 0; i < readers.length; i++) {
                ColumnReader r = readers[i];
                if (i == rowIdColumn || i == lastUpdatedColumn) {
                    copyLineage(r, i == rowIdColumn, out[i]);
                } else if (r == null) {
                    out[i].writeNull(0, 0);
                } else if (slots[i] >= 0) {
                    kept[slots[i]] = copyKept(r, kinds[i], out[i]);
                } else {
                    copyValues(r, kinds[i], out[i], metrics.of(i));
                }
            }
            next++;
        }

        /**
         * The row's lineage value: the one the file holds, else the one it inherits from the file
         * (see {@link #inheritLineage}), else null. Written as a value, so the row keeps it in the
         * new file, whose own first row id and sequence number are not the row's.
         */
        private void copyLineage(ColumnReader r, boolean rowId, ColumnWriter w) {
            Long value = null;
            if (r != null) {
                if (r.getCurrentDefinitionLevel() == r.getDescriptor().getMaxDefinitionLevel()) {
                    value = r.getLong();
                }
                r.consume();
            }
            if (value == null && firstRowId != null) {
                value = rowId ? firstRowId + next : fileSequenceNumber;
            }
            if (value == null) {
                w.writeNull(0, 0);
            } else {
                w.write(value, 0, 1);
            }
        }

        /** One row's values of one column: the current value and those that repeat within the row. */
        private static void copyValues(ColumnReader r, Kind kind, ColumnWriter w, Object nanCounter) {
            int maxDl = r.getDescriptor().getMaxDefinitionLevel();
            do {
                int rl = r.getCurrentRepetitionLevel();
                int dl = r.getCurrentDefinitionLevel();
                if (dl < maxDl) {
                    w.writeNull(rl, dl);
                } else {
                    switch (kind) {
                        case BOOLEAN -> w.write(r.getBoolean(), rl, dl);
                        case INT32 -> w.write(r.getInteger(), rl, dl);
                        case INT64 -> w.write(r.getLong(), rl, dl);
                        case FLOAT -> {
                            float v = r.getFloat();
                            ((FloatFieldMetrics.Builder) nanCounter).addValue(v);
                            w.write(v, rl, dl);
                        }
                        case DOUBLE -> {
                            double v = r.getDouble();
                            ((DoubleFieldMetrics.Builder) nanCounter).addValue(v);
                            w.write(v, rl, dl);
                        }
                        case BINARY -> w.write(r.getBinary(), rl, dl);
                    }
                }
                r.consume();
                // At a column chunk's end the reader reports repetition level 0: the row is done.
            } while (r.getCurrentRepetitionLevel() > 0);
        }

        /** One row's one value of a top-level, not repeated column, copied and returned (null if null). */
        private static Object copyKept(ColumnReader r, Kind kind, ColumnWriter w) {
            int dl = r.getCurrentDefinitionLevel();
            Object value = null;
            if (dl < r.getDescriptor().getMaxDefinitionLevel()) {
                w.writeNull(0, dl);
            } else {
                switch (kind) {
                    case INT32 -> {
                        int v = r.getInteger();
                        w.write(v, 0, dl);
                        value = v;
                    }
                    case INT64 -> {
                        long v = r.getLong();
                        w.write(v, 0, dl);
                        value = v;
                    }
                    case BINARY -> {
                        org.apache.parquet.io.api.Binary v = r.getBinary();
                        w.write(v, 0, dl);
                        value = v;
                    }
                    default ->
                        throw new IllegalArgumentException(
                                "a " + kind + " column cannot be kept: " + r.getDescriptor());
                }
            }
            r.consume();
            return value;
        }

        /** One row's values of one column, passed over: a value present must be skipped before it is consumed. */
        private static void skipRow(ColumnReader r) {
            int maxDl = r.getDescriptor().getMaxDefinitionLevel();
            do {
                if (r.getCurrentDefinitionLevel() == maxDl) {
                    r.skip();
                }
                r.consume();
            } while (r.getCurrentRepetitionLevel() > 0);
        }

        @Override
        public void close() throws IOException {
            reader.close();
        }
    }

    /** The target column that is the top-level field {@code fieldId}, or -1. */
    private static int topLevelColumn(MessageType target, int fieldId) {
        List<ColumnDescriptor> columns = target.getColumns();
        for (int i = 0; i < columns.size(); i++) {
            ColumnDescriptor c = columns.get(i);
            Type field = target.getType(c.getPath()[0]);
            if (c.getPath().length == 1
                    && field.getId() != null
                    && field.getId().intValue() == fieldId) {
                return i;
            }
        }
        return -1;
    }

    /** The target column that is the top-level column {@code name}. */
    public static int columnIndex(MessageType target, String name) {
        List<ColumnDescriptor> columns = target.getColumns();
        for (int i = 0; i < columns.size(); i++) {
            String[] path = columns.get(i).getPath();
            if (path.length == 1 && path[0].equals(name)) {
                return i;
            }
        }
        throw new IllegalArgumentException("the table has no top-level column " + name);
    }

    /**
     * A kept Parquet value (see {@link Source#keepValuesOf}) as Iceberg's generic records hold it, for
     * the key columns' types: a String, Long, Integer, BigDecimal or ByteBuffer.
     */
    public static Object icebergValue(Object kept, org.apache.iceberg.types.Type type) {
        if (kept == null) {
            return null;
        }
        return switch (type.typeId()) {
            case STRING -> ((org.apache.parquet.io.api.Binary) kept).toStringUsingUTF8();
            case LONG, INTEGER -> kept;
            case DECIMAL -> {
                int scale = ((org.apache.iceberg.types.Types.DecimalType) type).scale();
                if (kept instanceof org.apache.parquet.io.api.Binary b) {
                    yield new java.math.BigDecimal(new java.math.BigInteger(b.getBytes()), scale);
                }
                yield java.math.BigDecimal.valueOf(((Number) kept).longValue(), scale);
            }
            case BINARY, FIXED -> java.nio.ByteBuffer.wrap(((org.apache.parquet.io.api.Binary) kept).getBytes());
            default -> throw new IllegalArgumentException("a key column of type " + type + " cannot be kept");
        };
    }

    /** Columns are the same when their types and levels are: the values and levels copy as they are. */
    private static boolean sameColumn(ColumnDescriptor file, ColumnDescriptor target) {
        PrimitiveType a = file.getPrimitiveType();
        PrimitiveType b = target.getPrimitiveType();
        return a.getPrimitiveTypeName() == b.getPrimitiveTypeName()
                && a.getTypeLength() == b.getTypeLength()
                && java.util.Objects.equals(a.getLogicalTypeAnnotation(), b.getLogicalTypeAnnotation())
                && file.getMaxDefinitionLevel() == target.getMaxDefinitionLevel()
                && file.getMaxRepetitionLevel() == target.getMaxRepetitionLevel();
    }

    /**
     * The field ids down a column's path (a list's or map's repeated level, which has no id, by its
     * name); null if any other level lacks an id.
     */
    private static List<Object> idPath(MessageType schema, String[] path) {
        List<Object> ids = new ArrayList<>();
        GroupType parent = schema;
        for (int i = 0; i < path.length; i++) {
            Type t = parent.getType(path[i]);
            if (t.getId() != null) {
                ids.add(t.getId().intValue());
            } else if (t.isRepetition(Type.Repetition.REPEATED)) {
                ids.add(path[i]); // the repeated level of a list or a map has no id: its name is fixed
            } else {
                return null;
            }
            if (i < path.length - 1) {
                parent = t.asGroupType();
            }
        }
        return ids;
    }

    /** The new file's NaN counts for float and double columns, as Iceberg's own writers keep them. */
    static final class CopyMetrics {
        private final Object[] counters;

        CopyMetrics(MessageType target) {
            List<ColumnDescriptor> columns = target.getColumns();
            counters = new Object[columns.size()];
            for (int i = 0; i < counters.length; i++) {
                PrimitiveType t = columns.get(i).getPrimitiveType();
                if (t.getId() == null) {
                    continue;
                }
                int id = t.getId().intValue();
                switch (t.getPrimitiveTypeName()) {
                    case FLOAT -> counters[i] = new FloatFieldMetrics.Builder(id);
                    case DOUBLE -> counters[i] = new DoubleFieldMetrics.Builder(id);
                    default -> {}
                }
            }
        }

        Object of(int column) {
            return counters[column];
        }

        Stream<FieldMetrics<?>> build() {
            List<FieldMetrics<?>> out = new ArrayList<>();
            for (Object c : counters) {
                if (c instanceof FloatFieldMetrics.Builder f) {
                    out.add(f.build());
                } else if (c instanceof DoubleFieldMetrics.Builder d) {
                    out.add(d.build());
                }
            }
            return out.stream();
        }
    }

    /**
     * Iceberg's view of one output file's rows: each row written is "the row the source stands at",
     * copied into the file's column writers.
     */
    private static final class CopyingValueWriter implements ParquetValueWriter<Source> {
        private final List<ColumnDescriptor> columns;
        private final ColumnWriter[] writers;
        private final CopyMetrics metrics;

        CopyingValueWriter(MessageType type) {
            this.columns = type.getColumns();
            this.writers = new ColumnWriter[columns.size()];
            this.metrics = new CopyMetrics(type);
        }

        @Override
        public void write(int repetitionLevel, Source source) {
            source.copyRow(writers, metrics);
        }

        @Override
        public List<TripleWriter<?>> columns() {
            return List.of(); // only Iceberg's own nested writers use these; this writer has no children
        }

        @Override
        public void setColumnStore(ColumnWriteStore store) {
            for (int i = 0; i < writers.length; i++) {
                writers[i] = store.getColumnWriter(columns.get(i));
            }
        }

        @Override
        public Stream<FieldMetrics<?>> metrics() {
            return metrics.build();
        }
    }

    /**
     * Whether copied rows may share a file with records ({@link #recordsOrCopies}) for this schema:
     * when no column has metrics kept beside Parquet's own statistics (float and double columns'
     * NaN counts, variants, geospatial bounds), which both writers would report for the same column.
     */
    public static boolean mixes(Schema schema) {
        return TypeUtil.indexById(schema.asStruct()).values().stream()
                .map(field -> field.type().typeId())
                .noneMatch(t -> t == org.apache.iceberg.types.Type.TypeID.FLOAT
                        || t == org.apache.iceberg.types.Type.TypeID.DOUBLE
                        || t == org.apache.iceberg.types.Type.TypeID.VARIANT
                        || t == org.apache.iceberg.types.Type.TypeID.GEOMETRY
                        || t == org.apache.iceberg.types.Type.TypeID.GEOGRAPHY);
    }

    /**
     * New data files of {@code table} (whose schema {@link #mixes}) holding, in any mix and order,
     * Iceberg records, written by Iceberg's generic Parquet writer, and rows copied from
     * {@link Source}s, each the row its source stands at: a merge's new rows and the rows it moves
     * out of the small files it folds, in key order. Written as Iceberg's generic writer factory
     * writes a table's data files: the table's properties, then {@code settings} over them, its
     * metrics configuration and its sort order.
     */
    public static FileWriterFactory<Object> recordsOrCopies(Table table, Map<String, String> settings) {
        return recordsOrCopies(table, table.schema(), settings);
    }

    /**
     * As {@link #recordsOrCopies(Table, Map)}, files with the columns of {@code schema} (the table's,
     * or the table's and the lineage columns), whose records must be rows of that schema.
     */
    public static FileWriterFactory<Object> recordsOrCopies(Table table, Schema schema, Map<String, String> settings) {
        if (!mixes(schema)) {
            throw new IllegalArgumentException("copied rows cannot share files with records in a table with float,"
                    + " double or variant columns: " + schema);
        }
        return dataWriters((file, spec, partition) -> Parquet.writeData(file.encryptingOutputFile())
                .forTable(table)
                .schema(schema)
                .setAll(settings)
                .metricsConfig(MetricsConfig.forTable(table))
                .withSpec(spec)
                .withPartition(partition)
                .withKeyMetadata(file.keyMetadata())
                .withSortOrder(table.sortOrder())
                .createWriterFunc(type -> new RecordOrCopyWriter(
                        GenericParquetWriter.create(schema, type), new CopyingValueWriter(type))));
    }

    /**
     * One file's rows from either writer: both write into the same column writers, one row at a
     * time, so rows of each kind can follow each other in any order. Only the record writer keeps
     * metrics of its own ({@link #mixes} rules out the columns the copy keeps them for).
     */
    private static final class RecordOrCopyWriter implements ParquetValueWriter<Object> {
        private final ParquetValueWriter<Record> records;
        private final CopyingValueWriter copies;

        RecordOrCopyWriter(ParquetValueWriter<Record> records, CopyingValueWriter copies) {
            this.records = records;
            this.copies = copies;
        }

        @Override
        public void write(int repetitionLevel, Object row) {
            if (row instanceof Source source) {
                copies.write(repetitionLevel, source);
            } else {
                records.write(repetitionLevel, (Record) row);
            }
        }

        @Override
        public List<TripleWriter<?>> columns() {
            return records.columns();
        }

        @Override
        public void setColumnStore(ColumnWriteStore store) {
            records.setColumnStore(store);
            copies.setColumnStore(store);
        }

        @Override
        public Stream<FieldMetrics<?>> metrics() {
            return records.metrics();
        }
    }

    /** New data files of {@code table} whose rows are copied from {@link Source}s. */
    public static FileWriterFactory<Source> writers(Table table) {
        return writers(table, table.schema());
    }

    /**
     * New data files of {@code table} with the columns of {@code schema} (the table's, or the table's
     * and the lineage columns), whose rows are copied from {@link Source}s.
     */
    public static FileWriterFactory<Source> writers(Table table, Schema schema) {
        return dataWriters((file, spec, partition) -> Parquet.writeData(file.encryptingOutputFile())
                .forTable(table)
                .schema(schema)
                .withSpec(spec)
                .withPartition(partition)
                .withKeyMetadata(file.keyMetadata())
                .createWriterFunc(CopyingValueWriter::new));
    }

    /** How one new data file's Parquet writer is set up. */
    private interface DataWriterSetup {
        Parquet.DataWriteBuilder of(EncryptedOutputFile file, PartitionSpec spec, StructLike partition);
    }

    /** Writers of data files only, each set up by {@code setup}: copied rows are never deletes. */
    private static <T> FileWriterFactory<T> dataWriters(DataWriterSetup setup) {
        return new FileWriterFactory<>() {
            @Override
            public DataWriter<T> newDataWriter(EncryptedOutputFile file, PartitionSpec spec, StructLike partition) {
                try {
                    // Each new file's name is new (OutputFileFactory: an operation id and a counter):
                    // no HEAD request to ask S3 whether it exists first, as CREATE would send.
                    return setup.of(file, spec, partition).overwrite().build();
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }

            @Override
            public EqualityDeleteWriter<T> newEqualityDeleteWriter(
                    EncryptedOutputFile file, PartitionSpec spec, StructLike partition) {
                throw new UnsupportedOperationException("copied rows are data rows only");
            }

            @Override
            public PositionDeleteWriter<T> newPositionDeleteWriter(
                    EncryptedOutputFile file, PartitionSpec spec, StructLike partition) {
                throw new UnsupportedOperationException("copied rows are data rows only");
            }
        };
    }

    /** Iceberg's file as parquet-java's (Iceberg's own adapter is not public). */
    static org.apache.parquet.io.InputFile parquetFile(org.apache.iceberg.io.InputFile file) {
        return new org.apache.parquet.io.InputFile() {
            @Override
            public long getLength() {
                return file.getLength();
            }

            @Override
            public SeekableInputStream newStream() {
                org.apache.iceberg.io.SeekableInputStream in = file.newStream();
                return new DelegatingSeekableInputStream(in) {
                    @Override
                    public long getPos() throws IOException {
                        return in.getPos();
                    }

                    @Override
                    public void seek(long position) throws IOException {
                        in.seek(position);
                    }
                };
            }
        };
    }

    private static final PrimitiveConverter NO_CONVERTER = new PrimitiveConverter() {};
}
