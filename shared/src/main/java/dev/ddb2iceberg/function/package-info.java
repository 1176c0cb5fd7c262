/**
 * What the Lambda handlers share, so that each is only typed input, one library call, typed output:
 * {@link dev.ddb2iceberg.function.FunctionInput} reads an input into a record and refuses unknown
 * fields; {@link dev.ddb2iceberg.function.FunctionCall} runs an invocation (its log context, the
 * error log line, the JSON result); {@link dev.ddb2iceberg.function.PipelineSettings} is what every
 * function reads from its environment; and the functions' own work, with its policy (deadlines,
 * metrics, the change history's maintenance), is in {@link dev.ddb2iceberg.function.MergeRun},
 * {@link dev.ddb2iceberg.function.ExportLoadSteps} and {@link dev.ddb2iceberg.function.MaintenanceRun}.
 * Nothing in the library depends on this package.
 */
package dev.ddb2iceberg.function;
