package dev.ddb2iceberg.embedded;

import java.nio.file.Files;
import java.nio.file.Path;

/** Finds files of the project (such as the sample events in {@code events/}) from any module's folder. */
public final class ProjectFiles {
    private ProjectFiles() {}

    /** The project's top folder: the nearest parent that holds {@code events/} and {@code pom.xml}. */
    public static Path root() {
        Path dir = Path.of("").toAbsolutePath();
        for (Path p = dir; p != null; p = p.getParent()) {
            if (Files.isDirectory(p.resolve("events")) && Files.isRegularFile(p.resolve("pom.xml"))) {
                return p;
            }
        }
        throw new IllegalStateException("no project folder (with events/ and pom.xml) above " + dir);
    }

    /** A sample event file, e.g. {@code event("stager-batch.json")}. */
    public static Path event(String name) {
        return root().resolve("events").resolve(name);
    }
}
