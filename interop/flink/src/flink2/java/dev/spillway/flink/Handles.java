package dev.spillway.flink;

import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.state.ChannelStateHelper;
import org.apache.flink.runtime.state.InputChannelStateHandle;
import org.apache.flink.runtime.state.ResultSubpartitionStateHandle;

import java.util.ArrayList;
import java.util.List;

/**
 * Flink 2.x: a subtask's channel handles may be merged (one per delegate, metadata v6); Flink's
 * own {@code ChannelStateHelper.extractUnmerged*Handles} gives the per-channel handles, as
 * {@code SequentialChannelStateReaderImpl} uses them.
 */
final class Handles {
    private Handles() {}

    static final String RELEASE_LINE = "2.x";

    static List<InputChannelStateHandle> inputs(OperatorSubtaskState s) {
        return new ArrayList<>(ChannelStateHelper.extractUnmergedInputHandles(s));
    }

    static List<ResultSubpartitionStateHandle> outputs(OperatorSubtaskState s) {
        return new ArrayList<>(ChannelStateHelper.extractUnmergedOutputHandles(s));
    }

    static List<String> rawKinds(OperatorSubtaskState s) {
        List<String> kinds = new ArrayList<>();
        s.getInputChannelState().forEach(h -> kinds.add(h.getClass().getSimpleName()));
        s.getResultSubpartitionState().forEach(h -> kinds.add(h.getClass().getSimpleName()));
        return kinds;
    }

    static String name(OperatorState op) {
        return op.getOperatorName().filter(n -> !n.isEmpty()).orElse(null);
    }

    static String uid(OperatorState op) {
        return op.getOperatorUid().filter(n -> !n.isEmpty()).orElse(null);
    }
}
