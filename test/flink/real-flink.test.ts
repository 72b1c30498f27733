/**
 * A real Flink (DESIGN §7, issue 21). When `java` and `mvn` are on PATH: build the harness in
 * interop/flink for Flink 1.20.x and 2.x (Maven profiles flink1/flink2), let its MiniCluster job
 * write retained unaligned checkpoints under backpressure into a temp dir, have Flink's own
 * classes read them (the Oracle: expected/ tree), then check `spillway flink ls --json`,
 * `spillway recover --operator --subtask [--output-state]` and `--rescale I/P --key long` against
 * Flink's reading byte for byte, and `readFlinkRecords` with the job's type against RecordsOracle's
 * reading (the same Oracle JVM: `--records`) element for element. Without java or mvn the suite is skipped with a printed reason;
 * the committed fixtures (test/fixtures/flink/) cover those machines.
 *
 * Maven's first run downloads Flink's jars (~160 MB into ~/.m2); later runs are offline-fast.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyHash } from '../../src/services/formats/flink/stream-element.ts';
import {
  keyGroupForKeyHash,
  operatorIndexForKeyGroup,
} from '../../src/services/rescale/key-groups.ts';
import { runCli } from '../e2e/harness.ts';
import {
  compareChannelFiles,
  FLINK_RANGE_FROM_3,
  restoredRescale,
  expectedRescales,
  expectedSubtasks,
  listFlinkFixtures,
  readExpectedKeyGroups,
  readExpectedLs,
  withFlinkTotals,
} from '../helpers/flink-expected.ts';
import { harnessClasspath, harnessDir, harnessSuite } from '../helpers/flink-harness.ts';
import { compareWithRecordsOracle } from '../helpers/flink-records-oracle.ts';
import { WRITER_UPSTREAM_BY_GATE } from '../helpers/cut-completions.ts';
import { removeDir, tempDir } from '../helpers/temp.ts';

const run = promisify(execFile);
const suite = harnessSuite(
  'real-flink',
  ' (the committed fixtures in test/fixtures/flink/ are checked without them)',
);

/** The releases the harness builds: Maven profile, and the metadata version each writes. */
const RELEASES = [
  { profile: 'flink1', flink: '1.20.x', metadataVersion: 4 },
  { profile: 'flink2', flink: '2.x', metadataVersion: 6 },
] as const;

/** Writer flags per variant (the same as interop/flink/make-fixtures.sh). */
const VARIANT_FLAGS: Record<string, string[]> = {
  file: ['--threshold', '0b'],
  inline: ['--threshold', '20kb', '--subtasks-per-file', '1'],
  merging: ['--threshold', '0b', '--file-merging'],
  watermarks: ['--threshold', '0b', '--watermarks'],
};

/**
 * What each release writes fresh. By default: channel state in files (the normal case) for 1.20;
 * for 2.x, files with event time (Watermark elements between timestamped records) and
 * file-merging (segment handles naming absolute paths under the job dir). The committed fixtures
 * cover the other combinations; SPILLWAY_FLINK_VARIANTS=file,inline,merging,watermarks runs the
 * ones listed for both releases.
 */
function variantsOf(profile: string): string[] {
  const env = process.env.SPILLWAY_FLINK_VARIANTS;
  if (env !== undefined && env !== '') {
    const asked = env.split(',').map((v) => v.trim());
    for (const v of asked) {
      if (VARIANT_FLAGS[v] === undefined) throw new Error(`SPILLWAY_FLINK_VARIANTS: unknown ${v}`);
    }
    return asked;
  }
  return profile === 'flink2' ? ['watermarks', 'merging'] : ['file'];
}

/** The delegate kind (Flink class) each variant must show, so a variant cannot quietly be another. */
const VARIANT_DELEGATE: Record<string, string> = {
  file: 'RelativeFileStateHandle',
  inline: 'ByteStreamStateHandle',
  merging: 'SegmentFileStateHandle',
  watermarks: 'RelativeFileStateHandle',
};

const seconds = (t0: number): string => ((performance.now() - t0) / 1000).toFixed(1);

for (const release of RELEASES) {
  for (const variant of variantsOf(release.profile)) {
    suite(
      `real Flink ${release.flink}, ${variant} (MiniCluster, unaligned checkpoints, oracle = Flink)`,
      () => {
        let root = '';
        let checkpoint = '';
        let expected = '';

        beforeAll(async () => {
          root = await tempDir();
          const classpath = await harnessClasspath(release.profile);
          let t0 = performance.now();
          const writer = await run(
            'java',
            [
              '-cp',
              classpath,
              'dev.spillway.flink.Writer',
              '--out',
              join(root, 'checkpoints'),
              '--checkpoints',
              '2',
              // Flink's own temp files (MiniCluster dirs, the extracted RPC jar) stay in ours.
              '--tmp',
              join(root, 'flink-tmp'),
              ...VARIANT_FLAGS[variant]!,
            ],
            { maxBuffer: 16 << 20 },
          );
          const writerTime = seconds(t0);
          const m = /^CHECKPOINT (.+)$/m.exec(writer.stdout);
          if (m === null) {
            throw new Error(
              `the Writer printed no checkpoint:\n${writer.stdout}\n${writer.stderr}`,
            );
          }
          checkpoint = m[1]!;
          expected = join(root, 'expected');
          t0 = performance.now();
          const oracle = await run(
            'java',
            [
              '-cp',
              classpath,
              'dev.spillway.flink.Oracle',
              '--checkpoint',
              checkpoint,
              '--expected',
              expected,
              '--records',
              join(root, 'records'),
            ],
            { maxBuffer: 16 << 20 },
          );
          // Of which RecordsOracle (--records, same JVM) took the time it prints.
          const records = /records oracle: ([\d.]+) s/.exec(oracle.stderr)?.[1] ?? '?';
          console.log(
            `real-flink ${release.profile} ${variant}: writer ${writerTime} s, oracle ${seconds(t0)} s (records oracle ${records} s)`,
          );
        }, 300_000);

        afterAll(async () => {
          if (root !== '') await removeDir(root);
        });

        it('the harness wrote a checkpoint with input-channel and result-subpartition state (the oracle is not empty)', () => {
          const ls = readExpectedLs(expected);
          expect(ls.version).toBe(release.metadataVersion);
          const subtasks = expectedSubtasks(expected);
          expect(subtasks.some((s) => s.inputFiles.length > 0)).toBe(true);
          expect(subtasks.some((s) => s.outputFiles.length > 0)).toBe(true);
          expect(expectedRescales(expected).length).toBeGreaterThan(0);
          const handles = JSON.parse(readFileSync(join(expected, 'handles.json'), 'utf8')) as {
            subtasks: Array<{ delegates: string[] }>;
          };
          expect(handles.subtasks.flatMap((h) => h.delegates)).toContain(VARIANT_DELEGATE[variant]);
        });

        it('flink records --type Tuple2<Long,String> equals Flink’s own reading, element for element', async () => {
          const t0 = performance.now();
          const counts = await compareWithRecordsOracle(checkpoint, join(root, 'records'));
          console.log(
            `real-flink ${release.profile} ${variant}: records ${JSON.stringify(counts)} in ${seconds(t0)} s`,
          );
          expect(counts.record).toBeGreaterThan(100);
          expect(counts.stitched ?? 0).toBe(counts.head ?? 0);
          if (variant === 'watermarks') expect(counts.watermark).toBeGreaterThan(0);
        });

        it('flink ls --json agrees with Flink on operators, parallelism and per-subtask channel counts and bytes', async () => {
          const r = await runCli(['flink', 'ls', checkpoint, '--json']);
          expect(r.stderr).toBe('');
          expect(r.code).toBe(0);
          expect(JSON.parse(r.stdout)).toEqual(withFlinkTotals(readExpectedLs(expected)));
        });

        it('recover of every operator/subtask with channel state equals Flink’s reading byte for byte (input and --output-state)', async () => {
          for (const s of expectedSubtasks(expected)) {
            const out = join(root, 'out', `${s.operator}-${s.subtask}`);
            const r = await runCli([
              'recover',
              checkpoint,
              '--operator',
              s.operator,
              '--subtask',
              String(s.subtask),
              '--out',
              out,
              '--output-state',
            ]);
            expect(r.code, `${s.operator}/${s.subtask}: ${r.stderr}`).toBe(0);
            expect(
              await compareChannelFiles(s.dir, out, { output: true }),
              `${s.operator}/${s.subtask}`,
            ).toEqual([]);
            if (s.inputFiles.length > 0) {
              const inOnly = join(root, 'out', `${s.operator}-${s.subtask}-input`);
              const r2 = await runCli([
                'recover',
                checkpoint,
                '--operator',
                s.operator,
                '--subtask',
                String(s.subtask),
                '--out',
                inOnly,
              ]);
              expect(r2.code, r2.stderr).toBe(0);
              expect(
                await compareChannelFiles(s.dir, inOnly),
                `${s.operator}/${s.subtask} input`,
              ).toEqual([]);
              const written = existsSync(inOnly) ? await readdir(inOnly) : [];
              expect(written.filter((f) => f.startsWith('partition-'))).toEqual([]);
            }
          }
        });

        it('--rescale I/P --key long keeps exactly the records whose key group Flink assigns to I', async () => {
          const rescales = expectedRescales(expected);
          for (const x of rescales) {
            const out = join(root, 'rescale', `${x.operator}-${x.index}-of-${x.parallelism}`);
            const r = await runCli([
              'recover',
              checkpoint,
              '--operator',
              x.operator,
              '--subtask',
              String(x.index),
              '--rescale',
              `${x.index}/${x.parallelism}`,
              '--key',
              'long',
              ...Object.entries(WRITER_UPSTREAM_BY_GATE).flatMap(([g, op]) => [
                '--upstream',
                `${g}=${op}`,
              ]),
              '--out',
              out,
            ]);
            expect(r.code, r.stderr).toBe(0);
            // What Flink's restore delivers: only the old subtasks RANGE assigns to I (the
            // oracle keeps every old subtask's watermarks; the job has 3 old subtasks, max 128).
            const flinkSees = join(
              root,
              'rescale',
              `flink-${x.operator}-${x.index}-of-${x.parallelism}`,
            );
            await mkdir(flinkSees, { recursive: true });
            await restoredRescale(x, FLINK_RANGE_FROM_3[`${x.index}/${x.parallelism}`]!, flinkSees);
            expect(
              await compareChannelFiles(flinkSees, out, { absentEqualsEmpty: true }),
              `${x.index}/${x.parallelism}`,
            ).toEqual([]);
          }
        });

        it('Flink’s key groups (KeyGroupRangeAssignment) equal Spillway’s key-group maths for every kept record', () => {
          let records = 0;
          for (const x of expectedRescales(expected)) {
            const kg = readExpectedKeyGroups(x.dir);
            for (const c of kg.channels) {
              for (const [key, group] of c.kept) {
                expect(keyGroupForKeyHash(keyHash(BigInt(key)), kg.maxParallelism)).toBe(group);
                expect(operatorIndexForKeyGroup(kg.maxParallelism, kg.parallelism, group)).toBe(
                  kg.index,
                );
                records++;
              }
            }
          }
          expect(records).toBeGreaterThan(0);
        });
      },
    );
  }
}

/** The key-group check on every committed fixture: needs neither java nor mvn. */
describe('committed real-Flink fixtures (test/fixtures/flink)', () => {
  const fixtures = listFlinkFixtures();

  it('there are fixtures of both releases, each with an expected tree', () => {
    expect(fixtures.some((f) => f.flink.startsWith('1.20.'))).toBe(true);
    expect(fixtures.some((f) => f.flink.startsWith('2.'))).toBe(true);
    for (const f of fixtures) {
      expect(existsSync(join(f.checkpoint, '_metadata')), f.name).toBe(true);
      expect(readExpectedLs(f.expected).version, f.name).toBe(f.metadataVersion);
      expect(expectedSubtasks(f.expected).length, f.name).toBeGreaterThan(0);
    }
  });

  it('Flink’s key groups (KeyGroupRangeAssignment) equal Spillway’s key-group maths for every kept record', () => {
    for (const f of fixtures) {
      const rescales = expectedRescales(f.expected);
      expect(rescales.map((x) => `${x.index}/${x.parallelism}`).sort(), f.name).toEqual(
        [...f.rescale].sort(),
      );
      let records = 0;
      for (const x of rescales) {
        const kg = readExpectedKeyGroups(x.dir);
        expect(kg.operatorId, f.name).toBe(f.keyedOperator);
        for (const c of kg.channels) {
          for (const [key, group] of c.kept) {
            expect(keyGroupForKeyHash(keyHash(BigInt(key)), kg.maxParallelism)).toBe(group);
            expect(operatorIndexForKeyGroup(kg.maxParallelism, kg.parallelism, group)).toBe(
              kg.index,
            );
            records++;
          }
        }
      }
      expect(records, f.name).toBeGreaterThan(0);
    }
  });
});
