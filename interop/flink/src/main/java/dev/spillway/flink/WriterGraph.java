package dev.spillway.flink;

import org.apache.flink.runtime.OperatorIDPair;
import org.apache.flink.runtime.jobgraph.JobEdge;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobgraph.JobVertex;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Which operators feed which input gate of {@link Writer}'s slow-join, as Flink's own job graph
 * says: the pipeline is built again (never executed) and translated by Flink's
 * {@code StreamingJobGraphGenerator}; input gate g of a task is its vertex's g-th input edge
 * ({@code JobVertex#getInputs}, the order the task's gates are deployed in). The checkpoint's
 * operator ids are the generated ids of those vertices' chained operators (uid hashes), so the
 * oracle needs no hashing of its own and no guess from the records' contents.
 */
final class WriterGraph {
    private WriterGraph() {}

    /** Per input gate of the vertex that holds `operator`: the producing vertex's operator ids. */
    static List<Set<String>> gateProducers(String operator) {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(2);
        Writer.pipeline(env, false);
        JobGraph graph = env.getStreamGraph().getJobGraph();
        for (JobVertex v : graph.getVertices()) {
            if (!ids(v).contains(operator)) continue;
            List<Set<String>> gates = new ArrayList<>();
            for (JobEdge e : v.getInputs()) gates.add(ids(e.getSource().getProducer()));
            return gates;
        }
        throw new IllegalStateException("operator " + operator + " is not in Writer's job graph");
    }

    private static Set<String> ids(JobVertex v) {
        Set<String> out = new LinkedHashSet<>();
        for (OperatorIDPair p : v.getOperatorIDs()) out.add(p.getGeneratedOperatorID().toString());
        return out;
    }
}
