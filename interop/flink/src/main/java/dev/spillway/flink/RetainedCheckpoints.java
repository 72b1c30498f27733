package dev.spillway.flink;

import java.io.File;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * The retained checkpoints a job wrote under its checkpoint root: {@code <out>/<job id>/chk-N}.
 * A checkpoint is complete once its {@code _metadata} exists (Flink writes it last). One place
 * for the jobs of this harness, which each had their own copy of this listing.
 */
final class RetainedCheckpoints {
    private RetainedCheckpoints() {}

    /** Every {@code chk-N} dir under every job dir of {@code out}, complete or not. */
    static List<Path> all(Path out) throws IOException {
        List<Path> found = new ArrayList<>();
        try (Stream<Path> jobs = java.nio.file.Files.list(out)) {
            for (Path job : (Iterable<Path>) jobs::iterator) {
                File[] chks = job.toFile().listFiles((d, n) -> n.startsWith("chk-"));
                if (chks != null) for (File c : chks) found.add(c.toPath());
            }
        }
        return found;
    }

    /** The {@code chk-N} dirs whose {@code _metadata} exists. */
    static List<Path> completed(Path out) throws IOException {
        List<Path> found = new ArrayList<>();
        for (Path c : all(out)) if (c.resolve("_metadata").toFile().isFile()) found.add(c);
        return found;
    }

    /** N of a {@code chk-N} dir. */
    static long number(Path chk) {
        return Long.parseLong(chk.getFileName().toString().substring(4));
    }

    /** The completed checkpoint with the highest N, or null when none has completed. */
    static Path newestCompleted(Path out) throws IOException {
        Path best = null;
        for (Path c : completed(out)) if (best == null || number(c) > number(best)) best = c;
        return best;
    }
}
