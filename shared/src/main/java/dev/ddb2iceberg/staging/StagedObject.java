package dev.ddb2iceberg.staging;

import java.time.Instant;

/** A staged object as listed: its name, compressed size and when S3 stored it. */
public record StagedObject(StagedObjectName name, long size, Instant lastModified) {}
