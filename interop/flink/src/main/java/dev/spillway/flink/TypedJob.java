package dev.spillway.flink;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The record types of {@link TypedWriter}'s job, shared with {@link RecordsOracle}: each type
 * runs in its own pipeline (upstream map, parallelism 2, keyBy its Long id, slow downstream,
 * parallelism 2) whose operators all have a max parallelism of their own, so the oracle (and
 * Spillway's test) tells the pipelines apart from the metadata alone, on 1.20 (no names) too.
 */
final class TypedJob {
    private TypedJob() {}

    /** One pipeline: its record type, the Spillway spec that names it, its max parallelism. */
    record Kind(String name, int maxParallelism, String spec, TypeInformation<?> type) {}

    /** A POJO with a nullable field and a Map field (Flink orders its fields by name). */
    public static final class Event {
        public Long id;
        public String note;
        public double score;
        public Map<String, Integer> counts;

        public Event() {}
    }

    static TypeInformation<Event> eventType() {
        Map<String, TypeInformation<?>> fields = new LinkedHashMap<>();
        fields.put("id", Types.LONG);
        fields.put("note", Types.STRING);
        fields.put("score", Types.DOUBLE);
        fields.put("counts", Types.MAP(Types.STRING, Types.INT));
        return Types.POJO(Event.class, fields);
    }

    static final List<Kind> KINDS =
            List.of(
                    new Kind("tuple3", 131, "Tuple<Long, Integer, String>",
                            Types.TUPLE(Types.LONG, Types.INT, Types.STRING)),
                    new Kind("row", 132, "Row<id Long, name String, tags List<String>>",
                            Types.ROW_NAMED(new String[] {"id", "name", "tags"},
                                    Types.LONG, Types.STRING, Types.LIST(Types.STRING))),
                    new Kind("pojo", 133,
                            "Pojo<id Long, note String, score Double, counts Map<String, Integer>>",
                            eventType()),
                    new Kind("bytes", 134, "Tuple<Long, byte[]>",
                            Types.TUPLE(Types.LONG, Types.PRIMITIVE_ARRAY(Types.BYTE))));

    static Kind byMaxParallelism(int maxParallelism) {
        for (Kind k : KINDS) if (k.maxParallelism() == maxParallelism) return k;
        return null;
    }
}
