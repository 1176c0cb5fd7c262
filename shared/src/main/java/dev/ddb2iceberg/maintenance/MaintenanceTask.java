package dev.ddb2iceberg.maintenance;

import java.util.Locale;

/** What a maintenance run can do; a run does all of them unless its input names some. */
public enum MaintenanceTask {
    COMPACT,
    MANIFESTS,
    EXPIRE,
    ORPHANS,
    /** Old Glue table versions of the table ({@link GlueTableVersions}); nothing for other catalogs. */
    CATALOG_VERSIONS;

    public String inputName() {
        return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    public static MaintenanceTask fromInput(String name) {
        for (MaintenanceTask t : values()) {
            if (t.inputName().equals(name)) {
                return t;
            }
        }
        throw new IllegalArgumentException("Unknown maintenance task '" + name
                + "'; the tasks are compact, manifests, expire, orphans" + " and catalog-versions.");
    }
}
