/**
 * `recover --rescale P` equals what a real Flink restore at parallelism P delivers from the
 * channel state (issue 30). When `java` and `mvn` are on PATH, per release (1.20.x, 2.x): the
 * harness's RescaleJob (interop/flink: a keyed operator of parallelism 2 under backpressure,
 * unaligned checkpoints, retained) leaves a checkpoint with records in flight; restored from
 * it at P ∈ {2, 3, 5} (one JVM), its source marks every record emitted after the restore and the
 * keyed operator prints each element it receives that predates it — those came from the
 * channel state. Per new subtask I, that multiset equals Spillway's:
 *
 * - `recover --rescale P`'s `subtask-I/` files (the keyed operator's input-channel state of the
 *   old subtasks Flink assigns I, filtered by key group, cut records completed), decoded; plus
 * - the records of the upstream's output state that Flink replays to I (its subpartitions of
 *   the old subtasks assigned to I, by key group), as `flink records --output-state` decodes
 *   them — the input side is what `--rescale` writes, the upstream replays the rest.
 *
 * Compared: records (key and value), as multisets (Flink's order across old subtasks is not
 * fixed). The job has no watermarks (its source emits none), so none is compared. Without java
 * or mvn the suite is skipped with a printed reason.
 */
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyHash } from '../../src/services/formats/flink/stream-element.ts';
import { operatorForKeyHash } from '../../src/services/rescale/key-groups.ts';
import { rangeOldSubtasks } from '../../src/services/formats/flink/old-subtasks.ts';
import { runCli } from '../e2e/harness.ts';
import { harnessClasspath, harnessSuite } from '../helpers/flink-harness.ts';
import { removeDir, tempDir } from '../helpers/temp.ts';

const run = promisify(execFile);
const MiB = 1 << 20;
const suite = harnessSuite('rescale-real-flink');

const RELEASES = ['flink1', 'flink2'] as const;
const PARALLELISMS = [2, 3, 5];
/** The written job's parallelism of the keyed operator, and its max parallelism (Flink's rule). */
const OLD = 2;
const MAX = 128;
/** The keyed operator's id: Flink's hash of its uid "rescale-check" (1.20's metadata has no uid). */
const CHECK_ID = 'ba1e97f5f8349cefa650edc1f5b0b156';

/** `key value` of each record in a `--rescale` channel file: `[int32 len][tag 0|1][ts?][Tuple2<Long,String>]`. */
function decodeFrames(bytes: Buffer): string[] {
  const out: string[] = [];
  let at = 0;
  while (at < bytes.length) {
    const length = bytes.readInt32BE(at);
    const end = at + 4 + length;
    let p = at + 4;
    const tag = bytes[p++]!;
    if (tag === 0 || tag === 1) {
      if (tag === 0) p += 8;
      const key = bytes.readBigInt64BE(p);
      p += 8;
      // StringValue: length + 1 as a varint, then each char (ASCII here: one byte each).
      let n = 0;
      let shift = 0;
      for (;;) {
        const b = bytes[p++]!;
        n |= (b & 0x7f) << shift;
        if (b < 0x80) break;
        shift += 7;
      }
      out.push(`${key} ${bytes.toString('latin1', p, p + n - 1)}`);
    }
    at = end;
  }
  return out;
}

const sorted = (xs: string[]): string[] => [...xs].sort();

suite('a real Flink restore at P delivers what recover --rescale P writes', () => {
  for (const profile of RELEASES) {
    describe(profile, () => {
      let dir = '';
      let checkpoint = '';
      /** Per P, per new subtask: Flink's pre-restore elements, `key value`. */
      const flink = new Map<number, string[][]>();
      let seconds = 0;

      beforeAll(async () => {
        const t0 = performance.now();
        dir = await tempDir();
        const classpath = await harnessClasspath(profile);
        // Flink's temp files (the extracted rpc jar, minicluster dirs): in this test's dir.
        const flinkTmp = join(dir, 'flink-tmp');
        // A checkpoint taken while the keyed operator is backpressured holds records in flight;
        // a real job's timing may leave one without: written again, at most 3 times.
        for (let attempt = 1; attempt <= 3; attempt++) {
          const out = join(dir, `write-${attempt}`);
          const { stdout } = await run(
            'java',
            [
              '-cp',
              classpath,
              'dev.spillway.flink.RescaleJob',
              'write',
              '--out',
              out,
              '--tmp',
              flinkTmp,
            ],
            { maxBuffer: 64 * MiB },
          );
          checkpoint = /^CHECKPOINT (.+)$/m.exec(stdout)![1]!;
          const ls = await runCli(['flink', 'ls', checkpoint, '--json']);
          const input = (
            JSON.parse(ls.stdout) as {
              operators: { id: string; subtasks: { inputBytes: number }[] }[];
            }
          ).operators
            .filter((o) => o.id === CHECK_ID)
            .flatMap((o) => o.subtasks)
            .reduce((n, s) => n + s.inputBytes, 0);
          if (input > 0) break;
          console.log(`rescale-real-flink ${profile}: no input in flight (write ${attempt})`);
        }
        const args = [
          '-cp',
          classpath,
          'dev.spillway.flink.RescaleJob',
          'restore',
          '--tmp',
          flinkTmp,
        ];
        args.push('--from', checkpoint, ...PARALLELISMS.flatMap((p) => ['--parallelism', `${p}`]));
        const { stdout } = await run('java', args, { maxBuffer: 256 * MiB });
        for (const p of PARALLELISMS) {
          flink.set(
            p,
            Array.from({ length: p }, () => []),
          );
        }
        for (const line of stdout.split('\n')) {
          const m = /^PRE (\d+) (\d+) (-?\d+) (\S+)$/.exec(line);
          if (m !== null) flink.get(Number(m[1]))![Number(m[2])]!.push(`${m[3]} ${m[4]}`);
        }
        for (const p of PARALLELISMS) expect(stdout).toContain(`DONE ${p}`);
        seconds = (performance.now() - t0) / 1000;
        console.log(`rescale-real-flink ${profile}: write + 3 restores in ${seconds.toFixed(1)} s`);
      }, 600_000);

      afterAll(async () => {
        if (dir !== '') await removeDir(dir);
      });

      it('per new subtask, Flink’s pre-restore elements equal recover --rescale P (plus the upstream’s replayed output records), for P = 2, 3, 5', async () => {
        // The upstream's output state, decoded once: [subpartition, key, value].
        const records = await runCli([
          'flink',
          'records',
          checkpoint,
          '--operator',
          'to-record',
          '--subtask',
          '0',
          '--output-state',
          '--type',
          'Tuple2<Long, String>',
        ]);
        expect(records.code, records.stderr).toBe(0);
        const upstream = records.stdout
          .split('\n')
          .filter((l) => l !== '')
          .map((l) => JSON.parse(l) as { kind: string; subpartition: number; value: unknown[] })
          .filter((e) => e.kind === 'record');
        const table: string[] = [];
        for (const p of PARALLELISMS) {
          const out = join(dir, `rescale-${p}`);
          const r = await runCli([
            'recover',
            checkpoint,
            '--operator',
            'rescale-check',
            '--rescale',
            String(p),
            '--key',
            'long',
            '--out',
            out,
            '--json',
          ]);
          expect(r.code, r.stderr).toBe(0);
          let fromInput = 0;
          let fromOutput = 0;
          for (let i = 0; i < p; i++) {
            const sub = join(out, `subtask-${i}`);
            const mine: string[] = [];
            for (const f of (await readdir(sub)).filter((n) => n.endsWith('.bin'))) {
              mine.push(...decodeFrames(await readFile(join(sub, f))));
            }
            fromInput += mine.length;
            const assigned = new Set(rangeOldSubtasks(i, OLD, p));
            for (const e of upstream) {
              const [key, value] = e.value as [number, string];
              if (!assigned.has(e.subpartition)) continue;
              if (operatorForKeyHash(keyHash(BigInt(key)), p, MAX) !== i) continue;
              mine.push(`${key} ${value}`);
              fromOutput++;
            }
            expect(sorted(mine), `P=${p} subtask ${i}`).toEqual(sorted(flink.get(p)![i]!));
          }
          const counts = (JSON.parse(r.stdout) as { records: { cut?: number } }).records;
          table.push(
            `P=${p}: ${fromInput} from --rescale (cut, not completed: ${counts.cut ?? 0}), ` +
              `${fromOutput} from upstream output`,
          );
          expect(fromInput).toBeGreaterThan(0);
        }
        console.log(`rescale-real-flink ${profile}: ${table.join('; ')}`);
      }, 120_000);
    });
  }
});
