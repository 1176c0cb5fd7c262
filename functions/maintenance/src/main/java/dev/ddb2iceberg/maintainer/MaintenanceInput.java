package dev.ddb2iceberg.maintainer;

import java.util.List;

/**
 * The maintenance function's input, all optional: {@code tasks} (default all of compact,
 * manifests, expire, orphans), {@code dryRun} (report what would change, change nothing) and
 * {@code status} (only a status report).
 */
public record MaintenanceInput(List<String> tasks, Boolean dryRun, Boolean status) {}
