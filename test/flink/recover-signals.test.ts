/**
 * Signals and `kill -9` with a Flink checkpoint as the source (DESIGN §4, G1, G7, G10, G11):
 * `spillway recover --operator … --subtask …` cancelled by SIGTERM/SIGINT/SIGHUP while it fetches
 * exits 128+n with the spill root and --out as they were; a signal at a random moment ends either
 * complete (exit 0, every channel file) or cancelled and clean; after `kill -9` during the fetch,
 * `spillway sweep` removes what the dead process left. The Flink checkpoint (`_metadata` v3 + one
 * channel-state file, 96 MiB) is written from an SPWC file by the bench's writer, so the moments
 * are wide enough to be caught by watching the file system, never by sleeping.
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeCheckpoint } from '../../src/services/formats/spwc/generator.ts';
import { writeSpwcAsFlink, type SpwcAsFlink } from '../../bench/flink.ts';
import { waitFor, type Child } from '../helpers/processes.ts';
import { makeTempRoot, removeDir, tempDir } from '../helpers/temp.ts';
import {
  listTree,
  ownerDirs,
  runCli,
  spawnCli,
  spillFiles,
  spillLeftovers,
} from '../e2e/harness.ts';

let suiteDir: string;
let flink: SpwcAsFlink;
let channels = 0;

beforeAll(async () => {
  suiteDir = await tempDir();
  const spwc = join(suiteDir, 'in.spwc');
  const made = await makeCheckpoint({
    out: spwc,
    gates: 2,
    channels: 4,
    mb: 96,
    seed: 5,
    maxEntryBytes: 32 * 1024,
  });
  channels = made.channels.length;
  flink = await writeSpwcAsFlink(spwc, join(suiteDir, 'flink'));
}, 120_000);

afterAll(async () => {
  if (suiteDir !== undefined) await removeDir(suiteDir);
});

async function newRun(): Promise<{ root: string; out: string; child: Child }> {
  const dir = await makeTempRoot();
  const root = join(dir, 'root');
  const out = join(dir, 'out');
  await mkdir(root);
  const child = spawnCli([
    'recover',
    flink.checkpoint,
    '--operator',
    flink.selection.operator,
    '--subtask',
    '0',
    '--out',
    out,
    '--spill-root',
    root,
    '--max-spill-file-bytes',
    '4M',
  ]);
  return { root, out, child };
}

const SIGNALS: [NodeJS.Signals, number][] = [
  ['SIGTERM', 143],
  ['SIGINT', 130],
  ['SIGHUP', 129],
];

describe('signals cancel a Flink-source recover and clean up', () => {
  for (const [signal, code] of SIGNALS) {
    it(`${signal} during the fetch of a Flink checkpoint exits ${code}, spill root empty, --out as it was`, async () => {
      const run = await newRun();
      await waitFor(
        'a second spill file',
        async () => (await spillFiles(run.root)).find((p) => p.endsWith('spill-segment-1.bin')),
        { child: run.child },
      );
      run.child.proc.kill(signal);
      const { code: exitCode } = await run.child.exited;
      expect(exitCode, run.child.stderr).toBe(code);
      expect(run.child.stderr).toContain(`cancelled by ${signal}`);
      expect(run.child.stderr).not.toMatch(/ENOENT|no such file/i);
      expect(await spillLeftovers(run.root)).toEqual([]);
      expect(await listTree(run.out)).toEqual([]);
    }, 120_000);
  }

  it('SIGTERM at random moments: each run ends complete (exit 0, every channel file) or cancelled with nothing left', async () => {
    const outcomes: number[] = [];
    for (let k = 0; k < 4; k++) {
      const run = await newRun();
      // A moment anywhere from the owner dir's appearance (the handlers are in place) to past
      // the end of the recovery.
      await waitFor('the owner dir', async () => (await ownerDirs(run.root))[0], {
        child: run.child,
      });
      await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 1200)));
      run.child.proc.kill('SIGTERM');
      const { code, signal } = await run.child.exited;
      outcomes.push(code ?? -1);
      // Before the CLI installed its handlers (start-up) the default action ends it: then it
      // has made nothing yet (its handlers come before the owner dir), checked below.
      expect(code === 0 || code === 143 || signal === 'SIGTERM', run.child.stderr).toBe(true);
      expect(await spillLeftovers(run.root)).toEqual([]);
      // Complete or as it was (G10): a signal past the publish's commit point still finds
      // every file in place.
      const tree = await listTree(run.out);
      if (code === 0 || tree.length > 0) {
        expect(tree.filter((n) => n.endsWith('.bin'))).toHaveLength(channels);
        expect(tree.filter((n) => n.startsWith('.'))).toEqual([]);
      }
    }
    console.log(`random SIGTERM moments: exit codes ${outcomes.join(', ')}`);
  }, 300_000);
});

describe('G7 kill -9 during a Flink-source fetch', () => {
  it('leaves its spill files; spillway sweep removes them all', async () => {
    const run = await newRun();
    await waitFor(
      'the third spill file',
      async () => (await spillFiles(run.root)).find((p) => p.endsWith('spill-segment-2.bin')),
      { child: run.child },
    );
    run.child.proc.kill('SIGKILL');
    expect((await run.child.exited).signal).toBe('SIGKILL');
    const owners = await ownerDirs(run.root);
    expect(owners).toHaveLength(1);
    expect(existsSync(join(owners[0]!, 'owner.json'))).toBe(true);
    expect((await spillFiles(run.root)).length).toBeGreaterThan(0);
    const sweep = await runCli(['sweep', '--spill-root', run.root, '--json']);
    expect(sweep.code, sweep.stderr).toBe(0);
    const report = JSON.parse(sweep.stdout) as { swept: string[]; errors: unknown[] };
    expect(report.swept).toContain(owners[0]);
    expect(report.errors).toEqual([]);
    expect(await spillLeftovers(run.root)).toEqual([]);
  }, 120_000);
});
