package dev.spillway.flink;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * The MiniCluster configuration the harness's jobs share (Writer, TypedWriter, PoisonJob):
 * unaligned checkpoints from the first barrier on (aligned-checkpoint timeout 0), retained on
 * cancellation in a filesystem checkpoint dir; small network buffers, so that a checkpoint's
 * in-flight data is some KB to a few hundred KB; Flink's temp and web dirs inside {@code tmp};
 * no restarts. Each job adds its own keys (retained count, inline threshold, buffer timeout...).
 * One place for these facts: a job built on them behaves as the others do.
 */
final class MiniClusterConf {
    private MiniClusterConf() {}

    /** The shared keys; {@code interval} is the checkpoint interval (e.g. "400 ms"). */
    static Map<String, String> base(Path tmp, Path checkpoints, String interval) {
        Map<String, String> conf = new HashMap<>();
        conf.put("execution.checkpointing.interval", interval);
        conf.put("execution.checkpointing.unaligned.enabled", "true");
        conf.put("execution.checkpointing.aligned-checkpoint-timeout", "0 ms");
        conf.put("execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION");
        conf.put("execution.checkpointing.storage", "filesystem");
        conf.put("execution.checkpointing.dir", checkpoints.toUri().toString());
        conf.put("taskmanager.memory.segment-size", "4kb");
        conf.put("taskmanager.network.memory.buffers-per-channel", "2"); // 1.20 only
        conf.put("taskmanager.network.memory.floating-buffers-per-gate", "2"); // 1.20 only
        conf.put("io.tmp.dirs", tmp.toString());
        conf.put("web.tmpdir", tmp.resolve("web").toString());
        conf.put("web.upload.dir", tmp.resolve("web-upload").toString());
        conf.put("rest.bind-port", "0");
        conf.put("restart-strategy.type", "none");
        return conf;
    }
}
