package dev.ddb2iceberg.testkit;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;

/** A clock only the test moves, and only forward: continuous mode's waits and deadlines run on it. */
public final class MovableClock extends Clock {
    private Instant now;

    public MovableClock(Instant now) {
        this.now = now;
    }

    /** Moves the clock to {@code t}, unless it is already past it. */
    public void set(Instant t) {
        if (t.isAfter(now)) {
            now = t;
        }
    }

    public void advance(Duration d) {
        now = now.plus(d);
    }

    @Override
    public Instant instant() {
        return now;
    }

    @Override
    public ZoneId getZone() {
        return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
        return this;
    }
}
