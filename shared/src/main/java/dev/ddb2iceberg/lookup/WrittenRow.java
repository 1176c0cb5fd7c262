package dev.ddb2iceberg.lookup;

import java.math.BigInteger;

/**
 * Where a merge wrote a row, as the key index records it: the row's key (encoded as {@link
 * dev.ddb2iceberg.index.IndexKeys#encode} encodes it), its sequence number, and its data file and
 * position there. The writer takes the key and the sequence number as it writes each row, while the
 * row is still in the CPU's caches; taken afterwards, from all of a merge's rows at once, each row
 * had to be fetched from memory again (BENCHMARKS.md, twenty-fourth session).
 */
public record WrittenRow(byte[] key, BigInteger sequence, String file, long position) {}
