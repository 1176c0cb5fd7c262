package dev.ddb2iceberg.catalog;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/** An error Glue answered a call with: its HTTP status, its error code (AccessDeniedException, ...) and message. */
public final class GlueException extends RuntimeException {
    private final int status;
    private final String code;

    private GlueException(String operation, int status, String code, String message) {
        super("Glue " + operation + " failed: " + code + " (HTTP " + status + "): " + message);
        this.status = status;
        this.code = code;
    }

    /**
     * From an error response: the code is the {@code x-amzn-ErrorType} header or the body's
     * {@code __type}, without a namespace ({@code com.amazonaws.glue#}) or a trailing {@code :<url>};
     * a body that is not JSON (a proxy's, or an unimplemented operation's HTML page) keeps the HTTP
     * status as its code.
     */
    static GlueException of(String operation, int status, String header, String body) {
        String type = header;
        String message = body.strip();
        try {
            JsonNode json = new ObjectMapper().readTree(body);
            if (json != null && json.isObject()) {
                if (type == null) {
                    type = json.path("__type").asText(null);
                }
                message = json.has("message")
                        ? json.path("message").asText()
                        : json.path("Message").asText(message);
            }
        } catch (Exception notJson) {
            message = message.replaceAll("\\s+", " ");
            message = message.length() > 200 ? message.substring(0, 200) + "…" : message;
        }
        String code = type == null ? String.valueOf(status) : type;
        code = code.substring(code.indexOf('#') + 1);
        if (code.indexOf(':') > 0) {
            code = code.substring(0, code.indexOf(':'));
        }
        return new GlueException(operation, status, code, message);
    }

    public int status() {
        return status;
    }

    /** The error code, such as {@code EntityNotFoundException} or {@code AccessDeniedException}. */
    public String code() {
        return code;
    }

    public boolean notFound() {
        return code.equals("EntityNotFoundException");
    }

    public boolean accessDenied() {
        return code.equals("AccessDeniedException");
    }
}
