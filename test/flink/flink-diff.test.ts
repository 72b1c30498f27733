/**
 * `spillway flink diff A B` shows which channels' bytes changed between two checkpoints of one
 * running job (test/fixtures/flink/2.3.0-pair: chk-2 and chk-3 of one real Flink 2.3.0 job),
 * sorted by growth, with totals equal to `flink ls` of each; a checkpoint against itself changes
 * nothing.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { listFlinkCheckpoint } from '../../src/index.ts';
import type { FlinkCheckpointDiff } from '../../src/services/formats/flink/diff.ts';
import { channelLabel } from '../../src/services/formats/flink/report/model.ts';
import { runCli } from '../e2e/harness.ts';
import { FLINK_FIXTURES_DIR } from '../helpers/flink-expected.ts';

const job = join(FLINK_FIXTURES_DIR, '2.3.0-pair', '7036eeddfce3a8f1f84b57fd6a2302a4');
const [A, B] = [join(job, 'chk-2'), join(job, 'chk-3')];

/** Per channel key, bytes, from the library's listing of one checkpoint. */
async function channelBytes(chk: string): Promise<Map<string, number>> {
  const listing = await listFlinkCheckpoint(chk, { channels: true });
  const out = new Map<string, number>();
  for (const op of listing.operators)
    for (const s of op.subtasks)
      for (const c of s.channels ?? []) out.set(`${op.id}/${s.index}/${channelLabel(c)}`, c.bytes);
  return out;
}

describe('flink diff of two checkpoints of one running job', () => {
  it('--json lists exactly the channels whose bytes differ, with both sides, largest growth first', async () => {
    const r = await runCli(['flink', 'diff', A, B, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const diff = JSON.parse(r.stdout) as FlinkCheckpointDiff;
    expect([diff.checkpointA, diff.checkpointB]).toEqual([2, 3]);
    const [a, b] = [await channelBytes(A), await channelBytes(B)];
    const keys = new Set([...a.keys(), ...b.keys()]);
    expect(diff.channels).toHaveLength(keys.size);
    for (const c of diff.channels) {
      const key = `${c.operator}/${c.subtask}/${c.channel}`;
      expect([c.a, c.b, c.change], key).toEqual([
        a.get(key) ?? 0,
        b.get(key) ?? 0,
        (b.get(key) ?? 0) - (a.get(key) ?? 0),
      ]);
    }
    const changes = diff.channels.map((c) => c.change);
    expect(changes).toEqual([...changes].sort((x, y) => y - x));
    const changed = diff.channels.filter((c) => c.change !== 0);
    expect(changed.length).toBeGreaterThan(0);
    const [la, lb] = [await listFlinkCheckpoint(A), await listFlinkCheckpoint(B)];
    expect(diff.inputBytes).toEqual({
      a: la.inputBytes,
      b: lb.inputBytes,
      change: lb.inputBytes - la.inputBytes,
    });
    expect(diff.outputBytes.b).toBe(lb.outputBytes);

    // The table names every changed channel and hides the unchanged ones, saying how many.
    const table = await runCli(['flink', 'diff', A, B]);
    expect(table.code).toBe(0);
    for (const c of changed) {
      expect(table.stdout).toMatch(new RegExp(`\\s${c.subtask}  ${c.channel}\\s`));
    }
    const hidden =
      diff.channels.length - changed.length + diff.operators.filter((o) => o.change === 0).length;
    expect(table.stdout).toContain(`${hidden} unchanged operator(s)/channel(s) not shown`);
  });

  it('a checkpoint against itself: nothing changed; a missing B is exit 2 in one line', async () => {
    const r = await runCli(['flink', 'diff', A, A]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('operators (in-flight bytes):\n  (none changed)');
    expect(r.stdout).toContain('channels:\n  (none changed)');
    const missing = await runCli(['flink', 'diff', A, join(job, 'chk-9')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr.trim().split('\n')).toHaveLength(1);
    expect((await runCli(['flink', 'diff', A])).code).toBe(2);
  });
});
