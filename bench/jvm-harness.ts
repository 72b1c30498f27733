/**
 * What the JVM peer phase (bench/jvm-peer.ts) needs from the real-Flink harness in
 * interop/flink: whether java and mvn are there, its build (Flink 1.20, Maven profile flink1),
 * a real retained unaligned checkpoint made by its `PeerJob`, a child process timed from spawn
 * to exit with its peak RSS, and a byte-for-byte comparison of two output trees.
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { open, readdir, readFile, rm } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { packageBin } from './startup.ts';

const run = promisify(execFile);

/** The harness's directory: interop/flink beside bin/ in the package root. */
export function harnessDir(): string {
  return join(packageBin(), '..', '..', 'interop', 'flink');
}

function onPath(command: string, args: string[]): boolean {
  const r = spawnSync(command, args, { stdio: 'ignore' });
  return r.error === undefined && r.status === 0;
}

/** Which of java and mvn are not on PATH (empty when the harness can be built and run). */
export function missingJvmTools(): string[] {
  return [
    ...(onPath('java', ['-version']) ? [] : ['java']),
    ...(onPath('mvn', ['-v']) ? [] : ['mvn']),
  ];
}

/**
 * Why the phase cannot run here, or undefined when it can: java and mvn on PATH, the harness's
 * sources present, and not switched off with SPILLWAY_BENCH_JVM=0.
 *
 * @example
 * ```ts
 * const why = whyNoJvm(); // 'java not on PATH' on a machine without a JDK
 * ```
 */
export function whyNoJvm(): string | undefined {
  if (process.env.SPILLWAY_BENCH_JVM === '0') return 'SPILLWAY_BENCH_JVM=0';
  if (!existsSync(join(harnessDir(), 'pom.xml'))) return `no harness at ${harnessDir()}`;
  const missing = missingJvmTools();
  return missing.length > 0 ? `${missing.join(' and ')} not on PATH` : undefined;
}

/**
 * Builds the harness for a Flink release (Maven profile `flink1` = 1.20, `flink2` = 2.x; one
 * Maven at a time: build.sh) and returns the classpath of its programs, for `java -cp`.
 */
export async function buildHarness(profile: 'flink1' | 'flink2' = 'flink1'): Promise<string> {
  const dir = harnessDir();
  await run(join(dir, 'build.sh'), [profile], { cwd: dir, maxBuffer: 16 << 20 });
  const target = join(dir, 'target', profile);
  const deps = (await readFile(join(target, 'classpath.txt'), 'utf8')).trim();
  return `${join(target, 'classes')}:${deps}`;
}

/** A checkpoint the harness made: its `chk-N` dir and the bytes in it. */
export interface RealCheckpoint {
  path: string;
  bytes: number;
  makeSeconds: number;
}

/**
 * Runs the harness's `PeerJob`: a MiniCluster job under full backpressure until one retained
 * unaligned checkpoint holds at least `minBytes`; everything of Flink's goes under `dir`.
 */
export async function makeRealCheckpoint(
  classpath: string,
  dir: string,
  minBytes: number,
  shape: string[],
): Promise<RealCheckpoint> {
  const t0 = performance.now();
  const { stdout } = await run(
    'java',
    [
      '-cp',
      classpath,
      'dev.spillway.flink.PeerJob',
      '--out',
      join(dir, 'checkpoints'),
      '--tmp',
      join(dir, 'flink-tmp'),
      '--min-bytes',
      String(minBytes),
      ...shape,
    ],
    { maxBuffer: 16 << 20 },
  );
  await rm(join(dir, 'flink-tmp'), { recursive: true, force: true });
  const m = /^CHECKPOINT (\S+) (\d+)$/m.exec(stdout);
  if (m === null) throw new Error(`PeerJob printed no checkpoint: ${stdout.slice(0, 200)}`);
  return { path: m[1]!, bytes: Number(m[2]), makeSeconds: (performance.now() - t0) / 1000 };
}

/** One child process: wall time from spawn to exit, its peak RSS, what it printed. */
export interface TimedRun {
  ms: number;
  /** Peak RSS (`/usr/bin/time -f %M`), MiB; null where /usr/bin/time is missing. */
  peakMiB: number | null;
  stdout: string;
}

const TIME = '/usr/bin/time';

/**
 * Runs `command args` to its exit, timed from spawn; under `/usr/bin/time -f %M` (its peak RSS,
 * written to `rssFile`) where that exists, on both sides alike. A non-zero exit throws.
 */
export async function timedRun(
  command: string,
  args: string[],
  rssFile: string,
  signal?: AbortSignal,
): Promise<TimedRun> {
  const wrapped = existsSync(TIME);
  const [file, argv] = wrapped
    ? [TIME, ['-f', '%M', '-o', rssFile, command, ...args]]
    : [command, args];
  const t0 = performance.now();
  const { code, stdout, stderr } = await new Promise<{
    code: number | null;
    stdout: string;
    stderr: string;
  }>((resolve, reject) => {
    const child = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const onAbort = () => child.kill('SIGINT');
    signal?.addEventListener('abort', onAbort, { once: true });
    child.on('error', reject);
    child.on('close', (c) => {
      signal?.removeEventListener('abort', onAbort);
      resolve({ code: c, stdout: out, stderr: err });
    });
  });
  const ms = performance.now() - t0;
  if (code !== 0) throw new Error(`${command} exited ${code}: ${stderr.trim().slice(0, 500)}`);
  let peakMiB: number | null = null;
  if (wrapped) {
    const kib = Number((await readFile(rssFile, 'utf8')).trim().split('\n').pop());
    peakMiB = Number.isFinite(kib) ? kib / 1024 : null;
    await rm(rssFile, { force: true });
  }
  return { ms, peakMiB, stdout };
}

async function filesUnder(root: string, dir = root, out: string[] = []): Promise<string[]> {
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) await filesUnder(root, p, out);
    else out.push(relative(root, p));
  }
  return out.sort();
}

async function sameFile(a: string, b: string): Promise<boolean> {
  const [fa, fb] = [await open(a, 'r'), await open(b, 'r')];
  try {
    const [ba, bb] = [Buffer.alloc(1 << 20), Buffer.alloc(1 << 20)];
    for (let pos = 0; ; pos += 1 << 20) {
      const [ra, rb] = [await fa.read(ba, 0, ba.length, pos), await fb.read(bb, 0, bb.length, pos)];
      if (ra.bytesRead !== rb.bytesRead) return false;
      if (!ba.subarray(0, ra.bytesRead).equals(bb.subarray(0, rb.bytesRead))) return false;
      if (ra.bytesRead === 0) return true;
    }
  } finally {
    await fa.close();
    await fb.close();
  }
}

/**
 * Throws unless the two trees hold the same files (relative paths) with the same bytes: a
 * faster program that writes other bytes is not a peer. Returns the file count.
 */
export async function assertSameTrees(a: string, b: string): Promise<number> {
  const [fa, fb] = [await filesUnder(a), await filesUnder(b)];
  if (fa.join('\n') !== fb.join('\n')) {
    const only = fa.filter((f) => !fb.includes(f)).concat(fb.filter((f) => !fa.includes(f)));
    throw new Error(
      `the JVM's and spillway's trees differ in files: ${only.slice(0, 5).join(', ')}`,
    );
  }
  for (const f of fa) {
    if (!(await sameFile(join(a, f), join(b, f)))) {
      throw new Error(`the JVM's and spillway's ${f} differ`);
    }
  }
  return fa.length;
}
