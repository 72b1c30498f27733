/**
 * A real Flink says what the records are (issue 30): on checkpoints of a job whose in-flight
 * data holds `Tuple3<Long, Integer, String>` (non-ASCII strings, longs past 2^53), a named
 * `Row` (nulls, other row kinds, a List field), a POJO (a nullable field, a Map field) and
 * `Tuple2<Long, byte[]>` larger than a network buffer, with watermarks between them,
 * `readFlinkRecords` with the pipeline's `--type` equals what Flink's own
 * StreamElementSerializer and TypeSerializer read (interop/flink RecordsOracle), element for
 * element: values, timestamps, kinds, the partial heads (their length known to the oracle from
 * the downstream's piece, found by Spillway from the bytes alone) and the records joined across
 * input tail and upstream head. On the committed fixtures always; on freshly written ones when
 * java and mvn are on PATH (else skipped with a printed reason).
 */
import { execFile } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { compareWithRecordsOracle, typedFixtures } from '../../helpers/flink-records-oracle.ts';
import { FLINK_FIXTURES_DIR } from '../../helpers/flink-expected.ts';
import { persistedRows, readPersistedStats } from '../../helpers/flink-persisted.ts';
import { listFlinkCheckpoint } from '../../../src/index.ts';
import { harnessDir, harnessSuite } from '../../helpers/flink-harness.ts';
import { removeDir, tempDir } from '../../helpers/temp.ts';

const fixtures = typedFixtures(join(FLINK_FIXTURES_DIR, 'typed'));

describe('flink records equals Flink’s own reading (committed typed fixtures)', () => {
  it('has a typed fixture for 1.20.5 and for 2.3.0', () => {
    expect(fixtures.map((f) => f.release)).toEqual(['1.20.5', '2.3.0']);
  });
  for (const f of fixtures) {
    it(`${f.release}: every element of every channel, element for element`, async () => {
      const counts = await compareWithRecordsOracle(f.checkpoint, f.expected);
      console.log(`typed ${f.release}: ${JSON.stringify(counts)}`);
      expect(counts.record).toBeGreaterThan(100);
      expect(counts.watermark).toBeGreaterThan(0);
      expect(counts.stitched).toBeGreaterThan(0);
      expect(counts.head).toBeGreaterThan(0);
    });
  }
});

const run = promisify(execFile);
const suite = harnessSuite(
  'typed real-flink',
  ' (the committed typed fixtures are checked without them)',
);

suite('flink records equals Flink’s own reading (fresh checkpoints)', () => {
  const made: string[] = [];
  afterAll(async () => {
    for (const dir of made) await removeDir(dir);
  });
  for (const profile of ['flink1', 'flink2']) {
    it(`${profile}: a fresh TypedWriter checkpoint, read by Spillway and by Flink`, async () => {
      const dir = await tempDir();
      made.push(dir);
      const started = Date.now();
      const { stdout } = await run(
        join(harnessDir, 'run.sh'),
        [profile, 'TypedWriter', '--out', join(dir, 'ckpt'), '--tmp', join(dir, 'flink-tmp')],
        { maxBuffer: 1 << 24 },
      );
      const chk = /^CHECKPOINT (.+)$/m.exec(stdout)![1]!;
      await run(
        join(harnessDir, 'run.sh'),
        [profile, 'RecordsOracle', '--checkpoint', chk, '--expected', join(dir, 'expected')],
        {
          env: { ...process.env, SPILLWAY_FLINK_NO_BUILD: '1' },
        },
      );
      console.log(
        `typed ${profile}: Flink wrote and read in ${((Date.now() - started) / 1000).toFixed(1)} s`,
      );
      const counts = await compareWithRecordsOracle(chk, join(dir, 'expected'));
      console.log(`typed ${profile} (fresh): ${JSON.stringify(counts)}`);
      expect(counts.record).toBeGreaterThan(100);
      expect(await readdir(dir)).toEqual(expect.arrayContaining(['ckpt', 'expected']));
      // The same run's Flink statistics: flink ls equals the persisted bytes per subtask.
      const stats = readPersistedStats(join(dir, 'ckpt', 'flink-stats.json'));
      const rows = persistedRows(stats, await listFlinkCheckpoint(chk));
      expect(rows.length).toBeGreaterThan(0);
      for (const row of rows)
        expect(row.ls, `${row.vertex} subtask ${row.subtask}`).toBe(row.flink);
    }, 300_000);
  }
});
