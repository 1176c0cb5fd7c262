package dev.ddb2iceberg.maintenance;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The files a table's metadata references, asked about by the spelling a store's listing gives.
 *
 * <p>A listing and the metadata may spell one object differently: {@code s3a://} or {@code s3n://}
 * for {@code s3://}, empty path segments ({@code data//x}, which Iceberg wrote for an unpartitioned
 * table's delete files before 2026-12-08 and which some stores and every reader that normalises
 * paths turn into {@code data/x}), or percent-encoded characters. Orphan removal must never delete
 * a referenced file, so a listed file is kept when its canonical spelling matches any referenced
 * file's; a match that is not exact is reported ({@link #spelledDifferently}) so the log can say
 * why the file was kept.
 */
final class ReferencedFiles {
    private static final Pattern SLASHES = Pattern.compile("/{2,}");
    /** Each referenced file's canonical spelling, mapped to its spelling in the metadata. */
    private final Map<String, String> byCanonical = new HashMap<>();

    /** Each referenced file's spelling in the metadata, with the s3:// scheme. */
    private final Set<String> exact = new HashSet<>();

    void add(String location) {
        exact.add(withS3Scheme(location));
        byCanonical.putIfAbsent(canonical(location), location);
    }

    /** True when the listed file is, by any spelling, one the metadata references. */
    boolean references(String listed) {
        return exact.contains(withS3Scheme(listed)) || byCanonical.containsKey(canonical(listed));
    }

    /**
     * How the metadata spells a listed file that it references under another spelling; null when
     * the spellings are the same or the file is not referenced.
     */
    String spelledDifferently(String listed) {
        if (exact.contains(withS3Scheme(listed))) {
            return null;
        }
        return byCanonical.get(canonical(listed));
    }

    /** s3a:// and s3n:// name the same objects as s3://. */
    static String withS3Scheme(String uri) {
        if (uri.startsWith("s3a://") || uri.startsWith("s3n://")) {
            return "s3://" + uri.substring(6);
        }
        return uri;
    }

    /**
     * One spelling for each object: the s3:// scheme, the key's runs of '/' as one, and its
     * percent-escapes decoded (a malformed escape is left as it is).
     */
    static String canonical(String uri) {
        String s = withS3Scheme(uri);
        int scheme = s.indexOf("://");
        int keyStart = scheme < 0 ? 0 : s.indexOf('/', scheme + 3);
        if (keyStart < 0) {
            return s;
        }
        String key = SLASHES.matcher(s.substring(keyStart)).replaceAll("/");
        return s.substring(0, keyStart) + percentDecoded(key);
    }

    /** Percent-escapes as UTF-8 bytes; '+' stays '+' (a key is a path, not a form field). */
    private static String percentDecoded(String key) {
        if (key.indexOf('%') < 0) {
            return key;
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream(key.length());
        byte[] bytes = key.getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < bytes.length; i++) {
            int hi = i + 2 < bytes.length && bytes[i] == '%' ? Character.digit(bytes[i + 1], 16) : -1;
            int lo = hi >= 0 ? Character.digit(bytes[i + 2], 16) : -1;
            if (lo >= 0) {
                out.write(hi * 16 + lo);
                i += 2;
            } else {
                out.write(bytes[i]);
            }
        }
        return out.toString(StandardCharsets.UTF_8);
    }
}
