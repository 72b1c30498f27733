package dev.spillway.flink;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.api.java.typeutils.runtime.TupleSerializer;
import org.apache.flink.core.fs.FSDataInputStream;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.channel.SpillwayEntryReader;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.state.AbstractChannelStateHandle;
import org.apache.flink.runtime.state.InputChannelStateHandle;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.runtime.state.ResultSubpartitionStateHandle;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.streaming.runtime.streamrecord.StreamElement;
import org.apache.flink.streaming.runtime.streamrecord.StreamElementSerializer;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * The oracle: reads a retained checkpoint with Flink's own classes only and writes what Spillway
 * must produce for it, under {@code --expected DIR}:
 *
 * <ul>
 *   <li>{@code ls.json}: DESIGN §7's {@code flink ls --json} shape, from Flink's in-memory model.
 *   <li>{@code <op>/subtask-<n>/gate-<g>-channel-<c>.bin} and {@code partition-<p>-subpartition-<s>.bin}:
 *       each channel's entry payloads in Flink's reading order (per delegate, offsets ascending).
 *   <li>{@code <op>/rescale-<I>-of-<P>/gate-<g>-channel-<c>.bin} + {@code keygroups.json} for each
 *       operator with input-channel state: the StreamRecords whose key (first field, a Long) Flink's
 *       {@code KeyGroupRangeAssignment} assigns to subtask I of P.
 *   <li>{@code handles.json}: the handle and delegate classes seen (for the fixture README).
 * </ul>
 *
 * <p>Usage: {@code Oracle --checkpoint CHK_DIR --expected DIR [--rescale 0/2,1/2,0/3,1/3,2/3]
 * [--records DIR]}. The records are {@code Tuple2<Long, String>} (the Writer's job). With
 * {@code --records}, the same JVM also writes {@link RecordsOracle}'s reading of every element
 * ({@code --job writer}) into DIR: one Java start for both.
 */
public final class Oracle {

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = Args.parse(args);
        Path chk = Path.of(Args.required(opts, "checkpoint")).toAbsolutePath();
        Path expected = Path.of(Args.required(opts, "expected")).toAbsolutePath();
        String rescale = opts.getOrDefault("rescale", "0/2,1/2,0/3,1/3,2/3");
        long started = System.nanoTime();
        new Oracle(chk, expected).run(rescale);
        System.err.printf("oracle: %.1f s%n", (System.nanoTime() - started) / 1e9);
        if (opts.containsKey("records")) {
            started = System.nanoTime();
            RecordsOracle.write(chk, Path.of(opts.get("records")).toAbsolutePath(), true);
            System.err.printf("records oracle: %.1f s%n", (System.nanoTime() - started) / 1e9);
        }
    }

    private final Path chk;
    private final Path expected;
    private final SpillwayEntryReader reader = new SpillwayEntryReader();

    private Oracle(Path chk, Path expected) {
        this.chk = chk;
        this.expected = expected;
    }

    private void run(String rescale) throws Exception {
        Path metadataFile = chk.resolve("_metadata");
        int version;
        CheckpointMetadata metadata;
        try (DataInputStream in = new DataInputStream(Files.newInputStream(metadataFile))) {
            in.readInt(); // magic, checked by Flink below
            version = in.readInt();
        }
        try (DataInputStream in = new DataInputStream(Files.newInputStream(metadataFile))) {
            metadata =
                    Checkpoints.loadCheckpointMetadata(
                            in, Oracle.class.getClassLoader(), chk.toString());
        }
        Files.createDirectories(expected);

        List<Object> operators = new ArrayList<>();
        List<Object> handleReport = new ArrayList<>();
        for (OperatorState op : metadata.getOperatorStates()) {
            String id = op.getOperatorID().toString();
            Map<String, Object> o = new LinkedHashMap<>();
            o.put("id", id);
            if (Handles.name(op) != null) o.put("name", Handles.name(op));
            if (Handles.uid(op) != null) o.put("uid", Handles.uid(op));
            o.put("parallelism", op.getParallelism());
            o.put("maxParallelism", op.getMaxParallelism());
            List<Object> subtasks = new ArrayList<>();
            Map<Integer, Map<String, byte[]>> inputsBySubtask = new TreeMap<>();
            for (Map.Entry<Integer, OperatorSubtaskState> e :
                    new TreeMap<>(op.getSubtaskStates()).entrySet()) {
                int index = e.getKey();
                OperatorSubtaskState s = e.getValue();
                List<InputChannelStateHandle> in = Handles.inputs(s);
                List<ResultSubpartitionStateHandle> out = Handles.outputs(s);
                Map<String, Object> st = new LinkedHashMap<>();
                st.put("index", index);
                st.put("finished", s.isFinished());
                st.put("inputChannels", in.size());
                st.put("inputBytes", in.stream().mapToLong(h -> h.getStateSize()).sum());
                st.put("outputSubpartitions", out.size());
                st.put("outputBytes", out.stream().mapToLong(h -> h.getStateSize()).sum());
                subtasks.add(st);

                Map<String, byte[]> inBytes =
                        readChannels(in, h -> "gate-" + h.getInfo().getGateIdx() + "-channel-"
                                + h.getInfo().getInputChannelIdx());
                Map<String, byte[]> outBytes =
                        readChannels(out, h -> "partition-" + h.getInfo().getPartitionIdx()
                                + "-subpartition-" + h.getInfo().getSubPartitionIdx());
                Path dir = expected.resolve(id).resolve("subtask-" + index);
                for (Map<String, byte[]> m : List.of(inBytes, outBytes)) {
                    for (Map.Entry<String, byte[]> f : m.entrySet()) {
                        Files.createDirectories(dir);
                        Files.write(dir.resolve(f.getKey() + ".bin"), f.getValue());
                    }
                }
                if (!in.isEmpty()) inputsBySubtask.put(index, inBytes);
                if (!in.isEmpty() || !out.isEmpty()) {
                    handleReport.add(describe(id, index, s, in, out));
                }
            }
            o.put("subtasks", subtasks);
            operators.add(o);
            if (!inputsBySubtask.isEmpty()) {
                for (String pair : rescale.split(",")) {
                    String[] ip = pair.trim().split("/");
                    rescale(id, op.getMaxParallelism(), Integer.parseInt(ip[0]),
                            Integer.parseInt(ip[1]), inputsBySubtask);
                }
            }
        }
        Map<String, Object> ls = new LinkedHashMap<>();
        ls.put("version", version);
        ls.put("checkpointId", metadata.getCheckpointId());
        ls.put("operators", operators);
        Files.writeString(expected.resolve("ls.json"), Json.write(ls));
        Map<String, Object> hr = new LinkedHashMap<>();
        hr.put("flink", Handles.RELEASE_LINE);
        hr.put("metadataVersion", version);
        hr.put("subtasks", handleReport);
        Files.writeString(expected.resolve("handles.json"), Json.write(hr));
    }

    /**
     * One output file per channel: its entries' payloads in Flink's reading order. Like
     * SequentialChannelStateReaderImpl: group handles by delegate, read each delegate's header
     * once, then every offset of that delegate ascending.
     */
    private <H extends AbstractChannelStateHandle<?>> Map<String, byte[]> readChannels(
            List<H> handles, Function<H, String> fileName) throws IOException {
        Map<String, ByteArrayOutputStream> out = new TreeMap<>();
        Map<StreamStateHandle, List<H>> byDelegate =
                handles.stream().collect(Collectors.groupingBy(
                        AbstractChannelStateHandle::getDelegate, LinkedHashMap::new,
                        Collectors.toList()));
        for (Map.Entry<StreamStateHandle, List<H>> d : byDelegate.entrySet()) {
            List<long[]> offsets = new ArrayList<>(); // [offset, handle index]
            List<H> hs = d.getValue();
            for (int i = 0; i < hs.size(); i++) {
                String name = fileName.apply(hs.get(i));
                if (out.containsKey(name)) throw new IllegalStateException("duplicate " + name);
                out.put(name, new ByteArrayOutputStream());
                for (long off : hs.get(i).getOffsets()) offsets.add(new long[] {off, i});
            }
            offsets.sort((x, y) -> Long.compare(x[0], y[0]));
            try (FSDataInputStream in = d.getKey().openInputStream()) {
                reader.readHeader(in);
                for (long[] oi : offsets) {
                    byte[] payload = reader.readEntry(in, oi[0]);
                    out.get(fileName.apply(hs.get((int) oi[1]))).write(payload);
                }
            }
        }
        Map<String, byte[]> result = new TreeMap<>();
        out.forEach((k, v) -> result.put(k, v.toByteArray()));
        return result;
    }

    private static Map<String, Object> describe(
            String id, int index, OperatorSubtaskState s,
            List<InputChannelStateHandle> in, List<ResultSubpartitionStateHandle> out) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("operator", id);
        m.put("subtask", index);
        m.put("handles", Handles.rawKinds(s).stream().distinct().sorted().collect(Collectors.toList()));
        List<String> delegates = new ArrayList<>();
        for (AbstractChannelStateHandle<?> h : in) delegates.add(delegateKind(h.getDelegate()));
        for (AbstractChannelStateHandle<?> h : out) delegates.add(delegateKind(h.getDelegate()));
        m.put("delegates", delegates.stream().distinct().sorted().collect(Collectors.toList()));
        m.put("distinctDelegates",
                java.util.stream.Stream.concat(in.stream(), out.stream())
                        .map(AbstractChannelStateHandle::getDelegate).distinct().count());
        m.put("delegateNames",
                java.util.stream.Stream.concat(in.stream(), out.stream())
                        .map(h -> delegateName(h.getDelegate())).distinct().sorted()
                        .collect(Collectors.toList()));
        return m;
    }

    /** Where a delegate's bytes are, as Flink names them (to see which files subtasks share). */
    private static String delegateName(StreamStateHandle h) {
        if (h instanceof org.apache.flink.runtime.state.filesystem.RelativeFileStateHandle) {
            return "relative:"
                    + ((org.apache.flink.runtime.state.filesystem.RelativeFileStateHandle) h)
                            .getRelativePath();
        }
        if (h instanceof org.apache.flink.runtime.state.filesystem.FileStateHandle) {
            return "file:" + ((org.apache.flink.runtime.state.filesystem.FileStateHandle) h)
                    .getFilePath().getName();
        }
        if (h instanceof org.apache.flink.runtime.state.memory.ByteStreamStateHandle) {
            return "inline:" + ((org.apache.flink.runtime.state.memory.ByteStreamStateHandle) h)
                    .getHandleName();
        }
        if (h instanceof org.apache.flink.runtime.state.filemerging.SegmentFileStateHandle) {
            org.apache.flink.runtime.state.filemerging.SegmentFileStateHandle g =
                    (org.apache.flink.runtime.state.filemerging.SegmentFileStateHandle) h;
            return "segment:" + g.getFilePath().getName() + "@" + g.getStartPos() + "+"
                    + g.getStateSize();
        }
        return h.getClass().getSimpleName() + ":" + h.getStreamStateHandleID();
    }

    private static String delegateKind(StreamStateHandle h) {
        return h.getClass().getSimpleName();
    }

    // ---------------------------------------------------------------- rescaling

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static final TypeSerializer<Tuple2<Long, String>> VALUE =
            new TupleSerializer(Tuple2.class,
                    new TypeSerializer<?>[] {LongSerializer.INSTANCE, StringSerializer.INSTANCE});

    /**
     * Keeps, per virtual channel (old subtask, gate, channel), what Flink's recovery filter keeps:
     * StreamRecords its KeyGroupRangeAssignment sends to subtask I of P, watermarks and watermark
     * statuses (VirtualChannel#getNextRecord returns those); latency markers and any other element
     * are dropped there. Re-serialized with Flink's StreamElementSerializer as
     * [int32 length][element], old subtasks ascending per (gate, channel).
     */
    private void rescale(String id, int maxParallelism, int index, int parallelism,
            Map<Integer, Map<String, byte[]>> inputsBySubtask) throws IOException {
        StreamElementSerializer<Tuple2<Long, String>> ser = new StreamElementSerializer<>(VALUE);
        Path dir = expected.resolve(id).resolve("rescale-" + index + "-of-" + parallelism);
        Files.createDirectories(dir);
        Map<String, ByteArrayOutputStream> files = new TreeMap<>();
        List<Object> channels = new ArrayList<>();
        long kept = 0, dropped = 0;
        for (Map.Entry<Integer, Map<String, byte[]>> sub : inputsBySubtask.entrySet()) {
            for (Map.Entry<String, byte[]> ch : sub.getValue().entrySet()) {
                ByteArrayOutputStream file =
                        files.computeIfAbsent(ch.getKey(), k -> new ByteArrayOutputStream());
                byte[] data = ch.getValue();
                List<Object> keys = new ArrayList<>();
                Map<String, Integer> other = new TreeMap<>();
                int droppedHere = 0;
                int pos = 0;
                while (data.length - pos >= 4) {
                    int len = ((data[pos] & 0xff) << 24) | ((data[pos + 1] & 0xff) << 16)
                            | ((data[pos + 2] & 0xff) << 8) | (data[pos + 3] & 0xff);
                    if (len < 0 || data.length - pos - 4 < len) break; // partial trailing frame
                    StreamElement el =
                            ser.deserialize(new DataInputDeserializer(data, pos + 4, len));
                    pos += 4 + len;
                    boolean keep;
                    if (el.isRecord()) {
                        Long key = ((Tuple2<Long, String>) el.asRecord().getValue()).f0;
                        int target = KeyGroupRangeAssignment.assignKeyToParallelOperator(
                                key, maxParallelism, parallelism);
                        keep = target == index;
                        if (keep) {
                            keys.add(List.of(key, KeyGroupRangeAssignment.assignToKeyGroup(
                                    key, maxParallelism)));
                        } else {
                            droppedHere++;
                        }
                    } else {
                        keep = el.isWatermark() || el.isWatermarkStatus();
                        other.merge(el.getClass().getSimpleName() + (keep ? ":kept" : ":dropped"),
                                1, Integer::sum);
                    }
                    if (keep) {
                        DataOutputSerializer o = new DataOutputSerializer(64);
                        ser.serialize(el, o);
                        int n = o.length();
                        file.write(new byte[] {(byte) (n >>> 24), (byte) (n >>> 16),
                                (byte) (n >>> 8), (byte) n});
                        file.write(o.getSharedBuffer(), 0, n);
                    }
                }
                kept += keys.size();
                dropped += droppedHere;
                String[] gc = ch.getKey().split("-"); // gate-G-channel-C
                Map<String, Object> c = new LinkedHashMap<>();
                c.put("oldSubtask", sub.getKey());
                c.put("gate", Integer.parseInt(gc[1]));
                c.put("channel", Integer.parseInt(gc[3]));
                c.put("droppedRecords", droppedHere);
                c.put("otherElements", other);
                c.put("trailingBytes", data.length - pos);
                c.put("kept", keys);
                channels.add(c);
            }
        }
        for (Map.Entry<String, ByteArrayOutputStream> f : files.entrySet()) {
            Files.write(dir.resolve(f.getKey() + ".bin"), f.getValue().toByteArray());
        }
        Map<String, Object> kg = new LinkedHashMap<>();
        kg.put("operatorId", id);
        kg.put("maxParallelism", maxParallelism);
        kg.put("index", index);
        kg.put("parallelism", parallelism);
        kg.put("key", "long");
        kg.put("keptRecords", kept);
        kg.put("droppedRecords", dropped);
        kg.put("channels", channels);
        Files.writeString(dir.resolve("keygroups.json"), Json.write(kg));
    }

}
