/**
 * The `spillway` command line (DESIGN §4). Every command is a module with `usage` and
 * `run(argv, io)`; this file only dispatches and turns errors into exit codes.
 */
import { reportError } from './errors.ts';
import { quietOnClosedPipes, safeStream, stdio, type Io } from './io.ts';
import { UsageError } from './args.ts';
import { didYouMean } from '../services/did-you-mean.ts';
import { VERSION } from '../version.ts';

interface Command {
  usage: string;
  run(argv: string[], io: Io): Promise<number>;
}

const commands: Record<string, () => Promise<Command>> = {
  checkpoint: () => import('./checkpoint.ts'),
  demo: () => import('./demo.ts'),
  soak: () => import('./soak.ts'),
  inspect: () => import('./inspect.ts'),
  recover: () => import('./recover.ts'),
  sweep: () => import('./sweep.ts'),
  bench: () => import('./bench.ts'),
  flink: () => import('./flink.ts'),
  tour: () => import('./tour.ts'),
};

export const usage = `usage: spillway COMMAND [OPTIONS]

Reads what an Apache Flink checkpoint holds in flight (the channel state of unaligned
checkpoints) and extracts it outside the JVM: from a local dir, http(s):// or s3://. Every
recovery runs Flink's fetch → gap → drain steps and leaves no spill file behind on any ending.

Flink checkpoints:
  flink       list what a checkpoint holds in flight: spillway flink ls CHECKPOINT
  recover     extract a subtask's channel state into one file per channel:
              spillway recover CHECKPOINT --operator OP --subtask N --out DIR

Also:
  tour        a short walk through a real Flink checkpoint shipped with Spillway ('npm start')
  checkpoint  make a test checkpoint (SPWC): spillway checkpoint make --out FILE
  sweep       remove spill files of dead processes
  inspect     serve the live inspector page
  demo        (default) a pool of tasks in recovery-failure loops, every fault injected, to
              show that no spill file survives any ending
  soak        the demo pool, seeded, checking for leaks of files, heap and fds
  bench       measure spill, drain, orchestration and cleanup against raw I/O

'spillway help COMMAND' (or 'spillway COMMAND --help') shows a command's options;
'spillway --version' the version. docs/flink.md walks through a Flink checkpoint.

Exit codes: 0 ok · 1 failed (first cause printed) · 2 bad input or usage · 128+n after signal n
`;

/** Runs one command line; resolves to the exit code. */
export async function main(argv: string[], given: Io = stdio): Promise<number> {
  let io = given;
  if (io === stdio) {
    quietOnClosedPipes([process.stdout, process.stderr]);
    // A full or failing stdout/stderr drops the report, never the result (docs/cli.md).
    io = { out: safeStream(process.stdout), err: safeStream(process.stderr) };
  }
  const [first, ...rest] = argv;
  if (first === '--help' || first === '-h' || first === 'help') {
    // `spillway help recover` is `spillway recover --help`, as git and npm do it.
    const topic = first === 'help' ? rest.find((a) => !a.startsWith('-')) : undefined;
    if (topic === undefined) {
      io.out.write(usage);
      return 0;
    }
    const load = commands[topic];
    if (load === undefined) return unknownCommand(io, topic, rest.includes('--json'));
    io.out.write((await load()).usage);
    return 0;
  }
  if (first === '--version' || first === '-V' || first === 'version') {
    io.out.write(`spillway ${VERSION}\n`);
    return 0;
  }
  const name = first === undefined || first.startsWith('-') ? 'demo' : first;
  const args = first === undefined || first.startsWith('-') ? argv : rest;
  const json = args.includes('--json');
  const load = commands[name];
  if (load === undefined) return unknownCommand(io, name, json);
  try {
    const command = await load();
    return await command.run(args, io);
  } catch (error) {
    return reportError(io, error, name, json);
  }
}

/** An unknown command names the closest one and points at the top-level help. */
function unknownCommand(io: Io, name: string, json: boolean): number {
  const hint = didYouMean(name, Object.keys(commands));
  const error = new UsageError(`unknown command '${name}'${hint}`);
  if (json) return reportError(io, error, 'help', json);
  io.err.write(`spillway: ${error.message} (see 'spillway --help')\n`);
  return 2;
}
