package dev.ddb2iceberg.util;

import java.util.AbstractList;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.RandomAccess;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * CPU work over a merge's changes or rows split into one slice per core, on the merge's pool: the
 * per-item steps (a change's key, its row, a row's partition) are independent, and a merge of
 * 100,000 changes on one thread leaves a Lambda's other vCPUs idle. Small lists stay on the
 * calling thread, where handing them over would cost more than it saves.
 */
public final class Slices {
    /** Below this many items a list is worked through on the calling thread. */
    static final int MIN_PARALLEL = 4_096;

    private Slices() {}

    /** The cores work is split over. */
    public static int cores() {
        return Runtime.getRuntime().availableProcessors();
    }

    /**
     * {@code fn} of each item, in the items' order; {@code state} makes one per slice of what the
     * function needs and may not share between threads (a PartitionKey, a reused buffer).
     */
    public static <T, S, R> List<R> map(
            List<T> items, ExecutorService pool, Supplier<S> state, Slice<T, S, R> fn, String what) {
        int slices = slices(items.size());
        if (slices == 1 || pool == null) {
            S s = state.get();
            List<R> out = new ArrayList<>(items.size());
            for (T item : items) {
                out.add(fn.apply(item, s));
            }
            return out;
        }
        @SuppressWarnings("unchecked")
        R[] out = (R[]) new Object[items.size()];
        List<Future<?>> work = new ArrayList<>(slices);
        for (int k = 0; k < slices; k++) {
            int from = (int) ((long) items.size() * k / slices);
            int to = (int) ((long) items.size() * (k + 1) / slices);
            work.add(pool.submit(() -> {
                S s = state.get();
                for (int i = from; i < to; i++) {
                    out[i] = fn.apply(items.get(i), s);
                }
            }));
        }
        work.forEach(f -> Futures.join(f, what));
        return Arrays.asList(out);
    }

    /** {@code fn} of each item, in the items' order. */
    public static <T, R> List<R> map(List<T> items, ExecutorService pool, Function<T, R> fn, String what) {
        return map(items, pool, () -> null, (item, none) -> fn.apply(item), what);
    }

    /** {@code fn} of each slice of the items (one a core), in order. */
    public static <T, R> List<R> perSlice(List<T> items, ExecutorService pool, Function<List<T>, R> fn, String what) {
        int slices = slices(items.size());
        if (slices == 1 || pool == null) {
            return List.of(fn.apply(items));
        }
        List<Future<R>> work = new ArrayList<>(slices);
        for (int k = 0; k < slices; k++) {
            List<T> slice = items.subList(
                    (int) ((long) items.size() * k / slices), (int) ((long) items.size() * (k + 1) / slices));
            work.add(pool.submit(() -> fn.apply(slice)));
        }
        List<R> out = new ArrayList<>(slices);
        work.forEach(f -> out.add(Futures.join(f, what)));
        return out;
    }

    /**
     * The positions 0 to {@code n - 1}, made as they are read: to {@link #map} over lists that go
     * by position together (a key, its change, its live rows) without pairing them in objects.
     */
    public static List<Integer> positions(int n) {
        return new Positions(n);
    }

    private static final class Positions extends AbstractList<Integer> implements RandomAccess {
        private final int n;

        Positions(int n) {
            this.n = n;
        }

        @Override
        public Integer get(int i) {
            return Objects.checkIndex(i, n);
        }

        @Override
        public int size() {
            return n;
        }
    }

    private static int slices(int items) {
        return items < MIN_PARALLEL ? 1 : Math.max(1, Math.min(cores(), items / (MIN_PARALLEL / 2)));
    }

    /** A step over one item with its slice's own state. */
    @FunctionalInterface
    public interface Slice<T, S, R> {
        R apply(T item, S state);
    }
}
