package dev.ddb2iceberg.observe;

import java.util.List;
import java.util.Map;
import org.slf4j.MDC;
import org.slf4j.Marker;
import org.slf4j.event.KeyValuePair;
import org.slf4j.event.Level;
import org.slf4j.event.LoggingEvent;
import org.slf4j.helpers.FormattingTuple;
import org.slf4j.helpers.LegacyAbstractLogger;
import org.slf4j.helpers.MessageFormatter;
import org.slf4j.spi.LoggingEventAware;

/**
 * One named logger. Classic calls ({@code LOG.info("… {}", x)}) and fluent ones with key-value
 * pairs ({@code LOG.atInfo().addKeyValue("snapshotId", id).log("…")}) both end in {@link LogLine},
 * which adds the MDC (the function and request id the handlers put there) and the error with its
 * causes.
 */
final class PipelineLogger extends LegacyAbstractLogger implements LoggingEventAware {
    private static final long serialVersionUID = 1L;

    private transient LogSettings settingsSeen;
    private transient Level level;

    PipelineLogger(String name) {
        this.name = name;
    }

    /** The level for this logger under the current settings (recomputed only when they change). */
    private Level level() {
        LogSettings settings = LogSettings.current();
        if (settings != settingsSeen) {
            level = settings.levelFor(name);
            settingsSeen = settings;
        }
        return level;
    }

    private boolean enabled(Level l) {
        return l.toInt() >= level().toInt();
    }

    @Override
    public boolean isTraceEnabled() {
        return enabled(Level.TRACE);
    }

    @Override
    public boolean isDebugEnabled() {
        return enabled(Level.DEBUG);
    }

    @Override
    public boolean isInfoEnabled() {
        return enabled(Level.INFO);
    }

    @Override
    public boolean isWarnEnabled() {
        return enabled(Level.WARN);
    }

    @Override
    public boolean isErrorEnabled() {
        return enabled(Level.ERROR);
    }

    @Override
    protected String getFullyQualifiedCallerName() {
        return null;
    }

    @Override
    protected void handleNormalizedLoggingCall(Level l, Marker marker, String pattern, Object[] args, Throwable error) {
        write(l, MessageFormatter.basicArrayFormat(pattern, args), List.of(), error);
    }

    /** The fluent API's entry: the event carries key-value pairs besides the message. */
    @Override
    public void log(LoggingEvent event) {
        if (!enabled(event.getLevel())) {
            return;
        }
        Object[] args = event.getArgumentArray();
        FormattingTuple tuple = MessageFormatter.arrayFormat(event.getMessage(), args);
        Throwable error = event.getThrowable() != null ? event.getThrowable() : tuple.getThrowable();
        List<KeyValuePair> pairs = event.getKeyValuePairs() == null ? List.of() : event.getKeyValuePairs();
        write(event.getLevel(), tuple.getMessage(), pairs, error);
    }

    private void write(Level l, String message, List<KeyValuePair> pairs, Throwable error) {
        LogSettings settings = LogSettings.current();
        Map<String, String> context = MDC.getCopyOfContextMap();
        String line = new LogLine(l, name, message, context, pairs, error).format(settings.format());
        settings.out().println(line);
    }
}
