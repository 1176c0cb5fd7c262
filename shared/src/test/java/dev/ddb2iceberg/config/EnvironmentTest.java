package dev.ddb2iceberg.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ddb2iceberg.config.RemovalPolicy.TtlExpiries;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/** The Environment's readers and their error messages: one shape naming the variable, the value and what it may be. */
class EnvironmentTest {

    private static String error(Map<String, String> variables, Consumer<Environment> read) {
        return assertThrows(ConfigurationException.class, () -> read.accept(new Environment(variables)))
                .getMessage();
    }

    @Test
    void aBadChoiceNamesTheVariableTheValueAndTheAllowedValues() {
        assertEquals(
                "Environment variable MERGE_MODE='contnuous' is not one of scheduled, continuous.",
                error(Map.of("MERGE_MODE", "contnuous"), env -> env.choice(Settings.MERGE_MODE)));
        assertEquals(
                "Environment variable CATALOG_TYPE='hive' is not one of glue, s3tables, rest, jdbc.",
                error(Map.of("CATALOG_TYPE", "hive"), env -> env.choice(Settings.CATALOG_TYPE)));
        assertEquals(
                "Environment variable INITIAL_LOAD='parallel' is not one of none, parallel-export.",
                error(Map.of("INITIAL_LOAD", "parallel"), env -> env.choice(Settings.INITIAL_LOAD)));
        assertEquals(
                "Environment variable TTL_EXPIRIES='archive' is not one of delete, keep, mark.",
                error(Map.of("TTL_EXPIRIES", "archive"), env -> env.choice(Settings.TTL_EXPIRIES, TtlExpiries.class)));
    }

    @Test
    void aChoiceIsMatchedIgnoringCaseAndTrimmedAndGivenAsTheCatalogueSpellsIt() {
        Environment env = new Environment(Map.of("MERGE_MODE", " Continuous ", "INITIAL_LOAD", "parallel-export"));
        assertEquals("continuous", env.choice(Settings.MERGE_MODE));
        assertEquals("parallel-export", env.choice(Settings.INITIAL_LOAD));
        assertEquals(TtlExpiries.DELETE, env.choice(Settings.TTL_EXPIRIES, TtlExpiries.class), "the default");
        assertEquals("glue", env.choice(Settings.CATALOG_TYPE), "the default");
    }

    @Test
    void aChoiceMayBeSpelledAsTheTemplateParameterSpellsIt() {
        Environment env = new Environment(Map.of("INITIAL_LOAD", "ParallelExport", "MERGE_MODE", "Continuous"));
        assertEquals("parallel-export", env.choice(Settings.INITIAL_LOAD), "InitialLoad=ParallelExport's spelling");
        assertEquals("continuous", env.choice(Settings.MERGE_MODE), "MergeMode=Continuous's spelling");
        assertEquals(
                "parallel-export",
                new Environment(Map.of("INITIAL_LOAD", "PARALLEL_EXPORT")).choice(Settings.INITIAL_LOAD),
                "the enum constant's spelling");
    }

    @Test
    void badNumbersAndFlagsNameTheVariableTheValueAndWhatItMustBe() {
        assertEquals(
                "Environment variable MAX_CHANGES_PER_RUN='lots' is not a positive whole number.",
                error(Map.of("MAX_CHANGES_PER_RUN", "lots"), env -> env.positiveInt(Settings.MAX_CHANGES_PER_RUN)));
        assertEquals(
                "Environment variable IO_THREADS='0' is not a positive whole number.",
                error(Map.of("IO_THREADS", "0"), env -> env.positiveInt(Settings.IO_THREADS)));
        assertEquals(
                "Environment variable HISTORY_RETENTION_DAYS='-1' is not a whole number, 0 or more.",
                error(
                        Map.of("HISTORY_RETENTION_DAYS", "-1"),
                        env -> env.nonNegativeLong(Settings.HISTORY_RETENTION_DAYS)));
        assertEquals(
                "Environment variable ITEM_JSON_COLUMN='yes' is not true or false.",
                error(Map.of("ITEM_JSON_COLUMN", "yes"), env -> env.bool(Settings.ITEM_JSON_COLUMN)));
    }

    @Test
    void aMissingRequiredSettingSaysWhatItNames() {
        assertEquals(
                "Environment variable STAGING_BUCKET is not set: it must name the S3 bucket where stream changes"
                        + " are staged.",
                error(Map.of("STAGING_BUCKET", "  "), env -> env.required(Settings.STAGING_BUCKET)));
        assertEquals(
                "Environment variable CATALOG_URI is not set: it must name the REST catalog's endpoint.",
                error(Map.of(), env -> env.required(Settings.CATALOG_URI, "the REST catalog's endpoint")));
    }

    @Test
    void aPrefixWithALeadingSlashIsRefusedAndOneWithoutATrailingSlashGetsOne() {
        assertEquals(
                "Environment variable STAGING_PREFIX='/staging/' is not a key prefix: it starts with '/', and S3"
                        + " key prefixes have no leading slash, e.g. 'staging/'.",
                error(Map.of("STAGING_PREFIX", "/staging/"), env -> env.prefix(Settings.STAGING_PREFIX)));
        assertEquals("in/", new Environment(Map.of("STAGING_PREFIX", "in")).prefix(Settings.STAGING_PREFIX));
        assertEquals("staging/", new Environment(Map.of()).prefix(Settings.STAGING_PREFIX));
    }

    @Test
    void theLibrarysOwnChecksOfAValueHaveTheSameShape() {
        assertEquals(
                "Environment variable S3_ENDPOINT='nowhere' is not a URL such as http://127.0.0.1:9000.",
                error(Map.of("S3_ENDPOINT", "nowhere"), S3Settings::from));
        assertEquals(
                "Environment variable CATALOG_PROPERTIES='a=b,nonsense' is not key=value pairs: it has 'nonsense',"
                        + " which is not key=value (write e.g. 's3.sse.type=kms,s3.sse.key=arn:aws:kms:...').",
                error(
                        Map.of("CATALOG_PROPERTIES", "a=b,nonsense", "GLUE_CATALOG_ID", "1"),
                        env -> CatalogSettings.from(
                                env, new StagingSettings("b", "staging/", "quarantine/"), S3Settings.from(env))));
    }

    @Test
    void defaultsComeFromTheCatalogueOrTheCallerAndEveryReadIsRecorded() {
        Environment env = new Environment(Map.of("IO_THREADS", ""));
        assertEquals(8, env.positiveInt(Settings.IO_THREADS), "blank is unset");
        assertEquals(3, env.positiveInt(Settings.KEY_INDEX_CACHE_MB, 3));
        assertEquals("unnamed", env.string(Settings.TABLE_NAME, "unnamed"));
        assertEquals(Set.of("IO_THREADS", "KEY_INDEX_CACHE_MB", "TABLE_NAME"), env.variablesRead());
        assertThrows(
                IllegalStateException.class,
                () -> env.positiveLong(Settings.KEY_INDEX_CACHE_MB),
                "a computed default must be given by the caller");
    }
}
