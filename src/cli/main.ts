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
};

export const usage = `usage: spillway [COMMAND] [OPTIONS]

Recovers spilled channel state the way Apache Flink does (fetch → gap → drain), as XState
actors, and leaves no spill file behind on any ending.

commands:
  demo        (default) a pool of tasks in recovery-failure loops, every fault injected
  checkpoint  make a test checkpoint: spillway checkpoint make --out FILE
  recover     recover a checkpoint into per-channel files
  sweep       remove spill files of dead processes
  soak        the demo pool, seeded, checking for leaks of files, heap and fds
  inspect     serve the live inspector page
  bench       measure spill, drain, orchestration and cleanup against raw I/O
  flink       list a Flink checkpoint's operators and channel state: spillway flink ls CHECKPOINT

'spillway COMMAND --help' shows a command's options; 'spillway --version' the version.

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
    io.out.write(usage);
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
  if (load === undefined) {
    const hint = didYouMean(name, Object.keys(commands));
    return reportError(io, new UsageError(`unknown command '${name}'${hint}`), 'help', json);
  }
  try {
    const command = await load();
    return await command.run(args, io);
  } catch (error) {
    return reportError(io, error, name, json);
  }
}
