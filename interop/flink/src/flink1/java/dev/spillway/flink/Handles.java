package dev.spillway.flink;

import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.state.InputChannelStateHandle;
import org.apache.flink.runtime.state.ResultSubpartitionStateHandle;

import java.util.ArrayList;
import java.util.List;

/** Flink 1.20.x: channel handles are always one per channel (no merged handles, metadata v4). */
final class Handles {
    private Handles() {}

    static final String RELEASE_LINE = "1.20";

    static List<InputChannelStateHandle> inputs(OperatorSubtaskState s) {
        return new ArrayList<>(s.getInputChannelState());
    }

    static List<ResultSubpartitionStateHandle> outputs(OperatorSubtaskState s) {
        return new ArrayList<>(s.getResultSubpartitionState());
    }

    /** The handle classes as Flink deserialized them (for the fixture README). */
    static List<String> rawKinds(OperatorSubtaskState s) {
        List<String> kinds = new ArrayList<>();
        s.getInputChannelState().forEach(h -> kinds.add(h.getClass().getSimpleName()));
        s.getResultSubpartitionState().forEach(h -> kinds.add(h.getClass().getSimpleName()));
        return kinds;
    }

    static String name(OperatorState op) {
        return null; // metadata v4 has no operator names
    }

    static String uid(OperatorState op) {
        return null;
    }
}
