package dev.ddb2iceberg.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ddb2iceberg.index.IndexCache;
import dev.ddb2iceberg.maintenance.MaintenanceOptions;
import dev.ddb2iceberg.merge.ContinuousMerge;
import dev.ddb2iceberg.merge.MergeOptions;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The catalogue is complete and agrees with the defaults the library's own records declare. */
class SettingsTest {
    private static final Environment EMPTY = new Environment(Map.of());

    @Test
    void everyEntryHasANameADescriptionAndAChoiceDefaultThatIsOneOfItsChoices() {
        assertTrue(Settings.all().size() > 50, "settings: " + Settings.all().size());
        for (Setting s : Settings.all()) {
            assertTrue(s.name().matches("[A-Z][A-Z0-9_]+"), s.name());
            assertFalse(s.description().isBlank(), s.name());
            assertEquals(s, Settings.byName(s.name()));
            if (!s.choices().isEmpty() && s.defaultValue() != null) {
                assertTrue(s.choices().contains(s.defaultValue()), s.name() + ": default " + s.defaultValue());
            }
        }
        assertNull(Settings.byName("MERGE_MODES"));
    }

    @Test
    void theCataloguesDefaultsAreTheLibrarysDefaults() {
        assertEquals(ContinuousMerge.Settings.DEFAULTS, ContinuousMerge.Settings.from(EMPTY));
        assertEquals(MaintenanceOptions.DEFAULTS, MaintenanceOptions.from(EMPTY));
        assertEquals(RemovalPolicy.DEFAULT, RemovalPolicy.from(EMPTY));
        MergeOptions read = MergeOptions.from(EMPTY);
        MergeOptions defaults = MergeOptions.DEFAULTS;
        // KEY_INDEX_CACHE_MB is read in whole MB: compare the rest.
        assertEquals(defaults.withoutKeyIndexCache(), read.withoutKeyIndexCache());
        assertEquals(defaults.keyIndexCacheBytes() >> 20, read.keyIndexCacheBytes() >> 20);
        assertEquals("ddb2iceberg", CatalogSettings.DEFAULT_NAME);
    }

    @Test
    void aSmallKeyIndexCacheLeavesARebuildTheDefaultBudgetAndABigOneItsOwn() {
        long defaultBudget = IndexCache.defaultBudget();
        MergeOptions small = MergeOptions.from(new Environment(Map.of("KEY_INDEX_CACHE_MB", "1")));
        assertEquals(1L << 20, small.keyIndexCacheBytes());
        assertEquals(defaultBudget, small.keyIndexBuildBytes(), "a 1 MB cache does not make the rebuild's budget 1 MB");
        long bigMb = (defaultBudget >> 20) * 2;
        MergeOptions big = MergeOptions.from(new Environment(Map.of("KEY_INDEX_CACHE_MB", Long.toString(bigMb))));
        assertEquals(
                bigMb << 20, big.keyIndexBuildBytes(), "a cache bigger than the default lends the rebuild its size");
    }
}
