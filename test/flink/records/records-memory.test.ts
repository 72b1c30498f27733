/**
 * G8 for `readFlinkRecords`: reading 64 MiB of in-flight records (~65,000 elements of ~1 KiB, 8
 * channels, 32 KiB entries) with a consumer that yields to the event loop between elements,
 * in a child process of its own, the heap + buffer memory grows by far less than the state:
 * the read waits while its queue is full, and only one open element per channel is held.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BENCH_OPERATOR } from '../../../bench/flink.ts';
import { recordsCheckpoint } from '../../../bench/records.ts';
import { repoRoot, spawnTracked } from '../../helpers/processes.ts';
import { makeTempRoot } from '../../helpers/temp.ts';

const MIB = 1024 * 1024;

const CHILD = `
import { readFlinkRecords } from ${JSON.stringify(join(repoRoot, 'dist', 'src', 'index.js'))};
const [checkpoint, operator] = process.argv.slice(1);
const used = () => { const m = process.memoryUsage(); return m.heapUsed + m.external; };
globalThis.gc?.();
const base = used();
let peak = base;
const sample = setInterval(() => { peak = Math.max(peak, used()); }, 1);
let records = 0;
for await (const e of readFlinkRecords({ checkpoint, operator, subtask: 0 })) {
  if (e.kind === 'record') records++;
  // A slow consumer: the read must wait for it, not buffer ahead.
  if (records % 64 === 0) await new Promise((r) => setImmediate(r));
}
peak = Math.max(peak, used());
clearInterval(sample);
console.log(JSON.stringify({ records, growth: peak - base }));
`;

describe('readFlinkRecords memory (G8)', () => {
  it('64 MiB of records read by a slow consumer: memory grows by < 40 MiB (the state is 64, its base64 ~90)', async () => {
    const tmp = await makeTempRoot();
    const { checkpoint, records } = await recordsCheckpoint(tmp, 64);
    const child = spawnTracked(process.execPath, [
      '--expose-gc',
      '--max-old-space-size=64',
      '--input-type=module',
      '-e',
      CHILD,
      checkpoint,
      BENCH_OPERATOR,
    ]);
    const { code } = await child.exited;
    expect(code, child.stderr).toBe(0);
    const got = JSON.parse(child.stdout) as { records: number; growth: number };
    console.log(
      `records memory: ${got.records} records, growth ${(got.growth / MIB).toFixed(1)} MiB`,
    );
    expect(got.records).toBe(records);
    expect(got.growth).toBeLessThan(40 * MIB);
  }, 120_000);
});
