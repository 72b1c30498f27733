/** `spillway inspect [--port P] [--demo [--tasks N] [--concurrency N] [--wait-for-page]] [--stately]` */
import { runDemoLoop } from '../../inspector/demo-loop.ts';
import {
  InspectorServerError,
  startInspectorServer,
  type InspectorServer,
} from '../../inspector/server.ts';
import { intOption, parse, UsageError } from './args.ts';
import type { Io } from './io.ts';
import { trapSignals } from './signals.ts';

export const usage = `usage: spillway inspect [--port P] [--demo [--tasks N] [--concurrency N] [--wait-for-page]]
                        [--stately]

Serves the live inspector page on http://127.0.0.1:P/ (default: a free port) until Ctrl-C.
The page works offline: it loads nothing from the internet.

  --port P          port on 127.0.0.1 (0 = any free port)
  --demo            run a small paced recovery loop so the page has something to show:
                    a checkpoint during drain, a cancellation, a failure in the gap
  --tasks N         with --demo: stop after N tasks (default: run until Ctrl-C)
  --concurrency N   with --demo: tasks at once (default 2)
  --wait-for-page   with --demo: start the first task only once a page is open and caught
                    up, so whoever opens the URL sees it from its first state
  --stately         also serve /stately, which forwards the same stream to Stately's hosted
                    inspector (needs the internet in the browser; see inspector/README.md)

To watch your own recoveries, pass the server's inspect callback:
  recoverChannelState({ ..., inspect: inspector.inspect })

Exit codes: 130 on SIGINT, 143 on SIGTERM · 2 bad usage or port in use
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const { values } = parse(argv, {
    port: { type: 'string' },
    demo: { type: 'boolean' },
    tasks: { type: 'string' },
    concurrency: { type: 'string' },
    stately: { type: 'boolean' },
    'wait-for-page': { type: 'boolean' },
  });
  if (values.help) {
    io.out.write(usage);
    return 0;
  }
  const port = intOption(values, 'port', 0, { max: 65535 });
  const tasks = intOption(values, 'tasks', 0, { min: 1 });
  const concurrency = intOption(values, 'concurrency', 2, { min: 1, max: 64 });
  if (
    !values.demo &&
    (values.tasks !== undefined ||
      values.concurrency !== undefined ||
      values['wait-for-page'] !== undefined)
  ) {
    throw new UsageError('--tasks, --concurrency and --wait-for-page need --demo');
  }

  const signals = trapSignals();
  let inspector: InspectorServer;
  try {
    inspector = await startInspectorServer({ port, stately: values.stately === true });
  } catch (error) {
    signals.dispose();
    if (error instanceof InspectorServerError) throw new UsageError(error.message);
    throw error;
  }
  io.out.write(`spillway inspector: ${inspector.url}\n`);
  if (values.stately)
    io.out.write(`stately bridge: ${inspector.url}stately (needs the internet)\n`);

  const stopDemo = new AbortController();
  const onSignal = () => stopDemo.abort(signals.signal.reason);
  signals.signal.addEventListener('abort', onSignal, { once: true });
  const demo = values.demo
    ? (values['wait-for-page'] === true ? pageOpen(inspector, stopDemo.signal) : Promise.resolve())
        .then(() =>
          runDemoLoop({
            inspector,
            signal: stopDemo.signal,
            concurrency,
            ...(tasks > 0 ? { tasks } : {}),
          }),
        )
        .then(
          (r) => {
            io.err.write(
              `demo: ${r.tasks} tasks (${r.finished} finished, ${r.failed} failed, ${r.cancelled} cancelled)` +
                `${signals.exitCode === undefined ? '; still serving the page until Ctrl-C' : ''}\n`,
            );
          },
          (error: unknown) => {
            io.err.write(`demo: stopped: ${(error as Error)?.message ?? String(error)}\n`);
          },
        )
    : Promise.resolve();

  try {
    // The open server keeps the process alive; this waits for Ctrl-C or SIGTERM.
    await new Promise<void>((resolve) => {
      if (signals.signal.aborted) resolve();
      else signals.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    await demo;
    await inspector.close();
    io.err.write(`spillway inspect: stopped by ${String(signals.signal.reason)}\n`);
    return signals.exitCode ?? 0;
  } finally {
    signals.signal.removeEventListener('abort', onSignal);
    signals.dispose();
  }
}

/** Resolves once a page is connected and has caught up with the history (or on abort). */
function pageOpen(inspector: InspectorServer, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    // The server keeps no listener list for this one-off; a short poll of its own counters is
    // cheap and keeps the server's interface as it is.
    const timer = setInterval(() => {
      const pages = inspector.pages();
      if (signal.aborted || (pages.open > 0 && pages.catchingUp === 0)) {
        clearInterval(timer);
        resolve();
      }
    }, 20);
  });
}
