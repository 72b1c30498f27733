package dev.spillway.flink;

import java.util.HashMap;
import java.util.Map;

/** `--name value` and bare `--flag` arguments. */
final class Args {
    private Args() {}

    static Map<String, String> parse(String[] args) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            if (!args[i].startsWith("--")) throw new IllegalArgumentException("unexpected " + args[i]);
            String name = args[i].substring(2);
            if (i + 1 < args.length && !args[i + 1].startsWith("--")) {
                m.put(name, args[++i]);
            } else {
                m.put(name, "true");
            }
        }
        return m;
    }

    static String required(Map<String, String> m, String name) {
        String v = m.get(name);
        if (v == null) throw new IllegalArgumentException("--" + name + " is required");
        return v;
    }
}
