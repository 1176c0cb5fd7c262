package dev.ddb2iceberg.lookup;

import org.apache.iceberg.data.Record;

/** Where a written row went: its data file and position in it (what a lookup records of a merge). */
public record WrittenRow(Record row, String file, long position) {}
