package dev.ddb2iceberg.maintenance;

import java.util.Locale;

/** What a maintenance run can do; a run does all of them unless its input names some. */
public enum MaintenanceTask {
    COMPACT,
    MANIFESTS,
    EXPIRE,
    ORPHANS;

    public String inputName() {
        return name().toLowerCase(Locale.ROOT);
    }

    public static MaintenanceTask fromInput(String name) {
        for (MaintenanceTask t : values()) {
            if (t.inputName().equals(name)) {
                return t;
            }
        }
        throw new IllegalArgumentException(
                "Unknown maintenance task '" + name + "'; the tasks are compact, manifests," + " expire and orphans.");
    }
}
