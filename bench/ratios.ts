/**
 * The ratios of `spillway bench` measured on one checkpoint, side by side in one run on one
 * directory: the fetch stage against a copy that checksums every byte as it goes (the CRC
 * floor: the same work, G9) and against a plain raw copy; the drain against reads that
 * checksum, and against plain reads; the full recovery against a plain async one. Runs
 * alternate order (A B C, C B A, …), so no side always inherits another's dirty pages.
 * Nothing is synced before a timed step: a user's run never syncs first.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { MadeCheckpoint } from '../src/services/formats/spwc/generator.ts';
import { crc32 } from '../src/services/crc32.ts';
import type { SpillLimits } from '../src/services/spill/limits.ts';
import type { SpillRoot } from '../src/services/spill-root/spill-root.ts';
import type { FetchedChannelState } from '../src/services/spill/fetched-state.ts';
import { rawCopy, rawRead } from './raw-io.ts';
import { fullRecover, plainRecover, timeDrain, timeFetch } from './stages.ts';
import { round, spread, type Spread } from './stats.ts';

const MIB = 1024 * 1024;

/**
 * The product's CRC-32 (`@node-rs/crc32`, what fetch and drain run) over `bytes` of data in
 * 1 MiB pieces: the checksum floor of both.
 */
export function timeCrc(bytes: number): number {
  const buf = Buffer.alloc(MIB, 0x5a);
  const t0 = performance.now();
  let c = 0;
  for (let done = 0; done < bytes; done += MIB) c = crc32(buf, c);
  const ms = performance.now() - t0;
  if (c === 0.5) throw new Error('unreachable'); // keeps the loop from being optimised away
  return ms;
}

/** The ratios and what is behind them. */
export interface RatioFigures {
  /** CRC-checking copy (512 KiB loop, same CRC-32 as the product) ÷ fetch stage. */
  spillVsCrcWrite: Spread;
  /** CRC-checking reads of the spill files ÷ drain. */
  drainVsCrcRead: Spread;
  spillVsRawWrite: Spread;
  drainVsRawRead: Spread;
  recoverVsPlain: Spread;
  throughput: Record<
    'rawCopy' | 'crcCopy' | 'fetch' | 'rawRead' | 'crcRead' | 'drain' | 'crc32' | 'plain' | 'full',
    Spread
  >;
  orchestrationMs: Spread;
  spillFiles: number;
  runs: Record<'spillVsCrcWrite' | 'drainVsCrcRead' | 'recoverVsPlain', number[]>;
}

/**
 * Measures the three ratios over `runs` alternating runs on `made`, in `dir`.
 *
 * @example
 * ```ts
 * const r = await measureRatios(made, dir, root, spillRootPath, {}, 7, signal, progress);
 * ```
 */
export async function measureRatios(
  made: MadeCheckpoint,
  dir: string,
  root: SpillRoot,
  spillRootPath: string,
  limits: SpillLimits,
  runs: number,
  signal: AbortSignal,
  progress: (fraction: number, text: string) => void,
): Promise<RatioFigures> {
  const ratios = new RatioRuns(made, dir, root, spillRootPath, limits);
  for (let run = 0; run < runs; run++) {
    if (signal.aborted) throw signal.reason;
    const base = 0.1 + (0.45 * run) / runs;
    progress(base, `run ${run + 1}/${runs}: spill vs CRC and raw write`);
    const { copies, fetched } = await ratios.spillPair(run);
    progress(base + 0.15 / runs, `run ${run + 1}/${runs}: drain vs CRC and raw read`);
    await ratios.drainPair(run, copies, fetched);
    progress(base + 0.3 / runs, `run ${run + 1}/${runs}: plain vs full recovery`);
    await ratios.recoverPair(run);
  }
  return ratios.figures();
}

/** Runs both sides, `a` first on even runs and `b` first on odd ones. */
async function pair<A, B>(run: number, a: () => Promise<A>, b: () => Promise<B>): Promise<[A, B]> {
  const first = run % 2 === 0 ? a : b;
  const r1 = await first();
  if (run % 2 === 0) return [r1 as A, await b()];
  return [await a(), r1 as B];
}

/**
 * Runs three sides: `a b c` on even runs, `c b a` on odd ones (`a` a floor, `c` the product,
 * `b` the floor it is judged by, always between them).
 */
async function trio<A, B, C>(
  run: number,
  a: () => Promise<A>,
  b: () => Promise<B>,
  c: () => Promise<C>,
): Promise<[A, B, C]> {
  if (run % 2 === 0) {
    const ra = await a();
    const rb = await b();
    return [ra, rb, await c()];
  }
  const rc = await c();
  const rb = await b();
  return [await a(), rb, rc];
}

/** The two floors' times of one run: plain and CRC-checking. */
interface FloorMs {
  raw: number;
  crc: number;
}

/** What the fetch side of a pair hands on: its time and the spilled state. */
type Fetched = Awaited<ReturnType<typeof timeFetch>>;

/** A spread of ratios rounded to 3 places. */
function rounded(xs: number[]): Spread {
  const s = spread(xs);
  return { median: round(s.median, 3), min: round(s.min, 3), max: round(s.max, 3) };
}

/** The samples of the three ratios, one method per pair of sides, and the figures of all. */
class RatioRuns {
  private readonly spill: number[] = [];
  private readonly drain: number[] = [];
  private readonly spillCrc: number[] = [];
  private readonly drainCrc: number[] = [];
  private readonly recover: number[] = [];
  private readonly t: Record<keyof RatioFigures['throughput'], number[]> = {
    rawCopy: [],
    crcCopy: [],
    fetch: [],
    rawRead: [],
    crcRead: [],
    drain: [],
    crc32: [],
    plain: [],
    full: [],
  };
  private readonly overhead: number[] = [];
  private spillFiles = 0;

  constructor(
    private readonly made: MadeCheckpoint,
    private readonly dir: string,
    private readonly root: SpillRoot,
    private readonly spillRootPath: string,
    private readonly limits: SpillLimits,
  ) {}

  /** MiB/s of the checkpoint's payload in `ms`. */
  private rate(ms: number): number {
    return round((this.made.payloadBytes / MIB / ms) * 1000, 0);
  }

  /** A raw copy and a CRC-checking copy of the checkpoint against the fetch stage spilling it. */
  async spillPair(run: number): Promise<{ copies: FloorMs; fetched: Fetched }> {
    const { made, dir } = this;
    const copy = (checksum: boolean) => async () => {
      const copyPath = join(dir, `${checksum ? 'crc' : 'raw'}-copy-${run}.bin`);
      const t0 = performance.now();
      await rawCopy(made.path, copyPath, checksum);
      const ms = performance.now() - t0;
      await rm(copyPath);
      return ms;
    };
    const [raw, crc, fetched] = await trio(run, copy(false), copy(true), () =>
      timeFetch(made.path, join(dir, `fetch-${run}`), this.limits),
    );
    return { copies: { raw, crc }, fetched };
  }

  /**
   * Raw and CRC-checking reads of spill files against draining them. Each side reads files a
   * fetch has just written and nobody has read yet, as a user's drain reads what its fetch
   * wrote: the first read of freshly written page-cache pages costs more than a later one, and
   * reading the pair's files one after the other judged each side by its place (the drain right
   * after the fetch ran at 0.75 of the CRC floor that read the same files after it, at 0.97 when
   * the floor read them first). So each side gets an untimed fetch of its own right before it.
   */
  async drainPair(run: number, copies: FloorMs, fetched: Fetched): Promise<void> {
    const { made, t, dir } = this;
    this.spillFiles = fetched.result.state.files.length;
    await fetched.result.state.release(); // the hand-off grant: deletes the spill files
    let n = 0;
    const fresh = async <T>(side: (state: FetchedChannelState) => Promise<T>): Promise<T> => {
      const { result } = await timeFetch(made.path, join(dir, `drain-${run}-${n++}`), this.limits);
      try {
        return await side(result.state);
      } finally {
        await result.state.release();
      }
    };
    const read = (checksum: boolean) => () =>
      fresh(async (state) => {
        const t0 = performance.now();
        await rawRead(state.files, checksum);
        return performance.now() - t0;
      });
    const [readMs, crcReadMs, drained] = await trio(run, read(false), read(true), () =>
      fresh((state) => timeDrain(state, this.limits)),
    );
    if (drained.report.bytes !== made.payloadBytes) {
      throw new Error(`drain delivered ${drained.report.bytes} of ${made.payloadBytes} bytes`);
    }
    this.spill.push(copies.raw / fetched.ms);
    this.drain.push(readMs / drained.ms);
    this.spillCrc.push(copies.crc / fetched.ms);
    this.drainCrc.push(crcReadMs / drained.ms);
    t.rawCopy.push(this.rate(copies.raw));
    t.crcCopy.push(this.rate(copies.crc));
    t.fetch.push(this.rate(fetched.ms));
    t.rawRead.push(this.rate(readMs));
    t.crcRead.push(this.rate(crcReadMs));
    t.drain.push(this.rate(drained.ms));
    t.crc32.push(this.rate(timeCrc(made.payloadBytes)));
  }

  /** A plain async recovery (same services, no XState) against the full one. */
  async recoverPair(run: number): Promise<void> {
    const { made, limits } = this;
    const [plain, full] = await pair(
      run,
      () => plainRecover(made.path, this.root, `bench-plain-${run}`, limits),
      () => fullRecover(made.path, this.spillRootPath, `bench-full-${run}`, limits),
    );
    if (plain.bytes !== made.payloadBytes || full.bytes !== made.payloadBytes) {
      throw new Error(`recovery delivered ${plain.bytes}/${full.bytes} of ${made.payloadBytes}`);
    }
    this.recover.push(plain.ms / full.ms);
    this.overhead.push(full.ms - plain.ms);
    this.t.plain.push(this.rate(plain.ms));
    this.t.full.push(this.rate(full.ms));
  }

  figures(): RatioFigures {
    const { spill, drain, recover, t } = this;
    return {
      spillVsCrcWrite: rounded(this.spillCrc),
      drainVsCrcRead: rounded(this.drainCrc),
      spillVsRawWrite: rounded(spill),
      drainVsRawRead: rounded(drain),
      recoverVsPlain: rounded(recover),
      throughput: {
        rawCopy: spread(t.rawCopy),
        crcCopy: spread(t.crcCopy),
        fetch: spread(t.fetch),
        rawRead: spread(t.rawRead),
        crcRead: spread(t.crcRead),
        drain: spread(t.drain),
        crc32: spread(t.crc32),
        plain: spread(t.plain),
        full: spread(t.full),
      },
      orchestrationMs: rounded(this.overhead),
      spillFiles: this.spillFiles,
      runs: {
        spillVsCrcWrite: this.spillCrc.map((x) => round(x, 3)),
        drainVsCrcRead: this.drainCrc.map((x) => round(x, 3)),
        recoverVsPlain: recover.map((x) => round(x, 3)),
      },
    };
  }
}
