package dev.spillway.flink;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.serialization.SerializerConfigImpl;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.java.tuple.Tuple;
import org.apache.flink.api.java.typeutils.RowTypeInfo;
import org.apache.flink.core.fs.FSDataInputStream;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.channel.SpillwayEntryReader;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.state.AbstractChannelStateHandle;
import org.apache.flink.runtime.state.InputChannelStateHandle;
import org.apache.flink.runtime.state.ResultSubpartitionStateHandle;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.streaming.runtime.streamrecord.StreamElement;
import org.apache.flink.streaming.runtime.streamrecord.StreamElementSerializer;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * Says what the records in a {@link TypedWriter} checkpoint ({@code --job typed}, the default) or
 * a {@link Writer} checkpoint ({@code --job writer}: {@code Tuple2<Long, String>} into slow-join's
 * two input gates, each gate's upstream read off Flink's job graph by {@link WriterGraph}) are,
 * with Flink's classes only:
 * every channel's entries read with Flink's {@code ChannelStateSerializerImpl} (reading order:
 * per delegate, offsets ascending), cut at Flink's {@code [int32 length]} framing, and each
 * element deserialized by Flink's {@code StreamElementSerializer} over the pipeline's own
 * {@code TypeSerializer}. The record an input channel ends inside is completed from the head of
 * the upstream subtask's output subpartition (upstream subtask = channel, subpartition = this
 * subtask: a keyBy edge; the upstream operator is the one feeding that input gate) and
 * deserialized whole; that head's length — known here from the
 * downstream's piece — is where the upstream's own elements start.
 *
 * <p>Writes {@code records.jsonl} (one line per element, as {@code spillway flink records}
 * prints it: position, kind, bytes, timestamp, value, end, stitched) and {@code types.json}
 * (per pipeline: its spec, max parallelism, downstream operator id, and its upstream: {@code
 * upstream}, the one feeding gate 0, for the typed job; {@code upstreams}, gate → operator id,
 * for the Writer's).
 *
 * <p>Usage: {@code RecordsOracle --checkpoint CHK_DIR --expected DIR [--job typed|writer]}.
 */
public final class RecordsOracle {

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = Args.parse(args);
        Path chk = Path.of(Args.required(opts, "checkpoint")).toAbsolutePath();
        Path expected = Path.of(Args.required(opts, "expected")).toAbsolutePath();
        long started = System.nanoTime();
        String job = opts.getOrDefault("job", "typed");
        if (!job.equals("typed") && !job.equals("writer")) {
            throw new IllegalArgumentException("--job is typed or writer, not " + job);
        }
        write(chk, expected, job.equals("writer"));
        System.err.printf("records oracle: %.1f s%n", (System.nanoTime() - started) / 1e9);
    }

    /** Writes `records.jsonl` and `types.json` for the checkpoint `chk` into `expected`. */
    static void write(Path chk, Path expected, boolean writerJob) throws Exception {
        new RecordsOracle().run(chk, expected, writerJob);
    }

    private final SpillwayEntryReader reader = new SpillwayEntryReader();

    /** Channel bytes of one operator: subtask → channel name → bytes. */
    private static final class Sides {
        final Map<Integer, Map<String, byte[]>> in = new TreeMap<>();
        final Map<Integer, Map<String, byte[]>> out = new TreeMap<>();
    }

    /** One pipeline to read: its record type, its downstream and, per input gate, its upstream. */
    private record Spec(String name, String spec, int maxParallelism, TypeInformation<?> type,
            String down, Map<Integer, String> upByGate) {}

    private void run(Path chk, Path expected, boolean writerJob) throws Exception {
        CheckpointMetadata metadata;
        try (DataInputStream in =
                new DataInputStream(Files.newInputStream(chk.resolve("_metadata")))) {
            metadata = Checkpoints.loadCheckpointMetadata(
                    in, RecordsOracle.class.getClassLoader(), chk.toString());
        }
        Map<String, Sides> sides = new TreeMap<>();
        Map<String, Integer> maxParallelismOf = new TreeMap<>();
        for (OperatorState op : metadata.getOperatorStates()) {
            String id = op.getOperatorID().toString();
            Sides s = new Sides();
            for (Map.Entry<Integer, OperatorSubtaskState> e : op.getSubtaskStates().entrySet()) {
                List<InputChannelStateHandle> in = Handles.inputs(e.getValue());
                List<ResultSubpartitionStateHandle> out = Handles.outputs(e.getValue());
                if (!in.isEmpty()) {
                    s.in.put(e.getKey(), readChannels(in, h -> h.getInfo().getGateIdx() + "/"
                            + h.getInfo().getInputChannelIdx()));
                }
                if (!out.isEmpty()) {
                    s.out.put(e.getKey(), readChannels(out, h -> h.getInfo().getPartitionIdx() + "/"
                            + h.getInfo().getSubPartitionIdx()));
                }
            }
            if (s.in.isEmpty() && s.out.isEmpty()) continue;
            sides.put(id, s);
            maxParallelismOf.put(id, op.getMaxParallelism());
        }
        Files.createDirectories(expected);
        StringBuilder lines = new StringBuilder();
        List<Object> types = new ArrayList<>();
        for (Spec p : writerJob ? writerSpecs(sides, maxParallelismOf) : typedSpecs(sides, maxParallelismOf)) {
            Map<String, Object> t = new LinkedHashMap<>();
            t.put("name", p.name());
            t.put("spec", p.spec());
            t.put("maxParallelism", p.maxParallelism());
            if (writerJob) {
                t.put("downstream", p.down());
                Map<String, Object> ups = new LinkedHashMap<>();
                p.upByGate().forEach((g, up) -> ups.put(String.valueOf(g), up));
                t.put("upstreams", ups);
            } else {
                t.put("upstream", p.upByGate().get(0));
                t.put("downstream", p.down());
            }
            types.add(t);
            new Pipeline(p, sides, lines).emit();
        }
        Files.writeString(expected.resolve("records.jsonl"), lines.toString());
        Files.writeString(expected.resolve("types.json"), Json.write(types));
    }

    /** The typed job: each kind's operators share its max parallelism; one gate, one upstream. */
    private static List<Spec> typedSpecs(Map<String, Sides> sides, Map<String, Integer> maxP) {
        List<Spec> out = new ArrayList<>();
        for (TypedJob.Kind kind : TypedJob.KINDS) {
            String down = null, up = null;
            for (Map.Entry<String, Sides> e : sides.entrySet()) {
                if (maxP.get(e.getKey()) != kind.maxParallelism()) continue;
                if (!e.getValue().in.isEmpty()) down = e.getKey();
                if (!e.getValue().out.isEmpty()) up = e.getKey();
            }
            Map<Integer, String> ups = new TreeMap<>();
            if (up != null) ups.put(0, up);
            out.add(new Spec(kind.name(), kind.spec(), kind.maxParallelism(), kind.type(), down, ups));
        }
        return out;
    }

    /**
     * The Writer's job: slow-join (the one operator with input-channel state) reads
     * {@code Tuple2<Long, String>} on two gates; gate g's upstream is the operator with output
     * state among the operators of the vertex Flink's job graph connects to gate g.
     */
    private static List<Spec> writerSpecs(Map<String, Sides> sides, Map<String, Integer> maxP) {
        List<String> downs = new ArrayList<>();
        sides.forEach((id, s) -> {
            if (!s.in.isEmpty()) downs.add(id);
        });
        if (downs.size() != 1) throw new IllegalStateException("input state on " + downs);
        String down = downs.get(0);
        Map<Integer, String> ups = new TreeMap<>();
        List<java.util.Set<String>> gates = WriterGraph.gateProducers(down);
        for (int g = 0; g < gates.size(); g++) {
            for (Map.Entry<String, Sides> e : sides.entrySet()) {
                if (gates.get(g).contains(e.getKey()) && !e.getValue().out.isEmpty()) {
                    ups.put(g, e.getKey());
                }
            }
        }
        return List.of(new Spec("writer", "Tuple2<Long, String>", maxP.get(down),
                Types.TUPLE(Types.LONG, Types.STRING), down, ups));
    }

    /** One pipeline's elements: the downstream's input channels, the upstreams' subpartitions. */
    private static final class Pipeline {
        final Spec p;
        final Map<String, Sides> sides;
        final StringBuilder lines;
        final StreamElementSerializer<Object> ser;
        /** "upstream/subtask/0/subpartition" → bytes of the head the downstream holds. */
        final Map<String, Integer> heads = new TreeMap<>();

        Pipeline(Spec p, Map<String, Sides> sides, StringBuilder lines) {
            this.p = p;
            this.sides = sides;
            this.lines = lines;
            @SuppressWarnings("unchecked")
            TypeSerializer<Object> s =
                    (TypeSerializer<Object>) p.type().createSerializer(new SerializerConfigImpl());
            this.ser = new StreamElementSerializer<>(s);
        }

        byte[] upstreamBytes(String up, int subtask, int subpartition) {
            Sides upSides = up == null ? null : sides.get(up);
            if (upSides == null) return null;
            Map<String, byte[]> m = upSides.out.get(subtask);
            return m == null ? null : m.get("0/" + subpartition);
        }

        void emit() throws IOException {
            if (p.down() != null) {
                for (Map.Entry<Integer, Map<String, byte[]>> s : sides.get(p.down()).in.entrySet()) {
                    for (Map.Entry<String, byte[]> ch : s.getValue().entrySet()) {
                        String[] gc = ch.getKey().split("/");
                        String pos = "{\"operator\":\"" + p.down() + "\",\"subtask\":" + s.getKey()
                                + ",\"side\":\"input\",\"gate\":" + gc[0] + ",\"channel\":" + gc[1];
                        input(pos, p.upByGate().get(Integer.parseInt(gc[0])), s.getKey(),
                                Integer.parseInt(gc[1]), ch.getValue());
                    }
                }
            }
            for (String up : new java.util.TreeSet<>(p.upByGate().values())) {
                for (Map.Entry<Integer, Map<String, byte[]>> s : sides.get(up).out.entrySet()) {
                    for (Map.Entry<String, byte[]> ch : s.getValue().entrySet()) {
                        String[] ps = ch.getKey().split("/");
                        String pos = "{\"operator\":\"" + up + "\",\"subtask\":" + s.getKey()
                                + ",\"side\":\"output\",\"partition\":" + ps[0]
                                + ",\"subpartition\":" + ps[1];
                        int head = heads.getOrDefault(up + "/" + s.getKey() + "/" + ch.getKey(), 0);
                        output(pos, ch.getValue(), head);
                    }
                }
            }
        }

        /** Whole frames from `pos`; returns where the first incomplete one starts. */
        int frames(String position, byte[] data, int from, int[] index) throws IOException {
            int pos = from;
            while (data.length - pos >= 4) {
                int len = readInt(data, pos);
                if (len <= 0 || data.length - pos - 4 < len) break;
                StreamElement el = ser.deserialize(new DataInputDeserializer(data, pos + 4, len));
                line(position, index[0]++, el, len, null);
                pos += 4 + len;
            }
            return pos;
        }

        void input(String position, String up, int subtask, int channel, byte[] data)
                throws IOException {
            int[] index = {0};
            int pos = frames(position, data, 0, index);
            if (pos == data.length) return;
            // A record cut here: its rest is the head of upstream subtask `channel`'s
            // subpartition `subtask` — join the two and let Flink read it whole.
            byte[] tail = java.util.Arrays.copyOfRange(data, pos, data.length);
            byte[] head = upstreamBytes(up, channel, subtask);
            if (head != null) {
                byte[] field = new byte[4];
                int fromTail = Math.min(4, tail.length);
                System.arraycopy(tail, 0, field, 0, fromTail);
                if (head.length >= 4 - fromTail) {
                    System.arraycopy(head, 0, field, fromTail, 4 - fromTail);
                    int len = readInt(field, 0);
                    int have = Math.max(0, tail.length - 4);
                    int headBytes = (4 - fromTail) + (len - have);
                    if (len > 0 && head.length >= headBytes) {
                        ByteArrayOutputStream joined = new ByteArrayOutputStream();
                        joined.write(tail, Math.min(4, tail.length), have);
                        joined.write(head, 4 - fromTail, len - have);
                        byte[] element = joined.toByteArray();
                        StreamElement el = ser.deserialize(
                                new DataInputDeserializer(element, 0, element.length));
                        heads.put(up + "/" + channel + "/0/" + subtask, headBytes);
                        line(position, index[0]++, el, len,
                                ",\"stitched\":{\"operator\":\"" + up + "\",\"subtask\":" + channel
                                        + ",\"partition\":0,\"subpartition\":" + subtask
                                        + ",\"bytes\":" + headBytes + "}");
                        return;
                    }
                }
            }
            lines.append(position).append(",\"index\":").append(index[0])
                    .append(",\"kind\":\"partial\",\"bytes\":").append(tail.length)
                    .append(",\"end\":\"tail\",\"value\":\"")
                    .append(Base64.getEncoder().encodeToString(tail)).append("\"}\n");
        }

        void output(String position, byte[] data, int head) throws IOException {
            int[] index = {0};
            if (head > 0) {
                lines.append(position).append(",\"index\":0,\"kind\":\"partial\",\"bytes\":")
                        .append(head).append(",\"end\":\"head\",\"value\":\"")
                        .append(Base64.getEncoder().encodeToString(
                                java.util.Arrays.copyOfRange(data, 0, head)))
                        .append("\"}\n");
                index[0]++;
            }
            int pos = frames(position, data, head, index);
            if (pos != data.length) {
                throw new IllegalStateException(position + ": output state ends inside an element");
            }
        }

        void line(String position, int index, StreamElement el, int bytes, String extra) {
            StringBuilder sb = lines;
            sb.append(position).append(",\"index\":").append(index).append(",\"kind\":\"");
            if (el.isRecord()) {
                StreamRecord<Object> r = el.asRecord();
                sb.append("record\",\"bytes\":").append(bytes);
                if (r.hasTimestamp()) sb.append(",\"timestamp\":").append(r.getTimestamp());
                sb.append(",\"value\":");
                value(sb, r.getValue(), p.type());
            } else if (el.isWatermark()) {
                sb.append("watermark\",\"bytes\":").append(bytes).append(",\"timestamp\":")
                        .append(el.asWatermark().getTimestamp());
            } else if (el.isWatermarkStatus()) {
                sb.append("watermarkStatus\",\"bytes\":").append(bytes).append(",\"status\":\"")
                        .append(el.asWatermarkStatus().isIdle() ? "idle" : "active").append('"');
            } else if (el.isLatencyMarker()) {
                sb.append("latencyMarker\",\"bytes\":").append(bytes);
            } else {
                String name = el.getClass().getSimpleName();
                sb.append(Character.toLowerCase(name.charAt(0))).append(name.substring(1))
                        .append("\",\"bytes\":").append(bytes);
            }
            if (extra != null) sb.append(extra);
            sb.append("}\n");
        }
    }

    static int readInt(byte[] b, int at) {
        return ((b[at] & 0xff) << 24) | ((b[at + 1] & 0xff) << 16) | ((b[at + 2] & 0xff) << 8)
                | (b[at + 3] & 0xff);
    }

    /** A deserialized value as JSON, as DESIGN §8 shapes it. */
    static void value(StringBuilder sb, Object v, TypeInformation<?> type) {
        if (v == null) {
            sb.append("null");
        } else if (v instanceof Long || v instanceof Integer || v instanceof Short
                || v instanceof Byte || v instanceof Boolean) {
            sb.append(v);
        } else if (v instanceof Double || v instanceof Float) {
            sb.append(((Number) v).doubleValue());
        } else if (v instanceof String || v instanceof Character) {
            string(sb, v.toString());
        } else if (v instanceof byte[]) {
            sb.append('"').append(Base64.getEncoder().encodeToString((byte[]) v)).append('"');
        } else if (v instanceof Tuple) {
            Tuple t = (Tuple) v;
            sb.append('[');
            for (int i = 0; i < t.getArity(); i++) {
                if (i > 0) sb.append(',');
                value(sb, t.getField(i), type);
            }
            sb.append(']');
        } else if (v instanceof Row) {
            Row row = (Row) v;
            String[] names = ((RowTypeInfo) type).getFieldNames();
            sb.append('{');
            if (row.getKind() != RowKind.INSERT) {
                sb.append("\"$kind\":");
                string(sb, row.getKind().shortString());
                sb.append(',');
            }
            for (int i = 0; i < names.length; i++) {
                if (i > 0) sb.append(',');
                string(sb, names[i]);
                sb.append(':');
                value(sb, row.getField(i), type);
            }
            sb.append('}');
        } else if (v instanceof List) {
            sb.append('[');
            int i = 0;
            for (Object x : (List<?>) v) {
                if (i++ > 0) sb.append(',');
                value(sb, x, type);
            }
            sb.append(']');
        } else if (v instanceof Map) {
            sb.append('[');
            int i = 0;
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                if (i++ > 0) sb.append(',');
                sb.append('[');
                value(sb, e.getKey(), type);
                sb.append(',');
                value(sb, e.getValue(), type);
                sb.append(']');
            }
            sb.append(']');
        } else if (v instanceof TypedJob.Event) {
            TypedJob.Event e = (TypedJob.Event) v;
            sb.append("{\"counts\":");
            value(sb, e.counts, type);
            sb.append(",\"id\":");
            value(sb, e.id, type);
            sb.append(",\"note\":");
            value(sb, e.note, type);
            sb.append(",\"score\":");
            value(sb, e.score, type);
            sb.append('}');
        } else {
            throw new IllegalArgumentException("no JSON for " + v.getClass());
        }
    }

    static void string(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') sb.append('\\').append(c);
            else if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
            else sb.append(c);
        }
        sb.append('"');
    }

    /** Each channel's entry payloads in Flink's reading order (per delegate, offsets ascending). */
    private <H extends AbstractChannelStateHandle<?>> Map<String, byte[]> readChannels(
            List<H> handles, Function<H, String> name) throws IOException {
        Map<String, ByteArrayOutputStream> out = new TreeMap<>();
        Map<StreamStateHandle, List<H>> byDelegate = handles.stream().collect(Collectors.groupingBy(
                AbstractChannelStateHandle::getDelegate, LinkedHashMap::new, Collectors.toList()));
        for (Map.Entry<StreamStateHandle, List<H>> d : byDelegate.entrySet()) {
            List<long[]> offsets = new ArrayList<>();
            List<H> hs = d.getValue();
            for (int i = 0; i < hs.size(); i++) {
                out.putIfAbsent(name.apply(hs.get(i)), new ByteArrayOutputStream());
                for (long off : hs.get(i).getOffsets()) offsets.add(new long[] {off, i});
            }
            offsets.sort((x, y) -> Long.compare(x[0], y[0]));
            try (FSDataInputStream in = d.getKey().openInputStream()) {
                reader.readHeader(in);
                for (long[] oi : offsets) {
                    out.get(name.apply(hs.get((int) oi[1]))).write(reader.readEntry(in, oi[0]));
                }
            }
        }
        Map<String, byte[]> result = new TreeMap<>();
        out.forEach((k, v) -> result.put(k, v.toByteArray()));
        return result;
    }
}
