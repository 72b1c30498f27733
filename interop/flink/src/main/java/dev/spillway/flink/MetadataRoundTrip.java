package dev.spillway.flink;

import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Flink's own reading and writing of a {@code _metadata}: each checkpoint directory given is
 * loaded with {@code Checkpoints.loadCheckpointMetadata} (as a restore does) and stored again
 * with {@code Checkpoints.storeCheckpointMetadata} (the release's current serializer), and the
 * bytes are compared with the file. Prints one line per directory: {@code SAME <dir> <bytes>},
 * or {@code DIFF <dir> <file bytes> <stored bytes> <first differing byte>}; a file Flink cannot
 * load prints {@code FAIL <dir> <exception>}. Exit 0 when every one is SAME, else 1.
 *
 * <p>Usage: {@code MetadataRoundTrip DIR...}
 */
public final class MetadataRoundTrip {

    public static void main(String[] args) throws Exception {
        boolean allSame = true;
        for (String arg : args) {
            Path dir = Path.of(arg).toAbsolutePath();
            byte[] file = Files.readAllBytes(dir.resolve("_metadata"));
            try {
                CheckpointMetadata metadata;
                try (DataInputStream in = new DataInputStream(Files.newInputStream(dir.resolve("_metadata")))) {
                    metadata =
                            Checkpoints.loadCheckpointMetadata(
                                    in, MetadataRoundTrip.class.getClassLoader(), dir.toString());
                }
                ByteArrayOutputStream bytes = new ByteArrayOutputStream();
                try (DataOutputStream out = new DataOutputStream(bytes)) {
                    Checkpoints.storeCheckpointMetadata(metadata, out);
                }
                byte[] stored = bytes.toByteArray();
                int at = 0;
                while (at < file.length && at < stored.length && file[at] == stored[at]) at++;
                if (at == file.length && at == stored.length) {
                    System.out.println("SAME " + dir + " " + file.length);
                } else {
                    allSame = false;
                    System.out.println(
                            "DIFF " + dir + " " + file.length + " " + stored.length + " " + at);
                }
            } catch (Exception e) {
                allSame = false;
                System.out.println("FAIL " + dir + " " + e.toString().replace('\n', ' '));
            }
        }
        System.out.flush();
        System.exit(allSame ? 0 : 1);
    }
}
