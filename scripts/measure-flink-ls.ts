/**
 * The figure in docs/performance.md for `flink ls` of a `_metadata` with 10,000 channel handles
 * (issue 30's goal: under 0.5 s). Builds such a file (Flink 1.x layout, metadata v4: 100 subtasks
 * × 100 input-channel handles on file delegates) with the test kit's metadata builder, then
 * times the built CLI (`bin/spillway flink ls`, process start included, table and --channels
 * --json) five times each and prints the median. A measurement, not a test: run it by hand,
 * `npx tsx scripts/measure-flink-ls.ts` after `node scripts/build.mjs`.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildFlinkMetadata, opId } from '../test/helpers/flink-metadata-builder.ts';

const SUBTASKS = 100;
const CHANNELS = 100;
const dir = mkdtempSync(join(tmpdir(), 'spillway-ls-measure-'));
try {
  const metadata = buildFlinkMetadata({
    version: 4,
    checkpointId: 7,
    operators: [
      {
        id: opId(1),
        parallelism: SUBTASKS,
        maxParallelism: 128,
        subtasks: Array.from({ length: SUBTASKS }, (_, index) => ({
          index,
          inputs: Array.from({ length: CHANNELS }, (_, c) => ({
            subtaskIndex: index,
            gate: c % 2,
            channel: c >> 1,
            offsets: [4, 4100, 8196],
            stateSize: 3 * 4096,
            delegate: { kind: 'relative' as const, relativePath: `f-${index}`, size: 1 << 20 },
          })),
        })),
      },
    ],
  });
  writeFileSync(join(dir, '_metadata'), metadata);
  const bin = join(import.meta.dirname, '..', 'bin', 'spillway');
  for (const args of [[], ['--channels', '--json']]) {
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t = process.hrtime.bigint();
      const r = spawnSync(bin, ['flink', 'ls', dir, ...args], { maxBuffer: 64 << 20 });
      times.push(Number(process.hrtime.bigint() - t) / 1e6);
      if (r.status !== 0) throw new Error(String(r.stderr));
    }
    times.sort((a, b) => a - b);
    console.log(
      `flink ls ${args.join(' ') || '(table)'}: ${SUBTASKS * CHANNELS} handles, ` +
        `${metadata.length} B _metadata: median ${times[2]!.toFixed(0)} ms ` +
        `(min ${times[0]!.toFixed(0)}, max ${times[4]!.toFixed(0)})`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
