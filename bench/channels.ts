/**
 * How cost grows with the number of channels (G8): `spillway recover` of a checkpoint holding
 * one one-byte entry per channel, through the real CLI in a child process, against the floor
 * of the same run — merely creating that many one-byte files (a synchronous open, write, close
 * loop: {@link createSmallFiles}). The child's peak RSS is its own VmHWM, read at its exit.
 */
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { CheckpointWriter } from '../src/services/formats/spwc/writer.ts';
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

/** Runs the compiled CLI (`bin/spillway args`) with {@link HWM_HOOK}; rejects on a non-zero exit. */
export function runCliMeasured(args: string[], signal?: AbortSignal): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, ['--import', HWM_HOOK, packageBin(), ...args], {
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
      env: { ...process.env, SPILLWAY_SPILL_ROOT: '' },
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
      if (code !== 0) reject(new Error(`spillway ${args[0]} exited ${code}: ${err.trim()}`));
      else resolve({ ms, peakMiB: Number(hwm) / 1024, stdout: out });
    });
  });
}

/**
 * The floor: creates `count` one-byte files in `dir` (new, exclusive) with a synchronous
 * `openSync` / `writeSync` / `closeSync` loop — the fastest way found to make small files from
 * Node (faster than `writeFileSync(…, { flag: 'wx' })`, and several times faster than the
 * async `fs/promises` open/write/close with several in flight, which costs three thread-pool
 * round trips per file).
 *
 * @example
 * ```ts
 * const ms = createSmallFiles(join(dir, 'floor'), 100_000);
 * ```
 */
export function createSmallFiles(dir: string, count: number): number {
  mkdirSync(dir);
  const byte = Buffer.alloc(1, 0x5a);
  // The dir's path once and the name appended: a path.join per file normalizes the whole path
  // every time and cost the loop 8–35 % on a tmpfs, and a floor must be the fastest known way.
  const prefix = `${dir}/`;
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    const fd = openSync(prefix + 'f-' + i + '.bin', 'wx', 0o600);
    try {
      writeSync(fd, byte);
    } finally {
      closeSync(fd);
    }
  }
  return performance.now() - t0;
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
      const run = await runCliMeasured(
        ['recover', checkpoint, '--out', out, '--spill-root', spillRoot, '--json'],
        signal,
      );
      const names = await readdir(out);
      if (names.length !== channels) {
        throw new Error(`recover wrote ${names.length} of ${channels} channel files`);
      }
      await rm(out, { recursive: true, force: true });
      return run;
    };
    const floorSide = async (): Promise<number> => {
      const ms = createSmallFiles(join(work, 'floor'), channels);
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
