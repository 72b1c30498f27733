package dev.spillway.flink;

import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
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
 * A keyed job with a poison record, for {@code spillway flink rewrite}'s real-Flink tests.
 *
 * <p>Shape: a sequence source (parallelism 1, records 0..N-1) mapped to {@code Tuple2<Long,
 * String>} (key {@code n % 97}, value {@code "r<n>"}, the record {@code n == P} is {@code
 * "poison"}), keyed into a check operator (parallelism 2, uid "poison-check") that throws on the
 * poison (mode {@code throw}) or lets it pass (mode {@code pass}) and emits {@code "OUT <n>"},
 * printed by the sink (parallelism 1). Checkpoints are unaligned (timeout 0), retained.
 *
 * <p>{@code write --out DIR --poison P [--threshold B] [--subtasks-per-file N] [--file-merging]}:
 * the check operator is slow (5 ms a record) and the source slows down after the poison, so the
 * exchange is backpressured and the poison stays in flight through several checkpoints until it
 * is processed and fails the job. Prints {@code CHECKPOINT <newest chk-N>} and {@code FAILED
 * <message>}.
 *
 * <p>{@code restore --mode throw|pass --poison P --from CHK [--from CHK]...}: for each
 * checkpoint, one job restored from it (fast: no sleeps), printing {@code RUN <chk>}, the
 * sink's {@code OUT <n>} lines, then {@code FINISHED} or {@code FAILED <message>}. One JVM and
 * one MiniCluster start per call. The job graph is the same in both commands (uids everywhere).
 */
public final class PoisonJob {
    /** Records after the poison: enough that the source is still running when it fails. */
    static final long AFTER = 20_000;

    public static void main(String[] args) throws Exception {
        String command = args.length > 0 ? args[0] : "";
        Map<String, String> opts = Args.parse(java.util.Arrays.copyOfRange(args, 1, args.length));
        int code;
        try (Scratch scratch = Scratch.open(opts, "poison")) {
            Path tmp = scratch.dir;
            if (command.equals("write")) code = write(opts, tmp);
            else if (command.equals("restore")) code = restore(args, opts, tmp);
            else throw new IllegalArgumentException("usage: PoisonJob write|restore ...");
        }
        System.out.flush();
        System.exit(code);
    }

    private static Map<String, String> conf(Path tmp, Path checkpoints, Map<String, String> opts) {
        Map<String, String> conf = MiniClusterConf.base(tmp, checkpoints, "300 ms");
        conf.put("execution.checkpointing.data-inline-threshold", opts.getOrDefault("threshold", "0b"));
        conf.put(
                "execution.checkpointing.unaligned.max-subtasks-per-channel-state-file",
                opts.getOrDefault("subtasks-per-file", "5"));
        if (opts.containsKey("file-merging")) {
            conf.put("execution.checkpointing.file-merging.enabled", "true");
        }
        return conf;
    }

    private static void build(StreamExecutionEnvironment env, long poison, boolean slow, boolean pass) {
        long records = poison + 1 + AFTER;
        env.fromSource(new NumberSequenceSource(0, records - 1), WatermarkStrategy.noWatermarks(), "numbers")
                .uid("numbers")
                .setParallelism(1)
                .map(new ToRecord(poison, slow))
                .returns(Types.TUPLE(Types.LONG, Types.STRING))
                .name("to-record").uid("to-record").setParallelism(1)
                .keyBy(new FirstField())
                .process(new Check(slow, pass))
                .returns(Types.STRING)
                .name("poison-check").uid("poison-check").setParallelism(2)
                .print().name("sink").uid("sink").setParallelism(1);
    }

    private static int write(Map<String, String> opts, Path tmp) throws Exception {
        Path out = Path.of(Args.required(opts, "out")).toAbsolutePath();
        long poison = Long.parseLong(Args.required(opts, "poison"));
        Files.createDirectories(out);
        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.createLocalEnvironment(2, Configuration.fromMap(conf(tmp, out, opts)));
        build(env, poison, true, false);
        JobClient client = env.executeAsync("spillway-poison-write");
        String failure = "none";
        try {
            client.getJobExecutionResult().get();
        } catch (Exception e) {
            failure = rootMessage(e);
        }
        Path newest = RetainedCheckpoints.newestCompleted(out);
        if (newest == null) throw new IllegalStateException("no completed checkpoint under " + out);
        System.out.println("CHECKPOINT " + newest);
        System.out.println("FAILED " + failure);
        return 0;
    }

    private static int restore(String[] args, Map<String, String> opts, Path tmp) throws Exception {
        boolean pass = "pass".equals(Args.required(opts, "mode"));
        long poison = Long.parseLong(Args.required(opts, "poison"));
        List<String> from = new ArrayList<>();
        for (int i = 1; i + 1 < args.length; i++) {
            if (args[i].equals("--from")) from.add(args[i + 1]);
        }
        for (String chk : from) {
            System.out.println("RUN " + chk);
            System.out.flush();
            Map<String, String> conf = conf(tmp, Files.createTempDirectory(tmp, "restored-"), opts);
            conf.put("execution.savepoint.path", chk); // 1.20
            conf.put("execution.state-recovery.path", chk); // 2.x
            StreamExecutionEnvironment env =
                    StreamExecutionEnvironment.createLocalEnvironment(2, Configuration.fromMap(conf));
            build(env, poison, false, pass);
            try {
                env.execute("spillway-poison-restore");
                System.out.flush();
                System.out.println("FINISHED");
            } catch (Exception e) {
                System.out.flush();
                System.out.println("FAILED " + rootMessage(e));
            }
            System.out.flush();
        }
        return 0;
    }

    private static String rootMessage(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null && t.getCause() != t) t = t.getCause();
        return (t.getClass().getSimpleName() + ": " + t.getMessage()).replace('\n', ' ');
    }

    /** n to (n % 97, "r<n>"), the poison's value "poison"; slow after the poison when writing. */
    static final class ToRecord implements MapFunction<Long, Tuple2<Long, String>> {
        private final long poison;
        private final boolean slow;

        ToRecord(long poison, boolean slow) {
            this.poison = poison;
            this.slow = slow;
        }

        @Override
        public Tuple2<Long, String> map(Long n) throws Exception {
            if (slow && n > poison + 200) Thread.sleep(20);
            return Tuple2.of(n % 97, n == poison ? "poison" : "r" + n);
        }
    }

    /** Throws on the poison (unless pass), emits "OUT <n>" for every record it lets through. */
    static final class Check extends KeyedProcessFunction<Long, Tuple2<Long, String>, String> {
        private final boolean slow;
        private final boolean pass;

        Check(boolean slow, boolean pass) {
            this.slow = slow;
            this.pass = pass;
        }

        @Override
        public void processElement(Tuple2<Long, String> v, Context ctx, Collector<String> out)
                throws Exception {
            if (slow) Thread.sleep(5);
            if (v.f1.equals("poison")) {
                if (!pass) throw new IllegalStateException("poison record (key " + v.f0 + ")");
                out.collect("OUT poison");
                return;
            }
            out.collect("OUT " + v.f1.substring(1));
        }
    }
}
