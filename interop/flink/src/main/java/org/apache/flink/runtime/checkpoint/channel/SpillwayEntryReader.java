package org.apache.flink.runtime.checkpoint.channel;

import org.apache.flink.core.fs.FSDataInputStream;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads channel-state entries with Flink's own (package-private) {@code ChannelStateSerializerImpl},
 * the way {@code SequentialChannelStateReaderImpl} / {@code ChannelStateChunkReader} do: the header
 * once per delegate stream, then for each offset (ascending) seek, {@code readLength}, {@code
 * readData}. It lives in Flink's package only to reach that class; it holds no format knowledge.
 */
public final class SpillwayEntryReader {
    private final ChannelStateSerializer serializer = new ChannelStateSerializerImpl();

    /** Opens nothing itself: `in` is the delegate's stream at position 0. */
    public void readHeader(FSDataInputStream in) throws IOException {
        serializer.readHeader(in);
    }

    /** The payload of the entry at `offset` (without its 4-byte length). */
    public byte[] readEntry(FSDataInputStream in, long offset) throws IOException {
        if (in.getPos() != offset) {
            in.seek(offset);
        }
        int length = serializer.readLength(in);
        byte[] payload = new byte[length];
        ChannelStateByteBuffer buffer = ChannelStateByteBuffer.wrap(payload);
        int left = length;
        while (left > 0) {
            int read = serializer.readData(in, buffer, left);
            if (read <= 0) throw new IOException("short read at offset " + offset);
            left -= read;
        }
        return payload;
    }

    /** Convenience: all entries at the given (already sorted) offsets. */
    public List<byte[]> readEntries(FSDataInputStream in, List<Long> sortedOffsets)
            throws IOException {
        List<byte[]> out = new ArrayList<>(sortedOffsets.size());
        for (long offset : sortedOffsets) out.add(readEntry(in, offset));
        return out;
    }
}
