package dev.spillway.flink;

import org.apache.flink.api.common.eventtime.SerializableTimestampAssigner;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.co.KeyedCoProcessFunction;
import org.apache.flink.util.Collector;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * Runs a small MiniCluster job that leaves retained unaligned checkpoints full of in-flight data,
 * then cancels it and prints the newest retained checkpoint directory ({@code CHECKPOINT <dir>}).
 *
 * <p>Shape: two sources (parallelism 2 each) of {@code Tuple2<Long, String>} (key first), each
 * keyed by the Long and connected into one slow {@code KeyedCoProcessFunction} (parallelism 3,
 * uid "slow-join"), so each of its subtasks has two input gates of two channels. The slow operator
 * sleeps per record: the exchange backs up and every unaligned checkpoint holds the buffers in
 * flight, as input-channel state (slow-join) and result-subpartition state (the sources' chains).
 *
 * <p>Usage: {@code Writer --out DIR [--threshold BYTES] [--subtasks-per-file N] [--file-merging]
 * [--checkpoints N] [--keep-all] [--watermarks] [--tmp DIR]}. Flink's own temp files go under
 * {@code --tmp} (default: a fresh temp dir, removed at the end). Flink keys are set by name so
 * one source serves 1.20.x and 2.x.
 */
public final class Writer {

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = Args.parse(args);
        Path out = Path.of(Args.required(opts, "out")).toAbsolutePath();
        int wanted = Integer.parseInt(opts.getOrDefault("checkpoints", "3"));
        Files.createDirectories(out);
        // Flink's temp files go into one dir (Scratch), before any Flink class reads java.io.tmpdir.
        Scratch scratch = Scratch.open(opts, "writer");
        Path tmp = scratch.dir;

        Map<String, String> conf = MiniClusterConf.base(tmp, out, "400 ms");
        conf.put("execution.checkpointing.num-retained", "100");
        conf.put("execution.checkpointing.data-inline-threshold", opts.getOrDefault("threshold", "0b"));
        conf.put(
                "execution.checkpointing.unaligned.max-subtasks-per-channel-state-file",
                opts.getOrDefault("subtasks-per-file", "5"));
        if (opts.containsKey("file-merging")) {
            conf.put("execution.checkpointing.file-merging.enabled", "true");
        }
        conf.put("taskmanager.network.memory.max-buffers-per-channel", "4"); // 1.20 only
        conf.put("execution.buffer-timeout.interval", "5 ms");
        if (opts.containsKey("watermarks")) {
            // Often, so that watermarks sit between the records in every checkpoint's buffers.
            conf.put("pipeline.auto-watermark-interval", "1 ms");
        }

        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.createLocalEnvironment(2, Configuration.fromMap(conf));

        pipeline(env, opts.containsKey("watermarks"));

        long started = System.nanoTime();
        JobClient client = env.executeAsync("spillway-writer");
        double submitted = (System.nanoTime() - started) / 1e9;
        Path chk = waitForCheckpoints(out, wanted, 120_000);
        client.cancel().get();
        try {
            client.getJobExecutionResult().get();
        } catch (Exception cancelled) {
            // expected: the job ends cancelled
        }
        Path newest = RetainedCheckpoints.newestCompleted(out);
        int taken = count(out);
        if (newest == null) {
            throw new IllegalStateException("no completed checkpoint under " + out);
        }
        if (!opts.containsKey("keep-all")) {
            // Only the newest checkpoint is kept: its exclusive files are all in its chk-N dir,
            // so the older chk-N dirs are not needed to read it (a fixture stays small).
            for (Path p : RetainedCheckpoints.completed(out)) {
                if (!p.equals(newest)) Scratch.deleteTree(p);
            }
        }
        System.out.println("CHECKPOINT " + newest);
        System.out.flush();
        scratch.close();
        System.err.printf(
                "writer: job running after %.1f s, %d checkpoints after %.1f s%n",
                submitted, taken, (System.nanoTime() - started) / 1e9);
        System.exit(0);
    }

    /**
     * The job's pipeline, added to `env`. {@link WriterGraph} builds it again (never run) to ask
     * Flink's own job graph which upstream feeds which input gate of slow-join.
     */
    static void pipeline(StreamExecutionEnvironment env, boolean watermarks) {
        DataStream<Tuple2<Long, String>> a =
                source(env, "source-a", watermarks)
                        .map(new ToRecord("a")).returns(Types.TUPLE(Types.LONG, Types.STRING))
                        .name("to-record-a").uid("to-record-a");
        DataStream<Tuple2<Long, String>> b =
                source(env, "source-b", watermarks)
                        .map(new ToRecord("b")).returns(Types.TUPLE(Types.LONG, Types.STRING))
                        .name("to-record-b").uid("to-record-b");
        a.keyBy(new FirstField())
                .connect(b.keyBy(new FirstField()))
                .process(new SlowJoin())
                .returns(Types.LONG)
                .name("slow-join").uid("slow-join").setParallelism(3)
                .print().name("sink").uid("sink").setParallelism(3);
    }

    /**
     * An endless sequence. With `--watermarks`, event time (the wall clock) and Flink's periodic
     * watermarks, so Watermark elements travel the keyed exchange between the records.
     */
    private static DataStream<Long> source(
            StreamExecutionEnvironment env, String name, boolean watermarks) {
        WatermarkStrategy<Long> strategy =
                watermarks
                        ? WatermarkStrategy.<Long>forMonotonousTimestamps()
                                .withTimestampAssigner(new WallClock())
                        : WatermarkStrategy.noWatermarks();
        return env.fromSource(new NumberSequenceSource(0, Long.MAX_VALUE), strategy, name)
                .uid(name);
    }

    static final class WallClock implements SerializableTimestampAssigner<Long> {
        @Override
        public long extractTimestamp(Long element, long recordTimestamp) {
            return System.currentTimeMillis();
        }
    }

    /** Waits until `wanted` checkpoints have a `_metadata` (completed), returns the newest. */
    private static Path waitForCheckpoints(Path out, int wanted, long timeoutMs) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (System.currentTimeMillis() < deadline) {
            if (count(out) >= wanted) {
                Thread.sleep(200); // let the last _metadata finish being written
                return RetainedCheckpoints.newestCompleted(out);
            }
            Thread.sleep(100);
        }
        throw new IllegalStateException("timed out waiting for " + wanted + " checkpoints in " + out);
    }

    private static int count(Path out) throws IOException {
        return RetainedCheckpoints.completed(out).size();
    }

    /** Sequence number to a record whose key (first field) is a Long spread over many key groups. */
    static final class ToRecord implements MapFunction<Long, Tuple2<Long, String>> {
        private final String tag;

        ToRecord(String tag) {
            this.tag = tag;
        }

        @Override
        public Tuple2<Long, String> map(Long n) {
            return Tuple2.of((n * 7919L) % 1000L, tag + n);
        }
    }

    /** Slow on purpose: the keyed exchange into it backs up (backpressure). */
    static final class SlowJoin
            extends KeyedCoProcessFunction<Long, Tuple2<Long, String>, Tuple2<Long, String>, Long> {
        private long seen;

        @Override
        public void processElement1(Tuple2<Long, String> v, Context ctx, Collector<Long> out)
                throws Exception {
            slow(v, out);
        }

        @Override
        public void processElement2(Tuple2<Long, String> v, Context ctx, Collector<Long> out)
                throws Exception {
            slow(v, out);
        }

        private void slow(Tuple2<Long, String> v, Collector<Long> out) throws InterruptedException {
            Thread.sleep(2);
            if (++seen % 1_000_000 == 0) out.collect(v.f0); // almost never: the sink prints nothing
        }
    }
}
