package dev.spillway.flink;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.FilterFunction;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Makes ONE retained unaligned checkpoint with a large amount of in-flight data (the bench's JVM
 * peer phase: hundreds of MiB of channel state), on Flink 1.20.x.
 *
 * <p>Shape: a sequence source (parallelism P) mapped to {@code Tuple2<Long, byte[]>} records of
 * {@code --record-bytes} (key first), rebalanced into a slow filter (parallelism P) that sleeps per
 * record and keeps nothing: a P × P exchange under full backpressure on every channel. Every input
 * channel gets {@code --buffers} exclusive network buffers and every output subpartition may
 * queue as many (Flink's default segments of 32 KiB, so entries are Flink-sized), so each
 * unaligned checkpoint captures roughly {@code 2 × P² × buffers × 32 KiB} in flight, as
 * input-channel state (the slow operator) and result-subpartition state (the sources' chains).
 *
 * <p>Runs until a completed checkpoint's directory holds at least {@code --min-bytes}, cancels
 * the job, keeps only that checkpoint and prints {@code CHECKPOINT <dir> <bytes>}.
 *
 * <p>Usage: {@code PeerJob --out DIR [--min-bytes N] [--parallelism P] [--buffers N]
 * [--record-bytes N] [--tmp DIR]}.
 */
public final class PeerJob {

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = Args.parse(args);
        Path out = Path.of(Args.required(opts, "out")).toAbsolutePath();
        long minBytes = Long.parseLong(opts.getOrDefault("min-bytes", String.valueOf(256L << 20)));
        int p = Integer.parseInt(opts.getOrDefault("parallelism", "4"));
        int buffers = Integer.parseInt(opts.getOrDefault("buffers", "640"));
        int recordBytes = Integer.parseInt(opts.getOrDefault("record-bytes", "4000"));
        Files.createDirectories(out);
        // Flink's temp files go into one dir (Scratch), before any Flink class reads java.io.tmpdir.
        Scratch scratch = Scratch.open(opts, "peer");
        Path tmp = scratch.dir;

        // Network memory for every channel's buffers on both sides, with room to spare.
        long segments = 2L * p * p * buffers + 4L * p * 64;
        long networkMiB = Math.max(256, (segments * 32 * 1024 * 3 / 2) >> 20);
        // The harness's shared keys, then this job's: Flink's own 32 KiB segments (the shared
        // 4 KiB keep the other jobs' checkpoints small) and many of them per channel.
        Map<String, String> conf = MiniClusterConf.base(tmp, out, "2 s");
        conf.put("execution.checkpointing.min-pause", "1 s");
        conf.put("execution.checkpointing.num-retained", "2");
        conf.put("execution.checkpointing.data-inline-threshold", "0b");
        conf.put("taskmanager.memory.segment-size", "32kb");
        conf.put("taskmanager.memory.network.min", networkMiB + "m");
        conf.put("taskmanager.memory.network.max", networkMiB + "m");
        conf.put("taskmanager.network.memory.buffers-per-channel", String.valueOf(buffers)); // 1.20
        conf.put("taskmanager.network.memory.max-buffers-per-channel", String.valueOf(buffers)); // 1.20
        conf.put("taskmanager.network.memory.floating-buffers-per-gate", "64"); // 1.20
        // Full buffers: no periodic flush (it would hand on half-filled buffers).
        conf.put("execution.buffer-timeout.enabled", "false");

        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.createLocalEnvironment(p, Configuration.fromMap(conf));
        env.fromSource(new NumberSequenceSource(0, Long.MAX_VALUE), WatermarkStrategy.noWatermarks(), "source")
                .uid("source")
                .map(new ToRecord(recordBytes))
                .returns(Types.TUPLE(Types.LONG, Types.PRIMITIVE_ARRAY(Types.BYTE)))
                .name("to-record").uid("to-record")
                .rebalance()
                .filter(new Slow())
                .name("slow").uid("slow")
                .print().name("sink").uid("sink");

        long started = System.nanoTime();
        JobClient client = env.executeAsync("spillway-peer");
        Path chosen = waitForLarge(out, minBytes, 240_000);
        client.cancel().get();
        try {
            client.getJobExecutionResult().get();
        } catch (Exception cancelled) {
            // expected: the job ends cancelled
        }
        // A later checkpoint may have completed (and subsumed the first) before the cancel.
        Path kept = newestLarge(out, minBytes);
        if (kept == null) throw new IllegalStateException(chosen + " is gone after the cancel");
        chosen = kept;
        for (Path c : RetainedCheckpoints.all(out)) if (!c.equals(chosen)) Scratch.deleteTree(c);
        System.out.println("CHECKPOINT " + chosen + " " + size(chosen));
        System.out.flush();
        scratch.close();
        System.err.printf("peer-job: %.1f s%n", (System.nanoTime() - started) / 1e9);
        System.exit(0);
    }

    /** The first completed checkpoint whose directory holds at least {@code minBytes}. */
    private static Path waitForLarge(Path out, long minBytes, long timeoutMs) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        long largest = 0;
        while (System.currentTimeMillis() < deadline) {
            for (Path c : RetainedCheckpoints.all(out)) {
                if (!Files.isRegularFile(c.resolve("_metadata"))) continue;
                long n = size(c);
                if (n >= minBytes) return c;
                largest = Math.max(largest, n);
            }
            Thread.sleep(200);
        }
        throw new IllegalStateException(
                "no checkpoint of " + minBytes + " bytes in " + out + " (largest " + largest + ")");
    }

    private static Path newestLarge(Path out, long minBytes) throws IOException {
        Path best = null;
        long bestN = -1;
        for (Path c : RetainedCheckpoints.all(out)) {
            long n = RetainedCheckpoints.number(c);
            if (n > bestN && Files.isRegularFile(c.resolve("_metadata")) && size(c) >= minBytes) {
                best = c;
                bestN = n;
            }
        }
        return best;
    }

    private static long size(Path dir) throws IOException {
        try (Stream<Path> all = Files.walk(dir)) {
            return all.filter(Files::isRegularFile).mapToLong(f -> f.toFile().length()).sum();
        }
    }

    /** Sequence number to a keyed record with a payload of recognisable bytes. */
    static final class ToRecord implements MapFunction<Long, Tuple2<Long, byte[]>> {
        private final int bytes;

        ToRecord(int bytes) {
            this.bytes = bytes;
        }

        @Override
        public Tuple2<Long, byte[]> map(Long n) {
            byte[] b = new byte[bytes];
            for (int i = 0; i < b.length; i += 8) b[i] = (byte) (n + i);
            return Tuple2.of((n * 7919L) % 1000L, b);
        }
    }

    /** Slow on purpose and keeps nothing: the exchange into it backs up, every buffer full. */
    static final class Slow implements FilterFunction<Tuple2<Long, byte[]>> {
        @Override
        public boolean filter(Tuple2<Long, byte[]> v) throws Exception {
            Thread.sleep(20);
            return false;
        }
    }
}
