/**
 * Flink's abort table (F1–C3) through the filtering spill handler: the very tests of
 * ./abort-table.test.ts, run on a v2 record checkpoint recovered as new subtask 0 of 2
 * (test/helpers/spill-mode.ts), so every row holds in filtering mode too: a rescaled recovery spills through another handler.
 */
import { describe, expect, it } from 'vitest';
import { useSpillMode } from '../helpers/spill-mode.ts';

useSpillMode('filtering');
await import('./abort-table.test.ts');
const { fixture, start, expectNoLeak } = await import('./harness.ts');

describe('filtering mode itself', () => {
  it('the suite above ran through the filtering handler: a clean run parses records and drops some', async () => {
    const fx = await fixture();
    const report = await start(fx, { taskId: 'mode' }).recovery.done;
    expect(report.records?.read).toBeGreaterThan(100);
    expect(report.records!.dropped).toBeGreaterThan(0);
    expect(report.records!.kept).toBeGreaterThan(0);
    expect(report.bytesDelivered).toBe(fx.made.payloadBytes);
    await expectNoLeak(fx);
  });
});
