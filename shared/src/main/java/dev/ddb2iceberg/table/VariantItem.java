package dev.ddb2iceberg.table;

import dev.ddb2iceberg.model.DdbValue;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.TreeSet;
import org.apache.iceberg.variants.ShreddedObject;
import org.apache.iceberg.variants.ValueArray;
import org.apache.iceberg.variants.Variant;
import org.apache.iceberg.variants.VariantMetadata;
import org.apache.iceberg.variants.VariantValue;
import org.apache.iceberg.variants.Variants;

/**
 * A whole item as an Iceberg variant (format v3, ITEM_VARIANT_COLUMN): an object of the item's
 * attributes, maps as objects, lists and sets as arrays, numbers as exact decimals (integers as
 * longs; a number a variant decimal cannot hold, as its text). It is a reading convenience for
 * engines with variant support; the typed columns and the overflow map stay the exact record.
 */
final class VariantItem {
    private VariantItem() {}

    static Variant of(Map<String, DdbValue> item) {
        TreeSet<String> names = new TreeSet<>();
        collectNames(new DdbValue.M(item), names);
        VariantMetadata metadata = Variants.metadata(names);
        return Variant.of(metadata, value(metadata, new DdbValue.M(item)));
    }

    private static void collectNames(DdbValue v, TreeSet<String> names) {
        if (v instanceof DdbValue.M m) {
            m.fields().forEach((k, x) -> {
                names.add(k);
                collectNames(x, names);
            });
        } else if (v instanceof DdbValue.L l) {
            l.elements().forEach(e -> collectNames(e, names));
        }
    }

    private static VariantValue value(VariantMetadata metadata, DdbValue v) {
        if (v instanceof DdbValue.S s) {
            return Variants.of(s.value());
        } else if (v instanceof DdbValue.N n) {
            return number(n.text());
        } else if (v instanceof DdbValue.Bool b) {
            return Variants.of(b.value());
        } else if (v instanceof DdbValue.Null) {
            return Variants.ofNull();
        } else if (v instanceof DdbValue.B b) {
            return Variants.of(ByteBuffer.wrap(b.bytes()));
        } else if (v instanceof DdbValue.M m) {
            ShreddedObject object = Variants.object(metadata);
            m.fields().forEach((k, x) -> object.put(k, value(metadata, x)));
            return object;
        }
        ValueArray array = Variants.array();
        if (v instanceof DdbValue.L l) {
            l.elements().forEach(e -> array.add(value(metadata, e)));
        } else if (v instanceof DdbValue.SS s) {
            s.elements().forEach(e -> array.add(Variants.of(e)));
        } else if (v instanceof DdbValue.NS s) {
            s.elements().forEach(e -> array.add(number(e)));
        } else if (v instanceof DdbValue.BS s) {
            s.elements().forEach(e -> array.add(Variants.of(ByteBuffer.wrap(e))));
        }
        return array;
    }

    private static VariantValue number(String text) {
        if (TypeMapping.isCanonicalLong(text)) {
            return Variants.of(Long.parseLong(text));
        }
        BigDecimal d = new BigDecimal(text);
        if (d.scale() >= 0 && d.scale() <= 38 && d.precision() <= 38) {
            return Variants.of(d);
        }
        return Variants.of(text);
    }
}
