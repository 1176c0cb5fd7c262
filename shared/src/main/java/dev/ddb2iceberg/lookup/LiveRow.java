package dev.ddb2iceberg.lookup;

import java.math.BigInteger;
import org.apache.iceberg.FileScanTask;

/**
 * The row an item currently has in the table: where it is and which change wrote it ({@code
 * sequence}, as the key index holds it: a number, compared as one).
 */
public record LiveRow(FileScanTask task, long position, BigInteger sequence) {}
