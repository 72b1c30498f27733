/**
 * `flink ls` totals equal Flink's persisted in-flight bytes per subtask (issue 30, done means 2):
 * on the committed typed fixtures, each job vertex subtask's `alignment.persisted` from the
 * MiniCluster's REST API (recorded by the harness when the fixture was made,
 * expected/flink-stats.json) equals `flink ls --json`'s input + output bytes of that subtask,
 * summed over the vertex's chained operators (Flink sums its figure over the chain; see
 * test/helpers/flink-persisted.ts). Fresh checkpoints are checked the same way in
 * test/flink/records/records-oracle.test.ts, on the same JVM run.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { FlinkCheckpointListing } from '../../src/services/formats/flink/list.ts';
import { runCli } from '../e2e/harness.ts';
import { FLINK_FIXTURES_DIR } from '../helpers/flink-expected.ts';
import { persistedRows, readPersistedStats } from '../helpers/flink-persisted.ts';
import { typedFixtures } from '../helpers/flink-records-oracle.ts';

const fixtures = typedFixtures(join(FLINK_FIXTURES_DIR, 'typed'));

describe('flink ls totals equal Flink’s persisted in-flight bytes per subtask', () => {
  it('has a typed fixture with Flink’s statistics for 1.20.5 and for 2.3.0', () => {
    expect(fixtures.map((f) => f.release)).toEqual(['1.20.5', '2.3.0']);
  });
  for (const f of fixtures) {
    it(`${f.release}: every vertex subtask’s alignment.persisted = flink ls --json input + output bytes over its chain`, async () => {
      const stats = readPersistedStats(join(f.expected, 'flink-stats.json'));
      const r = await runCli(['flink', 'ls', f.checkpoint, '--json']);
      expect(r.code, r.stderr).toBe(0);
      const listing = JSON.parse(r.stdout) as FlinkCheckpointListing;
      expect(listing.checkpointId).toBe(stats.checkpointId);
      const rows = persistedRows(stats, listing);
      // Every subtask of every vertex (8 vertices of parallelism 2), none of them trivially 0.
      expect(rows).toHaveLength(16);
      expect(rows.filter((x) => x.flink > 0).length).toBeGreaterThan(12);
      for (const row of rows)
        expect(row.ls, `${row.vertex} subtask ${row.subtask}`).toBe(row.flink);
      const total = rows.reduce((n, x) => n + x.flink, 0);
      expect(listing.inputBytes + listing.outputBytes).toBe(total);
    });
  }
});
