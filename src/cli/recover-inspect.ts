/**
 * `spillway recover --inspect[=PORT]`: a real recovery watched live. The inspector server runs
 * in this process on 127.0.0.1, is fed the task actor's inspection events (the library's
 * `inspect` option), its ownership and progress (what `recovery.ownership()` and `progress()`
 * say, for the page's per-owner files and bytes), what is recovered and its files per channel
 * as they grow. When the recovery has ended the server keeps serving until an open page has
 * been sent the end, for `--inspect-hold SECONDS` more, or until a page has shown it with
 * `--wait-for-page` (Ctrl-C ends any hold); a run with no page and no hold exits at once, so a
 * script is never kept waiting for a page nobody opens.
 */
import type { WatchAbout } from '../../inspector/owners.ts';

export type { WatchAbout };
import type { InspectorServer } from '../../inspector/server.ts';
import type { StartedRecovery } from '../recover.ts';
import { UsageError } from './args.ts';
import type { Io } from './io.ts';
import { trapSignals } from './signals.ts';

/** An open page is waited for this long at most to be sent the end (it normally takes ms). */
const CATCH_UP_MS = 5_000;

/** The `--inspect` lines of `recover --help`. */
export const inspectUsage = `  --inspect[=PORT]
                 watch this recovery live: serve the inspector page on 127.0.0.1:PORT
                 (none or 0: a free port); the URL is printed on stderr. The page shows the
                 checkpoint, operator, subtask and the bytes of each channel's file as it grows.
                 After the end the server stays until an open page has been sent the end
  --inspect-hold SECONDS
                 with --inspect: keep serving SECONDS more after the recovery ended (Ctrl-C
                 stops sooner), to look at the page at leisure
  --wait-for-page
                 with --inspect: start the recovery only once a page is open, and keep serving
                 after the end until a page has been sent it (Ctrl-C stops sooner)
`;

/** What `--inspect`, `--inspect-hold` and `--wait-for-page` asked for. */
export interface InspectFlags {
  /** The port (0: any free one); undefined without `--inspect`. */
  port: number | undefined;
  /** Seconds to keep serving after the end. */
  holdSeconds: number;
  waitForPage: boolean;
}

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
export function takeInspectFlag(argv: readonly string[]): { rest: string[] } & InspectFlags {
  let port: number | undefined;
  let holdSeconds: number | undefined;
  let waitForPage = false;
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') {
      rest.push(...argv.slice(i));
      break;
    }
    if (arg === '--wait-for-page') {
      waitForPage = true;
      continue;
    }
    const hold = /^--inspect-hold(?:=(.*))?$/.exec(arg);
    if (hold !== null) {
      const raw = hold[1] ?? argv[++i];
      if (raw === undefined || !/^\d{1,6}$/.test(raw)) {
        throw new UsageError(`--inspect-hold needs whole seconds (0..999999), got '${raw ?? ''}'`);
      }
      holdSeconds = Number(raw);
      continue;
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
  if (port === undefined && (holdSeconds !== undefined || waitForPage)) {
    throw new UsageError(
      `${waitForPage ? '--wait-for-page' : '--inspect-hold'} goes with --inspect (the page it waits for)`,
    );
  }
  return { rest, port, holdSeconds: holdSeconds ?? 0, waitForPage };
}

/**
 * What the recover command hands each recovery it starts: the `inspect` option to spread into
 * its options, and `watch` around the started recovery. Without `--inspect` both do nothing.
 */
export interface RecoveryInspector {
  /** `{ inspect }` for `startRecovery`, or `{}`. */
  readonly options: { inspect?: InspectorServer['inspect'] };
  /**
   * Relays the recovery's ownership and progress to the page until it ends, with what it
   * recovers and the dir where its per-channel files grow (`about`); returns it.
   */
  watch(recovery: StartedRecovery, about?: WatchAbout): StartedRecovery;
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
  const { rest, port, holdSeconds, waitForPage } = takeInspectFlag(argv);
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
  const announce = (what = 'live inspector at') => {
    if (announced) return;
    announced = true;
    io.err.write(`spillway recover: ${what} ${server.url}\n`);
  };
  const inspector: RecoveryInspector = {
    options: { inspect: server.inspect },
    watch(recovery, about) {
      // Said when there is something to watch: a usage error before it leaves no stray URL.
      announce();
      server.watch(recovery, about);
      publishSpill(server, recovery);
      return recovery;
    },
  };
  try {
    if (waitForPage) {
      announce('open the live inspector to start the recovery:');
      const stopped = await whileServing(() => pageCaughtUp(server), Infinity);
      if (stopped !== undefined) return stopped;
    }
    const code = await body(rest, inspector);
    // The end has happened; what the page was sent of it may still be queued.
    const hold = holdSeconds > 0 || waitForPage;
    if (hold) {
      io.err.write(
        `spillway recover: ended (exit ${code}); still serving ${server.url} ` +
          `${holdSeconds > 0 ? `for ${holdSeconds} s` : 'until a page has shown the end'} (Ctrl-C stops)\n`,
      );
    }
    // A signal during the hold stops serving; the recovery's result stands (its exit code).
    await whileServing(
      async () => {
        if (holdSeconds > 0) return false;
        if (waitForPage) return pageCaughtUp(server);
        return server.pages().open === 0 || pageCaughtUp(server);
      },
      holdSeconds > 0 ? holdSeconds * 1000 : waitForPage ? Infinity : CATCH_UP_MS,
    );
    return code;
  } finally {
    await server.close();
  }
}

/** Whether a page is open and has been sent everything (the end included). */
function pageCaughtUp(server: InspectorServer): boolean {
  const pages = server.pages();
  return pages.open > 0 && pages.catchingUp === 0 && pages.bufferedBytes === 0;
}

/**
 * Polls `done` every 20 ms for at most `ms` (the server keeps no listener list for this
 * one-off), while a terminating signal ends the wait: resolves to 128+n after signal n, else
 * undefined. The poll's timer keeps the process alive, as the open server does.
 */
async function whileServing(
  done: () => boolean | Promise<boolean>,
  ms: number,
): Promise<number | undefined> {
  const signals = trapSignals();
  const deadline = Date.now() + ms;
  try {
    while (!signals.signal.aborted && Date.now() < deadline && !(await done())) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return signals.exitCode;
  } finally {
    signals.dispose();
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
