package dev.ddb2iceberg.maintenance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Orphan removal's question, "does the table reference this listed file?", across spellings of one key. */
class ReferencedFilesTest {
    private static ReferencedFiles referencing(String... locations) {
        ReferencedFiles files = new ReferencedFiles();
        for (String l : locations) {
            files.add(l);
        }
        return files;
    }

    @Test
    void aFileReferencedWithAnEmptySegmentIsFoundByTheKeyAStoreListsWithoutIt() {
        ReferencedFiles files = referencing("s3://b/wh/ns/t/data//00000-1-abc-00002-deletes.parquet");
        String listed = "s3://b/wh/ns/t/data/00000-1-abc-00002-deletes.parquet";
        assertTrue(files.references(listed));
        assertEquals("s3://b/wh/ns/t/data//00000-1-abc-00002-deletes.parquet", files.spelledDifferently(listed));
    }

    @Test
    void aFileListedWithAnEmptySegmentIsFoundWhenTheTableSpellsItWithout() {
        ReferencedFiles files = referencing("s3://b/t/data/x.parquet");
        assertTrue(files.references("s3://b/t/data//x.parquet"));
        assertTrue(files.references("s3://b/t///data/x.parquet"));
    }

    @Test
    void s3aAndS3nNameTheSameObjectsAsS3AndAreNoDoubt() {
        ReferencedFiles files = referencing("s3a://b/t/data/x.parquet", "s3://b/t/metadata/m.avro");
        assertTrue(files.references("s3://b/t/data/x.parquet"));
        assertNull(files.spelledDifferently("s3://b/t/data/x.parquet"), "only the scheme's name differs");
        assertTrue(files.references("s3n://b/t/metadata/m.avro"));
    }

    @Test
    void percentEncodedKeysMatchTheirDecodedSpelling() {
        ReferencedFiles files = referencing("s3://b/t/data/pk_bucket=3/a%20b%2Bc.parquet");
        assertTrue(files.references("s3://b/t/data/pk_bucket=3/a b+c.parquet"));
        ReferencedFiles plain = referencing("s3://b/t/data/name=é/x.parquet");
        assertTrue(plain.references("s3://b/t/data/name=%C3%A9/x.parquet"));
    }

    @Test
    void aMalformedEscapeIsComparedAsItIs() {
        ReferencedFiles files = referencing("s3://b/t/data/100%.parquet");
        assertTrue(files.references("s3://b/t/data/100%.parquet"));
        assertFalse(files.references("s3://b/t/data/100.parquet"));
    }

    @Test
    void anUnreferencedFileIsNotReferencedUnderAnySpelling() {
        ReferencedFiles files = referencing("s3://b/t/data//x.parquet");
        assertFalse(files.references("s3://b/t/data/y.parquet"));
        assertFalse(files.references("s3://other/t/data/x.parquet"), "another bucket");
        assertFalse(files.references("s3://b/t/datax.parquet"), "segments are not glued together");
        assertNull(files.spelledDifferently("s3://b/t/data/y.parquet"));
    }

    @Test
    void theBucketIsNotPartOfTheKeysSegments() {
        assertEquals("s3://b/k/x", ReferencedFiles.canonical("s3a://b//k//x"));
        assertEquals("s3://b", ReferencedFiles.canonical("s3://b"));
    }
}
