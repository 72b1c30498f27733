package dev.spillway.flink;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Where a harness program puts Flink's own files. Flink's MiniCluster leaves files in its temp
 * dirs (minicluster_&lt;id&gt;/, the extracted 20+ MB flink-rpc-akka*.jar, web upload dirs):
 * all of them go into one dir, set as {@code java.io.tmpdir} before any Flink class reads it.
 * With {@code --tmp DIR} that dir is the caller's (a test's temp dir, which the test removes
 * once the JVM has exited — nothing can race it then); without it the program makes one and
 * removes it at the end. One place for the jobs of this harness, and one way to remove a tree.
 */
final class Scratch implements AutoCloseable {
    final Path dir;
    private final boolean own;
    private final String who;

    private Scratch(Path dir, boolean own, String who) {
        this.dir = dir;
        this.own = own;
        this.who = who;
    }

    /** The {@code --tmp} dir of {@code opts}, or a new one named {@code spillway-flink-<who>-…}. */
    static Scratch open(Map<String, String> opts, String who) throws IOException {
        boolean own = !opts.containsKey("tmp");
        Path dir =
                own
                        ? Files.createTempDirectory("spillway-flink-" + who + "-")
                        : Files.createDirectories(Path.of(opts.get("tmp")).toAbsolutePath());
        System.setProperty("java.io.tmpdir", dir.toString());
        return new Scratch(dir, own, who);
    }

    /**
     * Removes the dir if it is this program's own. A failure is printed, not thrown: the
     * program's result (its exit code, what it printed) is what its caller came for.
     */
    @Override
    public void close() {
        if (!own) return;
        try {
            deleteTree(dir);
        } catch (IOException e) {
            System.err.println(who + ": could not remove " + dir + ": " + e);
        }
    }

    /**
     * Removes a tree. Flink's shutdown may still be removing (or finishing) parts of it, so a
     * walk that meets a changing tree is retried, up to 20 times 100 ms apart, before it fails.
     */
    static void deleteTree(Path p) throws IOException {
        for (int attempt = 0; ; attempt++) {
            try (Stream<Path> all = Files.walk(p)) {
                for (Path q : (Iterable<Path>) all.sorted(Comparator.reverseOrder())::iterator) {
                    Files.deleteIfExists(q);
                }
                return;
            } catch (NoSuchFileException gone) {
                if (!Files.exists(p)) return;
            } catch (IOException | UncheckedIOException busy) {
                if (attempt >= 20) {
                    throw busy instanceof IOException
                            ? (IOException) busy
                            : ((UncheckedIOException) busy).getCause();
                }
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while removing " + p, e);
            }
        }
    }
}
