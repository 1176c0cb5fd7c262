package dev.ddb2iceberg.benchmarks;

import java.io.IOException;
import java.net.URL;
import java.util.Collections;
import java.util.Enumeration;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.apache.hadoop.conf.Configuration;

/**
 * Runs a benchmark's function code as the Lambda packages hold it: without the Hadoop defaults files
 * the packages leave out ({@code core-default.xml}, {@code mapred-default.xml}: the shade plugin's
 * filters in the root {@code pom.xml}). Iceberg's Parquet writer makes a new Hadoop {@code
 * Configuration} for every data file, which on the benchmarks' class path parses those files (about
 * 2.5 % of a steady merge's CPU in the sixteenth session's profile) and in Lambda finds none.
 *
 * <p>A {@code Configuration} looks its files up through the context class loader of the thread that
 * makes it, and a thread starts with the context class loader of the thread that starts it. So a
 * loader that hides the two files, set on the main thread before the benchmark starts anything,
 * holds for every pool the merges start. Classes and every other resource come from the loader it
 * replaces.
 */
final class AsPackaged {
    /** What the root pom.xml's shade filters leave out of the Lambda packages. */
    static final Set<String> LEFT_OUT = Set.of("core-default.xml", "mapred-default.xml");

    private AsPackaged() {}

    /**
     * Hides the files from this thread and the threads it starts, and checks on a new thread that a
     * {@code Configuration} no longer reads {@code core-default.xml}: a benchmark that would measure
     * the parse stops here instead.
     */
    static void hideWhatThePackagesLeaveOut() {
        Thread main = Thread.currentThread();
        ClassLoader loader = main.getContextClassLoader();
        main.setContextClassLoader(new Hiding(loader != null ? loader : AsPackaged.class.getClassLoader()));
        String defaultFs;
        try {
            defaultFs = CompletableFuture.supplyAsync(
                            () -> new Configuration().get("fs.defaultFS"), command -> new Thread(command).start())
                    .get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while checking Hadoop's defaults are hidden", e);
        } catch (ExecutionException e) {
            throw new IllegalStateException("could not check Hadoop's defaults are hidden", e.getCause());
        }
        if (defaultFs != null) {
            throw new IllegalStateException(
                    "a Configuration made on a new thread still read core-default.xml (fs.defaultFS=" + defaultFs
                            + "): the benchmark would measure what the Lambda packages do not hold");
        }
    }

    /** A class loader that finds none of {@link #LEFT_OUT} and asks its parent for everything else. */
    private static final class Hiding extends ClassLoader {
        Hiding(ClassLoader parent) {
            super(parent);
        }

        @Override
        public URL getResource(String name) {
            return LEFT_OUT.contains(name) ? null : super.getResource(name);
        }

        @Override
        public Enumeration<URL> getResources(String name) throws IOException {
            return LEFT_OUT.contains(name) ? Collections.emptyEnumeration() : super.getResources(name);
        }
    }
}
