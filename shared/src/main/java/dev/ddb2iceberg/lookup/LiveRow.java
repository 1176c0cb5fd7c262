package dev.ddb2iceberg.lookup;

import org.apache.iceberg.FileScanTask;

/** The row an item currently has in the table: where it is and which change wrote it. */
public record LiveRow(FileScanTask task, long position, String paddedSequence) {}
