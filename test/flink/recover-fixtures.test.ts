/**
 * Real Flink checkpoints (committed fixtures written by Flink 1.20 and 2.x, test/fixtures/flink/)
 * recover to exactly what Flink's own classes read from them: every operator/subtask with
 * channel state, input channels and result subpartitions, through the real CLI in a child
 * process and through the library; rescaled outputs equal the oracle's key-group filtering of
 * the old subtasks Flink's restore assigns the new one (SubtaskStateMapper.RANGE).
 */
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { recoverChannelState } from '../../src/index.ts';
import { channelKey } from '../../src/services/channel.ts';
import type { RecoveryProgress } from '../../src/services/progress.ts';
import {
  compareChannelFiles,
  expectedRescales,
  expectedSubtasks,
  FLINK_RANGE_FROM_3,
  listFlinkFixtures,
  restoredRescale,
  type FlinkFixture,
} from '../helpers/flink-expected.ts';
import { runRecover } from '../e2e/harness.ts';
import { WRITER_UPSTREAM_BY_GATE } from '../helpers/cut-completions.ts';
import { listSpill } from '../helpers/spill-root.ts';
import { makeTempRoot } from '../helpers/temp.ts';

const fixtures = listFlinkFixtures();
const upstreamArgs = Object.entries(WRITER_UPSTREAM_BY_GATE).flatMap(([g, op]) => [
  '--upstream',
  `${g}=${op}`,
]);

/** Absolute handles name where Flink wrote the checkpoint: map that to the fixture's copy. */
function relocateArgs(f: FlinkFixture): string[] {
  return ['--relocate', `${f.originalJobDir}=${f.jobDir}`];
}

/** Recovers one side through the library into files named as the CLI names them. */
async function recoverWithLibrary(
  f: FlinkFixture,
  operator: string,
  subtask: number,
  outputState: boolean,
  out: string,
  spillRoot: string,
): Promise<void> {
  const parts = new Map<string, Buffer[]>();
  const name = (info: { gate: number; channel: number }): string =>
    outputState ? `partition-${info.gate}-subpartition-${info.channel}` : channelKey(info);
  const recovery = recoverChannelState({
    checkpoint: f.checkpoint,
    spillRoot,
    flink: {
      operator,
      subtask,
      outputState,
      relocate: [{ from: f.originalJobDir, to: f.jobDir }],
    },
    channels: (info) => {
      const chunks: Buffer[] = [];
      parts.set(name(info), chunks);
      return { onBuffer: (b) => void chunks.push(Buffer.from(b)), onFinished: () => undefined };
    },
  });
  await recovery.done;
  expect(listSpill(spillRoot)).toEqual({ taskDirs: [], spillFiles: [] });
  await mkdir(out, { recursive: true });
  for (const [file, chunks] of parts)
    await writeFile(join(out, `${file}.bin`), Buffer.concat(chunks));
}

describe.skipIf(fixtures.length === 0)('real Flink fixtures recover as Flink reads them', () => {
  if (fixtures.length === 0) console.log('no committed Flink fixtures under test/fixtures/flink');
  for (const f of fixtures) {
    describe(`${f.name} (Flink ${f.flink}, metadata v${f.metadataVersion})`, () => {
      for (const s of expectedSubtasks(f.expected)) {
        it(`CLI: recover --operator ${s.operator} --subtask ${s.subtask} --output-state equals Flink's bytes`, async () => {
          const root = await makeTempRoot();
          const out = join(root, 'out');
          const run = await runRecover(f.checkpoint, out, root, [
            '--operator',
            s.operator,
            '--subtask',
            String(s.subtask),
            '--output-state',
            ...relocateArgs(f),
            '--json',
          ]);
          expect(run.code, run.stderr).toBe(0);
          expect(await compareChannelFiles(s.dir, out, { input: true, output: true })).toEqual([]);
          expect(listSpill(root)).toEqual({ taskDirs: [], spillFiles: [] });
          expect((await readdir(out)).filter((n) => n.startsWith('.'))).toEqual([]);
        }, 60_000);

        it(`library: operator ${s.operator} subtask ${s.subtask}, input and output side, equals Flink's bytes`, async () => {
          const root = await makeTempRoot();
          const out = join(root, 'out');
          await recoverWithLibrary(f, s.operator, s.subtask, false, out, root);
          await recoverWithLibrary(f, s.operator, s.subtask, true, out, root);
          expect(await compareChannelFiles(s.dir, out, { input: true, output: true })).toEqual([]);
        }, 60_000);
      }

      it("CLI --output-state off a terminal: each side's progress is its own, named input or output, finished once", async () => {
        const s =
          expectedSubtasks(f.expected).find(
            (x) => x.inputFiles.length > 0 && x.outputFiles.length > 0,
          ) ?? expectedSubtasks(f.expected).find((x) => x.outputFiles.length > 0)!;
        const root = await makeTempRoot();
        // Without --json: the lines a log gets. Both sides run at once (two at a time).
        const run = await runRecover(f.checkpoint, join(root, 'out'), root, [
          '--operator',
          s.operator,
          '--subtask',
          String(s.subtask),
          '--output-state',
          ...relocateArgs(f),
        ]);
        expect(run.code, run.stderr).toBe(0);
        const lines = run.stderr.split('\n').filter((l) => l.startsWith('spillway recover: '));
        const line = /^spillway recover: (input|output) (\w+) (\d+)% /;
        for (const l of lines) expect(l).toMatch(line);
        for (const side of ['input', 'output']) {
          const own = lines.map((l) => line.exec(l)!).filter((m) => m[1] === side);
          expect(
            own.filter((m) => m[2] === 'finished'),
            side,
          ).toHaveLength(1);
          expect(own.at(-1)![2], side).toBe('finished');
          const percents = own.map((m) => Number(m[3]));
          for (let i = 1; i < percents.length; i++) {
            expect(percents[i]).toBeGreaterThanOrEqual(percents[i - 1]!);
          }
        }
      }, 60_000);

      it('progress works unchanged: the fetch total comes from the handles and is reached exactly', async () => {
        const s = expectedSubtasks(f.expected).find((x) => x.outputFiles.length > 0)!;
        const root = await makeTempRoot();
        const seen: RecoveryProgress[] = [];
        const recovery = recoverChannelState({
          checkpoint: f.checkpoint,
          spillRoot: root,
          flink: {
            operator: s.operator,
            subtask: s.subtask,
            outputState: true,
            relocate: [{ from: f.originalJobDir, to: f.jobDir }],
          },
          channels: () => ({ onBuffer: () => undefined, onFinished: () => undefined }),
          onProgress: (p) => void seen.push(p),
          progressIntervalMs: 1,
        });
        const report = await recovery.done;
        const last = recovery.progress();
        expect(last.checkpointBytes).toBe(report.payloadBytes);
        expect(last.bytesRead).toBe(report.payloadBytes);
        expect(last.bytesDelivered).toBe(report.payloadBytes);
        expect(report.payloadBytes).toBeGreaterThan(0);
        expect(seen.at(-1)?.stage).toBe('finished');
      });

      for (const r of expectedRescales(f.expected)) {
        it(`CLI: recover --operator ${r.operator} --rescale ${r.index}/${r.parallelism} --key ${f.key} keeps exactly what Flink's restore delivers (the oracle's records of the assigned old subtasks)`, async () => {
          const root = await makeTempRoot();
          const out = join(root, 'out');
          const run = await runRecover(f.checkpoint, out, root, [
            '--operator',
            r.operator,
            '--subtask',
            '0',
            '--rescale',
            `${r.index}/${r.parallelism}`,
            '--key',
            f.key,
            // The job's two sources write look-alike records: say which feeds which gate.
            ...upstreamArgs,
            ...relocateArgs(f),
            '--json',
          ]);
          expect(run.code, run.stderr).toBe(0);
          // What Flink's restore delivers: only the old subtasks RANGE assigns to I.
          const flinkSees = await makeTempRoot();
          await restoredRescale(r, FLINK_RANGE_FROM_3[`${r.index}/${r.parallelism}`]!, flinkSees);
          expect(await compareChannelFiles(flinkSees, out, { absentEqualsEmpty: true })).toEqual(
            [],
          );
          expect(listSpill(root)).toEqual({ taskDirs: [], spillFiles: [] });
        }, 60_000);
      }
    });
  }
});
