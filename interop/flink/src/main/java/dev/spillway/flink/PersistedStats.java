package dev.spillway.flink;

import org.apache.flink.runtime.OperatorIDPair;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobgraph.JobVertex;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.streaming.api.graph.StreamGraph;

import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Flink's own checkpoint statistics of the persisted in-flight data, per job vertex and subtask,
 * read from the running MiniCluster's REST API ({@code GET
 * /jobs/:jobid/checkpoints/details/:checkpointid/subtasks/:vertexid}, each subtask's {@code
 * alignment.persisted}). That figure is {@code SubtaskStateStats.getPersistedData()}, i.e. the
 * task's {@code CheckpointMetrics.getBytesPersistedDuringAlignment()}, which {@code
 * AsyncCheckpointRunnable} sums over every operator of the chain as {@code
 * getResultSubpartitionState().getStateSize() + getInputChannelState().getStateSize()}: so each
 * vertex lists its operators (the chain, from the job graph) for the comparison per subtask.
 */
final class PersistedStats {
    private PersistedStats() {}

    /** A free local port for the MiniCluster's REST endpoint (its stats are read there). */
    static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /** Per job vertex (id as hex): its name and its operators' ids (the chain). */
    static Map<String, Map<String, Object>> vertices(StreamGraph graph) {
        JobGraph job = graph.getJobGraph();
        Map<String, Map<String, Object>> out = new LinkedHashMap<>();
        for (JobVertex v : job.getVertices()) {
            List<String> ops = new ArrayList<>();
            for (OperatorIDPair p : v.getOperatorIDs()) ops.add(p.getGeneratedOperatorID().toHexString());
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("id", v.getID().toHexString());
            m.put("name", v.getName());
            m.put("operators", ops);
            out.put(v.getID().toHexString(), m);
        }
        return out;
    }

    /**
     * Checkpoint {@code checkpointId}'s stats, or null while Flink does not have them for every
     * vertex yet: {@code { checkpointId, field, vertices: [{ id, name, operators, subtasks: [{
     * index, persisted, stateSize }] }] }}.
     */
    static Map<String, Object> read(
            int port, String jobId, Map<String, Map<String, Object>> vertices, long checkpointId)
            throws Exception {
        HttpClient http = HttpClient.newHttpClient();
        ObjectMapper json = new ObjectMapper();
        List<Object> out = new ArrayList<>();
        for (Map<String, Object> v : vertices.values()) {
            URI uri =
                    URI.create(
                            "http://localhost:" + port + "/jobs/" + jobId + "/checkpoints/details/"
                                    + checkpointId + "/subtasks/" + v.get("id"));
            HttpResponse<String> r =
                    http.send(HttpRequest.newBuilder(uri).GET().build(), HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() != 200) return null;
            JsonNode body = json.readTree(r.body());
            List<Object> subtasks = new ArrayList<>();
            for (JsonNode s : body.path("subtasks")) {
                if (!"completed".equals(s.path("status").asText())) return null;
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("index", s.path("index").asLong());
                m.put("persisted", s.path("alignment").path("persisted").asLong());
                m.put("stateSize", s.path("state_size").asLong());
                subtasks.add(m);
            }
            Map<String, Object> m = new LinkedHashMap<>(v);
            m.put("subtasks", subtasks);
            out.add(m);
        }
        Map<String, Object> stats = new LinkedHashMap<>();
        stats.put("checkpointId", checkpointId);
        stats.put(
                "field",
                "REST /jobs/:jobid/checkpoints/details/:checkpointid/subtasks/:vertexid"
                        + " subtasks[].alignment.persisted (SubtaskStateStats.getPersistedData)");
        stats.put("vertices", out);
        return stats;
    }
}
