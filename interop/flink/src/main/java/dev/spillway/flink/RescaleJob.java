package dev.spillway.flink;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * What a real Flink restore at a new parallelism delivers from a checkpoint's channel state,
 * for {@code spillway recover --rescale P}'s real-Flink test.
 *
 * <p>Shape: a sequence source (parallelism 1) mapped to {@code Tuple2<Long, String>} (key
 * {@code n % 97}), keyed into an operator (uid "rescale-check", parallelism 2 when written) that
 * emits nothing. Checkpoints are unaligned from the first barrier (MiniClusterConf), retained.
 *
 * <p>{@code write --out DIR}: the keyed operator is slow (5 ms a record), so the exchange is
 * backpressured and every checkpoint holds records in flight; once 2 checkpoints completed the
 * job is cancelled. Prints {@code CHECKPOINT <newest chk-N>}. Records written are {@code
 * "r<n>"}.
 *
 * <p>{@code restore --from CHK --parallelism P [--parallelism P]...}: for each P, the job
 * restored from CHK with the keyed operator at parallelism P, fast. The source marks every
 * record it emits after the restore ({@code "n<n>"}); the keyed operator prints each element it
 * receives that predates the restore — those came from the channel state — as {@code PRE <P>
 * <subtask> <key> <value>}, then {@code DONE <P>}. One JVM and one MiniCluster per restore.
 */
public final class RescaleJob {
    static final long RECORDS = 200_000;

    public static void main(String[] args) throws Exception {
        String command = args.length > 0 ? args[0] : "";
        Map<String, String> opts = Args.parse(java.util.Arrays.copyOfRange(args, 1, args.length));
        try (Scratch scratch = Scratch.open(opts, "rescale")) {
            Path tmp = scratch.dir;
            if (command.equals("write")) write(opts, tmp);
            else if (command.equals("restore")) restore(args, opts, tmp);
            else throw new IllegalArgumentException("usage: RescaleJob write|restore ...");
        }
        System.out.flush();
        System.exit(0);
    }

    private static void build(StreamExecutionEnvironment env, int parallelism, boolean restored) {
        env.fromSource(new NumberSequenceSource(0, RECORDS - 1), WatermarkStrategy.noWatermarks(), "numbers")
                .uid("numbers")
                .setParallelism(1)
                .map(new ToRecord(restored))
                .returns(Types.TUPLE(Types.LONG, Types.STRING))
                .name("to-record").uid("to-record").setParallelism(1)
                .keyBy(new FirstField())
                .process(new Check(restored))
                .returns(Types.STRING)
                .name("rescale-check").uid("rescale-check").setParallelism(parallelism)
                .print().name("sink").uid("sink").setParallelism(1);
    }

    private static void write(Map<String, String> opts, Path tmp) throws Exception {
        Path out = Path.of(Args.required(opts, "out")).toAbsolutePath();
        Files.createDirectories(out);
        Map<String, String> conf = MiniClusterConf.base(tmp, out, "300 ms");
        conf.put("execution.checkpointing.data-inline-threshold", "0b");
        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.createLocalEnvironment(2, Configuration.fromMap(conf));
        build(env, 2, false);
        JobClient client = env.executeAsync("spillway-rescale-write");
        long deadline = System.nanoTime() + 120_000_000_000L;
        Path newest = null;
        while (System.nanoTime() < deadline) {
            newest = RetainedCheckpoints.newestCompleted(out);
            if (newest != null && RetainedCheckpoints.number(newest) >= 2) break;
            Thread.sleep(100);
        }
        client.cancel().get();
        newest = RetainedCheckpoints.newestCompleted(out);
        if (newest == null) throw new IllegalStateException("no completed checkpoint under " + out);
        System.out.println("CHECKPOINT " + newest);
    }

    private static void restore(String[] args, Map<String, String> opts, Path tmp) throws Exception {
        String chk = Args.required(opts, "from");
        List<Integer> parallelisms = new ArrayList<>();
        for (int i = 1; i + 1 < args.length; i++) {
            if (args[i].equals("--parallelism")) parallelisms.add(Integer.parseInt(args[i + 1]));
        }
        for (int p : parallelisms) {
            Map<String, String> conf = MiniClusterConf.base(tmp, Files.createTempDirectory(tmp, "restored-"), "300 ms");
            conf.put("execution.savepoint.path", chk); // 1.20
            conf.put("execution.state-recovery.path", chk); // 2.x
            StreamExecutionEnvironment env =
                    StreamExecutionEnvironment.createLocalEnvironment(Math.max(2, p), Configuration.fromMap(conf));
            build(env, p, true);
            Check.parallelism = p;
            env.execute("spillway-rescale-restore");
            System.out.flush();
            System.out.println("DONE " + p);
            System.out.flush();
        }
    }

    /** n to (n % 97, "r<n>") when written, (n % 97, "n<n>") after a restore. */
    static final class ToRecord implements MapFunction<Long, Tuple2<Long, String>> {
        private final boolean restored;

        ToRecord(boolean restored) {
            this.restored = restored;
        }

        @Override
        public Tuple2<Long, String> map(Long n) {
            return Tuple2.of(n % 97, (restored ? "n" : "r") + n);
        }
    }

    /** Slow when written; after a restore, prints each element that predates it. */
    static final class Check extends KeyedProcessFunction<Long, Tuple2<Long, String>, String> {
        /** The restore's parallelism, for the printed lines (one MiniCluster, one JVM). */
        static volatile int parallelism;

        private final boolean restored;

        Check(boolean restored) {
            this.restored = restored;
        }

        @Override
        public void processElement(Tuple2<Long, String> v, Context ctx, Collector<String> out)
                throws Exception {
            if (!restored) {
                Thread.sleep(5);
                return;
            }
            if (v.f1.startsWith("r")) {
                int subtask = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
                synchronized (System.out) {
                    System.out.println("PRE " + parallelism + " " + subtask + " " + v.f0 + " " + v.f1);
                }
            }
        }
    }
}
