/**
 * `spillway recover --inspect[=PORT]`: a real recovery watched live. The inspector server runs
 * in this process on 127.0.0.1 for as long as the command does, is fed the task actor's
 * inspection events (the library's `inspect` option) and its ownership and progress (what
 * `recovery.ownership()` and `progress()` say, for the page's per-owner files and bytes), and
 * is closed when the command ends — finished, failed, cancelled or signalled — so the process
 * exits instead of serving a page nobody asked to keep.
 */
import type { InspectorServer } from '../../inspector/server.ts';
import type { StartedRecovery } from '../recover.ts';
import { UsageError } from './args.ts';
import type { Io } from './io.ts';

/** The `--inspect` line of `recover --help`. */
export const inspectUsage = `  --inspect[=PORT]
                 watch this recovery live: serve the inspector page on 127.0.0.1:PORT
                 (none or 0: a free port) while it runs; the URL is printed on stderr, and the
                 server stops when the command ends
`;

/**
 * `--inspect` / `--inspect=PORT` taken out of argv (node's parseArgs has no optional values):
 * the rest for the command's own parser, and the port (`undefined` without the flag). A bad
 * value is a {@link UsageError}: one line, exit 2.
 *
 * @example
 * ```ts
 * takeInspectFlag(['a.spwc', '--inspect=0']); // { rest: ['a.spwc'], port: 0 }
 * ```
 */
export function takeInspectFlag(argv: readonly string[]): {
  rest: string[];
  port: number | undefined;
} {
  let port: number | undefined;
  const rest: string[] = [];
  for (const [i, arg] of argv.entries()) {
    if (arg === '--') {
      rest.push(...argv.slice(i));
      break;
    }
    const m = /^--inspect(?:=(.*))?$/.exec(arg);
    if (m === null) {
      rest.push(arg);
      continue;
    }
    if (port !== undefined) throw new UsageError('--inspect given more than once');
    const raw = m[1];
    if (raw === undefined) port = 0;
    else if (/^\d{1,5}$/.test(raw) && Number(raw) <= 65535) port = Number(raw);
    else throw new UsageError(`--inspect=PORT needs a port 0..65535, got '${raw}'`);
  }
  return { rest, port };
}

/**
 * What the recover command hands each recovery it starts: the `inspect` option to spread into
 * its options, and `watch` around the started recovery. Without `--inspect` both do nothing.
 */
export interface RecoveryInspector {
  /** `{ inspect }` for `startRecovery`, or `{}`. */
  readonly options: { inspect?: InspectorServer['inspect'] };
  /** Relays the recovery's ownership and progress to the page until it ends; returns it. */
  watch(recovery: StartedRecovery): StartedRecovery;
}

const NONE: RecoveryInspector = { options: {}, watch: (recovery) => recovery };

/**
 * Runs `body` (the recover command without `--inspect` in its argv) with the inspector its
 * flag asks for, and closes the server however `body` ends. The server is started before
 * `body` creates anything, so a port in use is refused (one line, exit 2) with nothing to undo.
 *
 * @example
 * ```ts
 * export const run = (argv: string[], io: Io) =>
 *   withRecoveryInspector(argv, io, (rest, inspector) => recover(rest, io, inspector));
 * ```
 */
export async function withRecoveryInspector(
  argv: readonly string[],
  io: Io,
  body: (argv: string[], inspector: RecoveryInspector) => Promise<number>,
): Promise<number> {
  const { rest, port } = takeInspectFlag(argv);
  if (port === undefined || rest.includes('--help') || rest.includes('-h')) {
    return body(rest, NONE);
  }
  // Loaded only with --inspect: a plain recover needs none of the inspector's modules.
  const { startInspectorServer } = await import('../../inspector/server.ts');
  let server: InspectorServer;
  try {
    server = await startInspectorServer({ port });
  } catch (error) {
    throw new UsageError(`--inspect: ${(error as Error).message}`);
  }
  let announced = false;
  const inspector: RecoveryInspector = {
    options: { inspect: server.inspect },
    watch(recovery) {
      // Said when there is something to watch: a usage error before it leaves no stray URL.
      if (!announced) {
        announced = true;
        io.err.write(`spillway recover: live inspector at ${server.url}\n`);
      }
      server.watch(recovery);
      publishSpill(server, recovery);
      return recovery;
    },
  };
  try {
    return await body(rest, inspector);
  } finally {
    await server.close();
  }
}

/**
 * The page's "spill on disk" plot for one recovery: the files and bytes its task dir holds,
 * every 250 ms until it ends (then nothing). The timer never keeps the process alive.
 */
function publishSpill(server: InspectorServer, recovery: StartedRecovery): void {
  const publish = (live: boolean) => {
    const owned = recovery.ownership();
    const held = owned.fetchedState ?? owned.taskDir;
    server.publishMetrics({
      files: live ? (held?.files ?? 0) : 0,
      bytes: live ? (held?.bytes ?? 0) : 0,
      liveTasks: live ? 1 : 0,
    });
  };
  const timer = setInterval(() => publish(true), 250);
  timer.unref();
  publish(true);
  const ended = () => {
    clearInterval(timer);
    publish(false);
  };
  recovery.done.then(ended, ended);
}
