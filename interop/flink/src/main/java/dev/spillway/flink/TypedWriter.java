package dev.spillway.flink;

import org.apache.flink.api.common.eventtime.SerializableTimestampAssigner;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.Collector;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A MiniCluster job whose in-flight data holds records of several types ({@link TypedJob}):
 * {@code Tuple3<Long, Integer, String>} with non-ASCII strings (2- and 3-byte chars, surrogate
 * pairs, empty), a named {@code Row} with null fields, other row kinds and a {@code List} field,
 * a POJO with a nullable field and a {@code Map} field, and {@code Tuple2<Long, byte[]>} whose
 * byte[] (6 KB+) is larger than a network buffer (4 KB segments): records span buffers. Event
 * time from the wall clock with a watermark every 1 ms, so watermarks sit between the records.
 * Unaligned checkpoints every 400 ms, retained; after N completed the job is cancelled and the
 * newest printed ({@code CHECKPOINT <dir>}); older ones are removed. Flink's own statistics of
 * that checkpoint's persisted in-flight data per vertex and subtask ({@link PersistedStats}) are
 * written to {@code DIR/flink-stats.json} ({@code STATS <file>}).
 *
 * <p>Usage: {@code TypedWriter --out DIR [--checkpoints N]}.
 */
public final class TypedWriter {

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = Args.parse(args);
        Path out = Path.of(Args.required(opts, "out")).toAbsolutePath();
        int wanted = Integer.parseInt(opts.getOrDefault("checkpoints", "3"));
        Files.createDirectories(out);
        // Flink's temp files (minicluster_*, the extracted rpc jar) go, whatever happened.
        try (Scratch scratch = Scratch.open(opts, "typed")) {
            run(out, wanted, scratch.dir);
        }
        System.exit(0);
    }

    private static void run(Path out, int wanted, Path tmp) throws Exception {

        Map<String, String> conf = MiniClusterConf.base(tmp, out, "400 ms");
        conf.put("execution.checkpointing.num-retained", "100");
        conf.put("execution.checkpointing.data-inline-threshold", "0b");
        conf.put("taskmanager.network.memory.max-buffers-per-channel", "4"); // 1.20 only
        conf.put("execution.buffer-timeout.interval", "5 ms");
        conf.put("pipeline.auto-watermark-interval", "1 ms");
        // A known port: Flink's checkpoint statistics are read from its REST API (PersistedStats).
        int restPort = PersistedStats.freePort();
        conf.put("rest.bind-port", String.valueOf(restPort));

        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.createLocalEnvironment(2, Configuration.fromMap(conf));
        for (TypedJob.Kind kind : TypedJob.KINDS) pipeline(env, kind);

        // The graph executed is the one whose job graph names the chains (vertex → operators).
        StreamGraph graph = env.getStreamGraph();
        graph.setJobName("spillway-typed-writer");
        Map<String, Map<String, Object>> vertices = PersistedStats.vertices(graph);
        JobClient client = env.executeAsync(graph);
        String jobId = client.getJobID().toHexString();
        long deadline = System.currentTimeMillis() + 120_000;
        Map<Long, Map<String, Object>> stats = new HashMap<>();
        while (stats.size() < wanted) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("timed out waiting for checkpoints in " + out);
            }
            Thread.sleep(100);
            // Flink's statistics of each completed checkpoint, read while the job runs.
            for (Path p : RetainedCheckpoints.completed(out)) {
                long n = RetainedCheckpoints.number(p);
                if (stats.containsKey(n)) continue;
                Map<String, Object> s = PersistedStats.read(restPort, jobId, vertices, n);
                if (s != null) stats.put(n, s);
            }
        }
        client.cancel().get();
        try {
            client.getJobExecutionResult().get();
        } catch (Exception cancelled) {
            // expected: the job ends cancelled
        }
        // The newest checkpoint whose statistics were read (one completing during the cancel
        // has none, and goes).
        Path newest = null;
        long newestN = -1;
        for (Path p : RetainedCheckpoints.completed(out)) {
            long n = RetainedCheckpoints.number(p);
            if (n > newestN && stats.containsKey(n)) {
                newestN = n;
                newest = p;
            }
        }
        for (Path p : RetainedCheckpoints.completed(out)) if (!p.equals(newest)) Scratch.deleteTree(p);
        Path statsFile = out.resolve("flink-stats.json");
        Files.writeString(statsFile, Json.write(stats.get(newestN)));
        System.out.println("STATS " + statsFile);
        System.out.println("CHECKPOINT " + newest);
        System.out.flush();
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static void pipeline(StreamExecutionEnvironment env, TypedJob.Kind kind) {
        DataStream<Long> source =
                env.fromSource(
                                new NumberSequenceSource(0, Long.MAX_VALUE),
                                WatermarkStrategy.<Long>forMonotonousTimestamps()
                                        .withTimestampAssigner(new WallClock()),
                                "typed-" + kind.name() + "-source")
                        .uid("typed-" + kind.name() + "-source")
                        .setMaxParallelism(kind.maxParallelism());
        DataStream up =
                source.map(new MakeRecord(kind.name()))
                        .returns((org.apache.flink.api.common.typeinfo.TypeInformation) kind.type())
                        .name("typed-" + kind.name() + "-up")
                        .uid("typed-" + kind.name() + "-up")
                        .setMaxParallelism(kind.maxParallelism());
        up.keyBy(new IdOf(), Types.LONG)
                .process(new Slow(), Types.LONG)
                .name("typed-" + kind.name())
                .uid("typed-" + kind.name())
                .setParallelism(2)
                .setMaxParallelism(kind.maxParallelism())
                .print()
                .name("typed-" + kind.name() + "-sink")
                .uid("typed-" + kind.name() + "-sink")
                .setParallelism(2);
    }

    static final class WallClock implements SerializableTimestampAssigner<Long> {
        @Override
        public long extractTimestamp(Long element, long recordTimestamp) {
            return System.currentTimeMillis();
        }
    }

    /** Strings with 1-, 2- and 3-byte chars in StringValue's encoding, surrogate pairs, empty. */
    private static final String[] TEXTS = {"a", "é", "€uro", "日本語", "😀 smile", "", "naïve ñ"};

    /** Sequence number n to the pipeline's record. */
    static final class MakeRecord implements MapFunction<Long, Object> {
        private final String kind;

        MakeRecord(String kind) {
            this.kind = kind;
        }

        @Override
        public Object map(Long n) {
            long id = n % 5 == 0 ? Long.MAX_VALUE - n : (n * 7919L) % 1000L - 500L;
            String text = TEXTS[(int) (n % TEXTS.length)] + n;
            switch (kind) {
                case "tuple3":
                    return Tuple3.of(id, (int) (n * 2_654_435_761L), text);
                case "row": {
                    List<String> tags = new ArrayList<>();
                    for (int i = 0; i < n % 4; i++) tags.add(TEXTS[i] + i);
                    Row row = Row.of(id, n % 7 == 3 ? null : text, tags);
                    if (n % 5 == 2) row.setKind(RowKind.UPDATE_AFTER);
                    if (n % 11 == 4) row.setKind(RowKind.DELETE);
                    return row;
                }
                case "pojo": {
                    TypedJob.Event e = new TypedJob.Event();
                    e.id = id;
                    e.note = n % 3 == 1 ? null : text;
                    e.score = n % 4 == 0 ? n / 8.0 : -n * 1.0e-3;
                    e.counts = new HashMap<>();
                    for (int i = 0; i < n % 3; i++) e.counts.put(TEXTS[i] + i, (int) (n * i));
                    return e;
                }
                default: {
                    byte[] payload = new byte[6000 + (int) (n % 97)];
                    for (int i = 0; i < payload.length; i++) payload[i] = (byte) (n + i * 31);
                    return Tuple2.of(id, payload);
                }
            }
        }
    }

    /** The record's id (its Long key): f0 of a tuple, field 0 of a row, a POJO's id. */
    static final class IdOf implements KeySelector<Object, Long> {
        @Override
        public Long getKey(Object v) {
            if (v instanceof org.apache.flink.api.java.tuple.Tuple) {
                return ((org.apache.flink.api.java.tuple.Tuple) v).getField(0);
            }
            if (v instanceof Row) return (Long) ((Row) v).getField(0);
            return ((TypedJob.Event) v).id;
        }
    }

    /** Slow on purpose: the keyed exchange into it backs up (backpressure). */
    static final class Slow extends KeyedProcessFunction<Long, Object, Long> {
        private long seen;

        @Override
        public void processElement(Object v, Context ctx, Collector<Long> out) throws Exception {
            Thread.sleep(2);
            if (++seen % 1_000_000 == 0) out.collect(seen); // almost never: the sink prints nothing
        }
    }

}
