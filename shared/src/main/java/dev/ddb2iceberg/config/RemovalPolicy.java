package dev.ddb2iceberg.config;

import java.util.Locale;

/**
 * What a merge does with the stream's removals (TTL_EXPIRIES, DELETES). By default a removal
 * deletes the item's row, as DynamoDB deleted the item. A team that ages items out of the hot
 * table with TTL can keep them in the lake instead ({@code keep}, or {@code mark} with the expiry
 * time in {@value #EXPIRED_AT}); a team that must keep what users deleted can mark those rows
 * ({@code soft}: {@value #DELETED_AT}), and a later re-insert of the key clears the mark.
 *
 * @param ttlExpiries what a removal made by DynamoDB's TTL process does
 * @param deletes what a removal made by a user or an application does
 */
public record RemovalPolicy(TtlExpiries ttlExpiries, Deletes deletes) {
    /** Column holding when TTL expired the item (TTL_EXPIRIES=mark); null while the item lives. */
    public static final String EXPIRED_AT = "_ddb_expired_at";
    /** Column holding when a user deleted the item (DELETES=soft); null while the item lives. */
    public static final String DELETED_AT = "_ddb_deleted_at";

    public static final RemovalPolicy DEFAULT = new RemovalPolicy(TtlExpiries.DELETE, Deletes.HARD);

    public enum TtlExpiries {
        /** The row is deleted (DynamoDB's own behaviour). */
        DELETE,
        /** The row stays as it was: the lake is the archive of expired items. */
        KEEP,
        /** The row stays, with the expiry time in {@value RemovalPolicy#EXPIRED_AT}. */
        MARK;

        public String setting() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    public enum Deletes {
        /** The row is deleted. */
        HARD,
        /** The row stays, with the deletion time in {@value RemovalPolicy#DELETED_AT}. */
        SOFT;

        public String setting() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** From TTL_EXPIRIES and DELETES. */
    public static RemovalPolicy from(Environment env) {
        return new RemovalPolicy(
                env.choice(Settings.TTL_EXPIRIES, TtlExpiries.class), env.choice(Settings.DELETES, Deletes.class));
    }

    /** Whether a removal with this origin leaves a row behind. */
    public boolean keepsRow(boolean ttlExpiry) {
        return ttlExpiry ? ttlExpiries != TtlExpiries.DELETE : deletes == Deletes.SOFT;
    }

    /** The column a kept removal sets, or null when the row stays unmarked (TTL_EXPIRIES=keep). */
    public String markColumn(boolean ttlExpiry) {
        if (ttlExpiry) {
            return ttlExpiries == TtlExpiries.MARK ? EXPIRED_AT : null;
        }
        return deletes == Deletes.SOFT ? DELETED_AT : null;
    }

    @Override
    public String toString() {
        return "TTL_EXPIRIES=" + ttlExpiries.setting() + ", DELETES=" + deletes.setting();
    }
}
