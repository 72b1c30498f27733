/**
 * `recover --all --out DIR` on real Flink checkpoints (the committed fixtures): every operator
 * and subtask with channel state, input and output, lands in `DIR/<operator>/subtask-<n>/`
 * (`<operator>`: its uid where the metadata has one, else its id), byte-identical to what
 * Flink's own classes read and to the per-subtask runs; and the whole tree has ONE commit point
 * (G10): a signal at any step — while recovering, while creating the tree's dirs, at any link,
 * at the commit rename — leaves DIR exactly as found (exit 143) or complete (exit 0), and after
 * `kill -9` mid-publish the next run into DIR restores it and publishes the tree whole. Real
 * CLI in child processes; the signal is sent by the child itself at the Nth file operation
 * under DIR (test/fixtures/cli-signal-at-step.ts).
 */
import { statSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { operatorDirs } from '../../src/services/outputs/file-names.ts';
import {
  compareChannelFiles,
  expectedSubtasks,
  listFlinkFixtures,
  readExpectedLs,
  type FlinkFixture,
} from '../helpers/flink-expected.ts';
import { spawnFixture } from '../helpers/processes.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import { listTree, runRecover, spillLeftovers } from '../e2e/harness.ts';

const fixtures = listFlinkFixtures();

function relocateArgs(f: FlinkFixture): string[] {
  return ['--relocate', `${f.originalJobDir}=${f.jobDir}`];
}

/** `<operator>/subtask-<n>` per expected subtask, as `--all` names it (uid, else id). */
function treeDirOf(f: FlinkFixture): (operator: string, subtask: number) => string {
  const { operators } = readExpectedLs(f.expected);
  const dirs = operatorDirs(operators);
  return (operator, subtask) =>
    `${dirs[operators.findIndex((o) => o.id === operator)]!}/subtask-${subtask}`;
}

/** Every file under `dir` with its bytes (hex), and `dir` for directories. */
async function snapshot(dir: string): Promise<Map<string, string>> {
  const result = new Map<string, string>();
  for (const p of await listTree(dir)) {
    const st = statSync(join(dir, p), { throwIfNoEntry: false });
    result.set(p, st?.isFile() ? (await readFile(join(dir, p))).toString('hex') : 'dir');
  }
  return result;
}

async function runAll(f: FlinkFixture, out: string, root: string) {
  return runRecover(f.checkpoint, out, root, ['--all', ...relocateArgs(f), '--json']);
}

describe.skipIf(fixtures.length === 0)('recover --all on real Flink checkpoints', () => {
  if (fixtures.length === 0) console.log('no committed Flink fixtures under test/fixtures/flink');
  for (const f of fixtures) {
    it(`${f.name}: every operator/subtask, both sides, equals Flink's bytes under <operator>/subtask-<n>/`, async () => {
      const base = await makeTempRoot();
      const out = join(base, 'out');
      const root = join(base, 'spill');
      await mkdir(root);
      const run = await runAll(f, out, root);
      expect(run.code, run.stderr).toBe(0);
      const dirOf = treeDirOf(f);
      const expected = expectedSubtasks(f.expected);
      const files = (await listTree(out)).filter((p) => p.endsWith('.bin'));
      let count = 0;
      for (const s of expected) {
        const dir = dirOf(s.operator, s.subtask);
        const diffs = await compareChannelFiles(s.dir, join(out, dir), {
          input: true,
          output: true,
        });
        expect(diffs, dir).toEqual([]);
        count += s.inputFiles.length + s.outputFiles.length;
      }
      // Nothing beyond what Flink has: no extra file, no extra subtask dir.
      expect(files).toHaveLength(count);
      expect(JSON.parse(run.stdout).subtasks).toHaveLength(
        expected.filter((s) => s.inputFiles.length + s.outputFiles.length > 0).length,
      );
      expect((await listTree(out)).filter((p) => p.split('/').pop()!.startsWith('.'))).toEqual([]);
      expect(await spillLeftovers(root)).toEqual([]);
    }, 60_000);
  }

  it('progress off a terminal: one line per side as it finishes, named by its dir and side; no line mixes two sides', async () => {
    const f = fixtures[0]!;
    const base = await makeTempRoot();
    const out = join(base, 'out');
    const root = join(base, 'spill');
    await mkdir(root);
    // Without --json: the progress lines and the summary on stderr, as a user's log gets them.
    const run = await runRecover(f.checkpoint, out, root, ['--all', ...relocateArgs(f)]);
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stderr.split('\n').filter((l) => l.startsWith('spillway recover: '));
    const line = /^spillway recover: (\S+\/subtask-\d+) (input|output) (\w+) (\d+)% /;
    for (const l of lines) expect(l).toMatch(line);
    // Every side that wrote files says it finished, once, and says nothing after that.
    const sides = new Set<string>();
    for (const p of (await listTree(out)).filter((p) => p.endsWith('.bin'))) {
      const name = p.split('/').pop()!;
      sides.add(
        `${p.slice(0, p.length - name.length - 1)} ${name.startsWith('partition-') ? 'output' : 'input'}`,
      );
    }
    expect(sides.size).toBeGreaterThan(1);
    for (const side of sides) {
      const own = lines.filter((l) => l.startsWith(`spillway recover: ${side} `));
      const stages = own.map((l) => line.exec(l)![3]);
      expect(
        stages.filter((s) => s === 'finished'),
        side,
      ).toHaveLength(1);
      expect(stages.at(-1), side).toBe('finished');
      const percents = own.map((l) => Number(line.exec(l)![4]));
      for (let i = 1; i < percents.length; i++) {
        expect(percents[i]).toBeGreaterThanOrEqual(percents[i - 1]!);
      }
    }
    expect(lines.filter((l) => / finished 100% /.test(l))).toHaveLength(sides.size);
  }, 60_000);

  it('--all with --operator, --subtask, --output-state, --rescale or --overwrite is a usage error: exit 2, one line, nothing created', async () => {
    const f = fixtures[0]!;
    const base = await makeTempRoot();
    const out = join(base, 'out');
    for (const extra of [
      ['--operator', 'x'],
      ['--subtask', '0'],
      ['--output-state'],
      ['--rescale', '2'],
      ['--overwrite'],
    ]) {
      const run = await runRecover(f.checkpoint, out, base, ['--all', ...extra]);
      expect(run.code, extra.join(' ')).toBe(2);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stderr).toContain(`--all cannot take ${extra[0]}`);
    }
    expect(await listTree(out)).toEqual([]);
  });

  // One fixture per release: the tree against the per-subtask runs themselves, file by file.
  for (const f of fixtures.filter((x) => x.variant === 'file')) {
    it(`${f.name}: the tree is byte-identical to the per-subtask runs (--operator ID --subtask N --output-state)`, async () => {
      const root = await makeTempRoot();
      const out = join(root, 'out');
      expect((await runAll(f, out, root)).code).toBe(0);
      const dirOf = treeDirOf(f);
      for (const s of expectedSubtasks(f.expected)) {
        const single = join(root, `single-${s.operator}-${s.subtask}`);
        const run = await runRecover(f.checkpoint, single, root, [
          '--operator',
          s.operator,
          '--subtask',
          String(s.subtask),
          '--output-state',
          ...relocateArgs(f),
        ]);
        expect(run.code, run.stderr).toBe(0);
        expect(await snapshot(join(out, dirOf(s.operator, s.subtask)))).toEqual(
          await snapshot(single),
        );
      }
    }, 120_000);
  }
});

const signalFixture = fixtures.find((f) => f.name === '2.3.0-file');

describe.skipIf(signalFixture === undefined)('recover --all has one commit point (G10)', () => {
  const f = signalFixture!;

  /** DIR with a user's file and a user's dir under an operator's name (kept as they are). */
  async function setup() {
    const base = await makeTempRoot();
    const out = join(base, 'out');
    const root = join(base, 'spill');
    await mkdir(join(out, 'slow-join', 'mine'), { recursive: true });
    await mkdir(root);
    await writeFile(join(out, 'notes.txt'), 'the user keeps this');
    await writeFile(join(out, 'slow-join', 'mine', 'x.txt'), 'and this');
    return { out, root, before: await snapshot(out) };
  }

  async function complete(): Promise<Map<string, string>> {
    const { out, root } = await setup();
    expect((await runAll(f, out, root)).code).toBe(0);
    return snapshot(out);
  }

  function signalledAt(signal: string, step: number, out: string, root: string) {
    return spawnFixture('cli-signal-at-step.ts', [
      signal,
      'mkdir,link,rename',
      String(step),
      'recover',
      f.checkpoint,
      '--all',
      '--out',
      out,
      '--spill-root',
      root,
      ...relocateArgs(f),
    ]).exited;
  }

  it('SIGTERM at steps across DIR (staging dirs, tree dirs, links; every 5th, and the commit rename): as found (143) or complete (0), never a mix', async () => {
    const whole = await complete();
    const outcomes: number[] = [];
    const at = async (step: number): Promise<number> => {
      const { out, root, before } = await setup();
      const { code } = await signalledAt('SIGTERM', step, out, root);
      const after = await snapshot(out);
      if (code === 143) expect(after, `step ${step}`).toEqual(before);
      else {
        expect(code, `step ${step}`).toBe(0);
        expect(after, `step ${step}`).toEqual(whole);
      }
      expect(await spillLeftovers(root)).toEqual([]);
      outcomes.push(code ?? -1);
      return code ?? -1;
    };
    // Every 5th step until one is past the last (the run completes), then back down to the
    // last step that cancels: the commit rename itself.
    let step = 0;
    while ((await at(step)) === 143) step += 5;
    let last = step - 1;
    while (last > 0 && (await at(last)) === 0) last--;
    // Signalled early (the staging dir), mid-way, and at the commit rename itself (found
    // going back down from the first step that completes).
    expect(outcomes.filter((c) => c === 143).length).toBeGreaterThanOrEqual(3);
    expect(last).toBeGreaterThan(step - 5);
    expect(outcomes.at(-1)).toBe(143);
    console.log(`recover --all: ${last + 1} steps under DIR, ${outcomes.length} of them signalled`);
  }, 600_000);

  it('kill -9 mid-publish (tree dirs made, links in place, before the commit): the next run restores DIR and publishes the tree whole', async () => {
    const whole = await complete();
    // From past the last step down: the first kill that finds tree files in DIR is in the
    // publish, before its commit rename (the step after which nothing is signalled).
    for (let step = 40; step > 0; step--) {
      const { out, root, before } = await setup();
      const { signal } = await signalledAt('SIGKILL', step, out, root);
      if (signal !== 'SIGKILL') continue;
      const published = (await listTree(out)).filter(
        (p) => !p.startsWith('.spillway-staging') && p.endsWith('.bin'),
      );
      if (published.length === 0) continue;
      const again = await runAll(f, out, root);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stderr).toMatch(/restored .* as it was before an interrupted publish/);
      const after = await snapshot(out);
      expect(after).toEqual(whole);
      for (const [p, v] of before) expect(after.get(p)).toBe(v);
      return;
    }
    expect.unreachable('no step of the publish was reached');
  }, 300_000);
});
