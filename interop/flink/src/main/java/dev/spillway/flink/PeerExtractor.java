package dev.spillway.flink;

import org.apache.flink.core.fs.FSDataInputStream;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.channel.SpillwayEntryReader;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.state.AbstractChannelStateHandle;
import org.apache.flink.runtime.state.StreamStateHandle;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * The JVM peer of {@code spillway recover --all} (the bench's {@code recoverAllVsJvm}): what a
 * Flink user would otherwise run to get a checkpoint's in-flight data out, with Flink's own
 * classes only. Loads {@code _metadata} with {@code Checkpoints.loadCheckpointMetadata}, then for
 * every operator and subtask, input channels and output subpartitions, reads each delegate stream
 * the way {@code SequentialChannelStateReaderImpl} does (its header once, then every offset
 * ascending, {@code ChannelStateSerializerImpl.readLength}/{@code readData}) and writes each
 * channel's payloads into one file, streamed (nothing held in memory but one entry):
 * {@code OUT/<operator>/subtask-<n>/gate-<g>-channel-<c>.bin} and
 * {@code partition-<p>-subpartition-<s>.bin}, {@code <operator>} named as {@code recover --all}
 * names it (the uid where it is a plain, unique name, else the id), so the two trees compare
 * byte for byte.
 *
 * <p>With {@code --metadata-only} it only loads {@code _metadata} and counts the channel handles
 * (the peer of {@code flink ls}). Prints one JSON line: the times measured inside the JVM (from
 * {@code main}, so without the JVM's start-up), the files and bytes written.
 *
 * <p>Usage: {@code PeerExtractor --checkpoint CHK_DIR (--out DIR | --metadata-only)}.
 */
public final class PeerExtractor {

    /** What {@code operatorDirs} in src/services/outputs/file-names.ts accepts as a directory. */
    private static final Pattern PLAIN_NAME = Pattern.compile("^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$");

    private final SpillwayEntryReader reader = new SpillwayEntryReader();
    private long files;
    private long bytes;
    private long entries;

    public static void main(String[] args) throws Exception {
        long started = System.nanoTime();
        Map<String, String> opts = Args.parse(args);
        Path chk = Path.of(Args.required(opts, "checkpoint")).toAbsolutePath();
        boolean metadataOnly = opts.containsKey("metadata-only");
        CheckpointMetadata metadata;
        // Buffered: Flink's own restore reads _metadata through an unbuffered DataInputStream;
        // the peer gets the faster way.
        try (DataInputStream in =
                new DataInputStream(
                        new BufferedInputStream(Files.newInputStream(chk.resolve("_metadata")), 1 << 16))) {
            metadata =
                    Checkpoints.loadCheckpointMetadata(
                            in, PeerExtractor.class.getClassLoader(), chk.toString());
        }
        long loaded = System.nanoTime();
        PeerExtractor peer = new PeerExtractor();
        long handles = 0;
        if (metadataOnly) {
            for (OperatorState op : metadata.getOperatorStates()) {
                for (OperatorSubtaskState s : op.getSubtaskStates().values()) {
                    handles += Handles.inputs(s).size() + Handles.outputs(s).size();
                }
            }
        } else {
            Path out = Path.of(Args.required(opts, "out")).toAbsolutePath();
            handles = peer.extract(metadata, out);
        }
        long done = System.nanoTime();
        System.out.printf(
                "{\"metadataMs\":%.3f,\"readMs\":%.3f,\"operators\":%d,\"handles\":%d,"
                        + "\"files\":%d,\"entries\":%d,\"bytes\":%d}%n",
                (loaded - started) / 1e6, (done - started) / 1e6,
                metadata.getOperatorStates().size(), handles, peer.files, peer.entries, peer.bytes);
        System.out.flush();
    }

    /** Every operator/subtask's channels into {@code out}; returns the channel handles read. */
    private long extract(CheckpointMetadata metadata, Path out) throws IOException {
        List<OperatorState> ops = new ArrayList<>(metadata.getOperatorStates());
        Map<OperatorState, String> dirs = operatorDirs(ops);
        long handles = 0;
        for (OperatorState op : ops) {
            for (Map.Entry<Integer, OperatorSubtaskState> e :
                    new TreeMap<>(op.getSubtaskStates()).entrySet()) {
                OperatorSubtaskState s = e.getValue();
                var in = Handles.inputs(s);
                var outs = Handles.outputs(s);
                if (in.isEmpty() && outs.isEmpty()) continue;
                Path dir = out.resolve(dirs.get(op)).resolve("subtask-" + e.getKey());
                Files.createDirectories(dir);
                copyChannels(in, dir, h -> "gate-" + h.getInfo().getGateIdx() + "-channel-"
                        + h.getInfo().getInputChannelIdx());
                copyChannels(outs, dir, h -> "partition-" + h.getInfo().getPartitionIdx()
                        + "-subpartition-" + h.getInfo().getSubPartitionIdx());
                handles += in.size() + outs.size();
            }
        }
        return handles;
    }

    /**
     * One file per handle, its entries' payloads in Flink's reading order: handles grouped by
     * delegate, each delegate opened once, its header read, then every offset ascending.
     */
    private <H extends AbstractChannelStateHandle<?>> void copyChannels(
            List<H> handles, Path dir, Function<H, String> name) throws IOException {
        Map<StreamStateHandle, List<H>> byDelegate = new LinkedHashMap<>();
        for (H h : handles) byDelegate.computeIfAbsent(h.getDelegate(), d -> new ArrayList<>()).add(h);
        for (Map.Entry<StreamStateHandle, List<H>> d : byDelegate.entrySet()) {
            List<H> hs = d.getValue();
            List<long[]> offsets = new ArrayList<>(); // [offset, index into hs]
            OutputStream[] files = new OutputStream[hs.size()];
            try {
                for (int i = 0; i < hs.size(); i++) {
                    files[i] = new FileOutputStream(dir.resolve(name.apply(hs.get(i)) + ".bin").toFile());
                    this.files++;
                    for (long off : hs.get(i).getOffsets()) offsets.add(new long[] {off, i});
                }
                if (offsets.isEmpty()) continue;
                offsets.sort((x, y) -> Long.compare(x[0], y[0]));
                try (FSDataInputStream in = d.getKey().openInputStream()) {
                    reader.readHeader(in);
                    for (long[] oi : offsets) {
                        byte[] payload = reader.readEntry(in, oi[0]);
                        files[(int) oi[1]].write(payload);
                        bytes += payload.length;
                        entries++;
                    }
                }
            } finally {
                for (OutputStream f : files) if (f != null) f.close();
            }
        }
    }

    /** The uid where it is a plain file name used by no other operator and no id, else the id. */
    private static Map<OperatorState, String> operatorDirs(List<OperatorState> ops) {
        Set<String> ids = new HashSet<>();
        Map<String, Integer> uses = new HashMap<>();
        for (OperatorState op : ops) {
            ids.add(op.getOperatorID().toString());
            String uid = Handles.uid(op);
            if (uid != null) uses.merge(uid, 1, Integer::sum);
        }
        Map<OperatorState, String> dirs = new IdentityHashMap<>();
        for (OperatorState op : ops) {
            String uid = Handles.uid(op);
            boolean plain = uid != null && PLAIN_NAME.matcher(uid).matches()
                    && uses.get(uid) == 1 && !ids.contains(uid);
            dirs.put(op, plain ? uid : op.getOperatorID().toString());
        }
        return dirs;
    }
}
