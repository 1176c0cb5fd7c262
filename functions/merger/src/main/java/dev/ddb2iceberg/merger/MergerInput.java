package dev.ddb2iceberg.merger;

import com.fasterxml.jackson.annotation.JsonSetter;
import com.fasterxml.jackson.annotation.Nulls;
import java.util.List;

/**
 * The merger's input, all optional: {@code maxChanges} (this run's bound instead of
 * MAX_CHANGES_PER_RUN; the run is then one merge of that bound, even with a backlog) and
 * {@code scheduledTime} (the schedule's time for this run, which bounds a continuous run, and a
 * scheduled run's further merges while it catches up with a backlog); or, to load a DynamoDB export instead, {@code loadExport} (its s3:// folder) with
 * {@code keys}, {@code marginMinutes} and {@code skipHandOffCheck}.
 */
public record MergerInput(
        Integer maxChanges,
        String loadExport,
        @JsonSetter(nulls = Nulls.SET) List<String> keys,
        Integer marginMinutes,
        Boolean skipHandOffCheck,
        @JsonSetter(nulls = Nulls.SET) String scheduledTime) {}
