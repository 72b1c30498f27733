/**
 * How cost grows with the number of channels (G8): `spillway recover` of a checkpoint holding
 * one one-byte entry per channel, through the real CLI in a child process, against the floor
 * of the same run — merely creating that many one-byte files (a synchronous open, write, close
 * loop: {@link createSmallFiles}). The child's peak RSS is its own VmHWM, read at its exit.
 */
import { spawn } from 'node:child_process';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CheckpointWriter } from '../src/services/formats/spwc/writer.ts';
import { benchModule } from './rss.ts';
import { packageBin } from './startup.ts';
import { spread } from './stats.ts';

/** Writes VmHWM (kB) to fd 3 as the process exits: the same hook on every side measured. */
export const HWM_HOOK = `data:text/javascript,${encodeURIComponent(
  "import{readFileSync,writeSync}from'node:fs';process.on('exit',()=>{try{writeSync(3,/VmHWM:\\s+(\\d+)/.exec(readFileSync('/proc/self/status','utf8'))[1])}catch{}})",
)}`;

/** The byte channel `c` of gate `g` holds in a {@link writeOneByteChannels} checkpoint. */
export function oneByteOf(gate: number, channel: number): number {
  return (gate * 7 + channel) & 0xff;
}

/**
 * A checkpoint of `gates × perGate` channels with one one-byte entry each, in gate order.
 *
 * @example
 * ```ts
 * await writeOneByteChannels(join(dir, 'many.spwc'), 65536, 4); // 262,144 channels
 * ```
 */
export async function writeOneByteChannels(
  path: string,
  gates: number,
  perGate: number,
): Promise<void> {
  const writer = await CheckpointWriter.create(path);
  try {
    const b = Buffer.alloc(1);
    for (let g = 0; g < gates; g++) {
      for (let c = 0; c < perGate; c++) {
        b[0] = oneByteOf(g, c);
        await writer.append(g, c, b);
      }
    }
    await writer.close();
  } catch (e) {
    await writer.discard().catch(() => undefined);
    throw e;
  }
}

/** What one `spillway recover` child did. */
export interface CliRun {
  ms: number;
  peakMiB: number;
  stdout: string;
}

/** How {@link runCliMeasured} runs the CLI. */
export interface CliHow {
  /**
   * Read the child's peak RSS through {@link HWM_HOOK} (default true). The hook is one more
   * `--import` at start-up: the figures that time only what a user runs leave it out.
   */
  hwm?: boolean;
  /**
   * The spill root the way a user gets one by default: `TMPDIR` set to this dir and no
   * `SPILLWAY_SPILL_ROOT` (without it, `SPILLWAY_SPILL_ROOT` is emptied: a `--spill-root`
   * in `args` decides).
   */
  tmpdir?: string;
}

/**
 * Runs the compiled CLI (`bin/spillway args`) in a child process, timed from spawn to exit,
 * its stderr a pipe (not a terminal, as in a script); rejects on a non-zero exit.
 */
export function runCliMeasured(
  args: string[],
  signal?: AbortSignal,
  how: CliHow = {},
): Promise<CliRun> {
  const hwm = how.hwm ?? true;
  const { SPILLWAY_SPILL_ROOT: _, ...rest } = process.env;
  const env =
    how.tmpdir === undefined
      ? { ...rest, SPILLWAY_SPILL_ROOT: '' }
      : { ...rest, TMPDIR: how.tmpdir };
  const nodeArgs = [...(hwm ? ['--import', HWM_HOOK] : []), packageBin(), ...args];
  return runNodeMeasured(`spillway ${args[0]}`, nodeArgs, env, signal);
}

/** `node nodeArgs` timed from spawn to exit, with its VmHWM if it writes one to fd 3. */
function runNodeMeasured(
  what: string,
  nodeArgs: string[],
  env: NodeJS.ProcessEnv,
  signal?: AbortSignal,
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, nodeArgs, {
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
      env,
    });
    let out = '';
    let err = '';
    let hwm = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    child.stdio[3]!.on('data', (d: Buffer) => (hwm += d.toString()));
    // SIGINT lets the CLI cancel and clean up (its own signal handling).
    const onAbort = () => child.kill('SIGINT');
    signal?.addEventListener('abort', onAbort, { once: true });
    child.on('error', reject);
    child.on('close', (code) => {
      signal?.removeEventListener('abort', onAbort);
      const ms = performance.now() - t0;
      if (code !== 0) reject(new Error(`${what} exited ${code}: ${err.trim()}`));
      else resolve({ ms, peakMiB: Number(hwm) / 1024, stdout: out });
    });
  });
}

/**
 * The floor in a process of its own, timed from spawn to exit as the CLI's side is: a `node`
 * that imports {@link createSmallFiles}'s module (nothing else) and runs it, with the same
 * {@link HWM_HOOK}. (Timed inside the bench's own process, the floor had no start-up and a
 * warm JIT, and the figure was not what a user's run costs against it.)
 */
export function createSmallFilesInProcess(
  dir: string,
  count: number,
  signal?: AbortSignal,
): Promise<CliRun> {
  const floor = benchModule('small-files');
  const url = JSON.stringify(pathToFileURL(floor.path).href);
  const script = `import(${url}).then((m) => m.createSmallFiles(process.argv[1], +process.argv[2]))`;
  const nodeArgs = [...floor.loaderArgs, '--import', HWM_HOOK, '-e', script, dir, String(count)];
  return runNodeMeasured('the file-creation floor', nodeArgs, process.env, signal);
}

/** One channel count's figures (medians over the pairs). */
export interface ChannelFigures {
  channels: number;
  recoverMs: number;
  peakRssMiB: number;
  floorMs: number;
  /** recoverMs ÷ floorMs per pair: median (goal ≤ 3), min, max. */
  vsFloor: number;
  vsFloorMin: number;
  vsFloorMax: number;
  /** Alternating pairs measured. */
  pairs: number;
}

/**
 * Recovers `gates × perGate` one-byte channels through the CLI into `dir/out` and checks that
 * every channel file is there, against the file-creation floor, in `pairs` alternating pairs
 * (floor first on even pairs); removes everything it made.
 */
export async function measureChannels(
  dir: string,
  gates: number,
  perGate: number,
  signal?: AbortSignal,
  pairs = 1,
): Promise<ChannelFigures> {
  const channels = gates * perGate;
  const work = join(dir, `channels-${channels}`);
  await mkdir(work);
  try {
    const checkpoint = join(work, 'in.spwc');
    await writeOneByteChannels(checkpoint, gates, perGate);
    const out = join(work, 'out');
    const spillRoot = join(work, 'spill');
    await mkdir(spillRoot);
    const recoverSide = async (): Promise<CliRun> => {
      // What a user runs: default flags (the spill root from TMPDIR), stderr not a terminal.
      const run = await runCliMeasured(['recover', checkpoint, '--out', out], signal, {
        tmpdir: spillRoot,
      });
      const names = await readdir(out);
      if (names.length !== channels) {
        throw new Error(`recover wrote ${names.length} of ${channels} channel files`);
      }
      await rm(out, { recursive: true, force: true });
      return run;
    };
    const floorSide = async (): Promise<number> => {
      const { ms } = await createSmallFilesInProcess(join(work, 'floor'), channels, signal);
      await rm(join(work, 'floor'), { recursive: true, force: true });
      return ms;
    };
    const runs: CliRun[] = [];
    const floors: number[] = [];
    for (let k = 0; k < pairs; k++) {
      if (signal?.aborted) throw signal.reason;
      if (k % 2 === 0) {
        floors.push(await floorSide());
        runs.push(await recoverSide());
      } else {
        runs.push(await recoverSide());
        floors.push(await floorSide());
      }
    }
    const ratio = spread(runs.map((r, k) => r.ms / floors[k]!));
    return {
      channels,
      recoverMs: Math.round(spread(runs.map((r) => r.ms)).median),
      peakRssMiB: Math.round(Math.max(...runs.map((r) => r.peakMiB)) * 10) / 10,
      floorMs: Math.round(spread(floors).median),
      vsFloor: Math.round(ratio.median * 100) / 100,
      vsFloorMin: Math.round(ratio.min * 100) / 100,
      vsFloorMax: Math.round(ratio.max * 100) / 100,
      pairs,
    };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
