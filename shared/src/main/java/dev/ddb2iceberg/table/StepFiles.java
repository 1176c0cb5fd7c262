package dev.ddb2iceberg.table;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import org.apache.iceberg.Table;
import org.apache.iceberg.exceptions.NotFoundException;

/**
 * The files the steps of a fanned-out job (the parallel export load, the fanned-out merge) keep
 * between them, beside the table's derived files: a plan as JSON, and each worker's record by Java
 * serialization (Iceberg's data and delete files are Serializable), read and written through the
 * table's own file IO.
 */
public final class StepFiles {
    private static final ObjectMapper JSON = new ObjectMapper();

    private StepFiles() {}

    public static void writeJson(Table table, String path, Object value) {
        try {
            writeBytes(table, path, JSON.writeValueAsBytes(value));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static <T> T readJson(Table table, String path, Class<T> type, String ifMissing) {
        try {
            return JSON.readValue(readBytes(table, path, ifMissing), type);
        } catch (IOException e) {
            throw new IllegalStateException(path + " is not readable: " + e.getMessage(), e);
        }
    }

    public static void writeBytes(Table table, String path, byte[] bytes) {
        try (OutputStream out = table.io().newOutputFile(path).createOrOverwrite()) {
            out.write(bytes);
        } catch (IOException e) {
            throw new UncheckedIOException("could not write " + path, e);
        }
    }

    /** The file's bytes; a missing file is an IllegalStateException saying {@code ifMissing}. */
    public static byte[] readBytes(Table table, String path, String ifMissing) {
        try (InputStream in = table.io().newInputFile(path).newStream()) {
            return in.readAllBytes();
        } catch (NotFoundException e) {
            throw new IllegalStateException(ifMissing + " (" + path + " is missing)", e);
        } catch (IOException e) {
            throw new UncheckedIOException("could not read " + path, e);
        }
    }

    /** Whether the file is there. */
    public static boolean exists(Table table, String path) {
        return table.io().newInputFile(path).exists();
    }

    public static byte[] serialize(Object o) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(o);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    public static Object deserialize(byte[] bytes) {
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes))) {
            return in.readObject();
        } catch (IOException | ClassNotFoundException e) {
            throw new IllegalStateException("a worker's record is damaged: " + e.getMessage(), e);
        }
    }
}
