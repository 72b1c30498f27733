package dev.spillway.flink;

import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.tuple.Tuple2;

/** Keys a {@code Tuple2<Long, String>} record by its first field, as the harness's jobs do. */
final class FirstField implements KeySelector<Tuple2<Long, String>, Long> {
    @Override
    public Long getKey(Tuple2<Long, String> value) {
        return value.f0;
    }
}
