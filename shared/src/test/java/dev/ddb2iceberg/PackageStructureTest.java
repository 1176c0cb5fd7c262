package dev.ddb2iceberg;

import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

/** The library's packages are its architecture: each may use those below it, never one that uses it. */
class PackageStructureTest {
    private static final JavaClasses LIBRARY = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("dev.ddb2iceberg");

    @Test
    void noTwoPackagesUseEachOther() {
        slices().matching("dev.ddb2iceberg.(**)").should().beFreeOfCycles().check(LIBRARY);
    }
}
