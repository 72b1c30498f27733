/**
 * How cost grows with the number of channels (G8): `spillway recover` of a checkpoint holding
 * one one-byte entry per channel, through the real CLI in a child process, against the floor
 * of the same run — merely creating that many one-byte files (open, write, close, several in
 * flight, as the output sink does). The child's peak RSS is its own VmHWM, read at its exit.
 */
import { spawn } from 'node:child_process';
import { mkdir, open, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { CheckpointWriter } from '../src/services/checkpoint/writer.ts';
import { packageBin } from './startup.ts';

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
 * The floor: creates `count` one-byte files in `dir` (new, exclusive), `inFlight` at a time.
 *
 * @example
 * ```ts
 * const ms = await createSmallFiles(join(dir, 'floor'), 100_000);
 * ```
 */
export async function createSmallFiles(dir: string, count: number, inFlight = 8): Promise<number> {
  await mkdir(dir);
  const byte = Buffer.alloc(1, 0x5a);
  const t0 = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      const f = await open(join(dir, `f-${i}.bin`), 'wx', 0o600);
      try {
        await f.write(byte);
      } finally {
        await f.close();
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, count) }, worker));
  return performance.now() - t0;
}

/** One channel count's figures. */
export interface ChannelFigures {
  channels: number;
  recoverMs: number;
  peakRssMiB: number;
  floorMs: number;
  /** recoverMs ÷ floorMs (goal ≤ 3). */
  vsFloor: number;
}

/**
 * Recovers `gates × perGate` one-byte channels through the CLI into `dir/out`, checks every
 * output byte, then times the file-creation floor; removes everything it made.
 */
export async function measureChannels(
  dir: string,
  gates: number,
  perGate: number,
  signal?: AbortSignal,
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
    const run = await runCliMeasured(
      ['recover', checkpoint, '--out', out, '--spill-root', spillRoot, '--json'],
      signal,
    );
    const names = await readdir(out);
    if (names.length !== channels) {
      throw new Error(`recover wrote ${names.length} of ${channels} channel files`);
    }
    await rm(out, { recursive: true, force: true });
    if (signal?.aborted) throw signal.reason;
    const floorMs = await createSmallFiles(join(work, 'floor'), channels);
    return {
      channels,
      recoverMs: Math.round(run.ms),
      peakRssMiB: Math.round(run.peakMiB * 10) / 10,
      floorMs: Math.round(floorMs),
      vsFloor: Math.round((run.ms / floorMs) * 100) / 100,
    };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
