/**
 * A real Flink restores what `spillway flink rewrite` writes (issue 31). When `java` and `mvn`
 * are on PATH, per release (1.20.x writes metadata v4, 2.x writes v6 with merged handles):
 *
 * - the harness's PoisonJob (interop/flink: keyed, unaligned checkpoints under backpressure,
 *   retained) fails on a poison record while that record is in flight, leaving a checkpoint
 *   that holds it (found in the input channel state by Spillway);
 * - (1) restored from that checkpoint, the job fails on the poison again;
 * - (2) `flink rewrite --drop <the poison's position>`: restored from NEWDIR the job runs to the
 *   end, and its sink gets exactly what Flink's own restore of the original delivers (with the
 *   check let through) minus the poison, each record once — every in-flight record and
 *   everything after;
 * - (3) a rewrite that drops nothing restores to the same sink output as the original;
 * - Flink's `Checkpoints.loadCheckpointMetadata` + `storeCheckpointMetadata` of every NEWDIR,
 *   and of the rewrites of the committed fixtures, gives back the file byte for byte.
 *
 * Variants (channel-state storage of the source): by default 1.20.x file + inline and 2.x
 * inline + file-merging; SPILLWAY_FLINK_VARIANTS=file,inline,merging runs those for both.
 * Without java or mvn the suite is skipped with a printed reason.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFlinkMetadata } from '../../src/services/formats/flink/metadata.ts';
import { RewriteRefusedError } from '../../src/services/errors.ts';
import { rewriteFlinkCheckpoint } from '../../src/services/formats/flink/write/rewrite.ts';
import { runCli } from '../e2e/harness.ts';
import { listFlinkFixtures } from '../helpers/flink-expected.ts';
import { cutFrames, readChannel } from '../helpers/flink-rewrite.ts';
import { harnessClasspath, harnessSuite } from '../helpers/flink-harness.ts';
import { removeDir, tempDir } from '../helpers/temp.ts';

const run = promisify(execFile);
const suite = harnessSuite('rewrite-real-flink');

const RELEASES = [
  { profile: 'flink1', flink: '1.20.x', fixtures: '1.20.5-', metadataVersion: 4 },
  { profile: 'flink2', flink: '2.x', fixtures: '2.3.0-', metadataVersion: 6 },
] as const;

const VARIANT_FLAGS: Record<string, string[]> = {
  file: ['--threshold', '0b'],
  inline: ['--threshold', '20kb', '--subtasks-per-file', '1'],
  merging: ['--threshold', '0b', '--file-merging'],
};

function variantsOf(profile: string): string[] {
  const env = process.env.SPILLWAY_FLINK_VARIANTS;
  if (env !== undefined && env !== '') {
    return env
      .split(',')
      .map((v) => v.trim())
      .filter((v) => VARIANT_FLAGS[v] !== undefined);
  }
  return profile === 'flink1' ? ['file', 'inline'] : ['inline', 'merging'];
}

/** The poison's sequence number (its value is "poison", its key 3000 % 97). */
const POISON = 3000;
const MiB = 1 << 20;

const seconds = (t0: number): string => ((performance.now() - t0) / 1000).toFixed(1);

/** One restored job: what the sink printed and how it ended. */
interface Restored {
  readonly out: string[];
  readonly end: string;
}

/** `PoisonJob restore` of each checkpoint, one JVM: RUN / OUT… / FINISHED | FAILED blocks. */
async function restore(
  classpath: string,
  tmp: string,
  mode: 'throw' | 'pass',
  from: readonly string[],
): Promise<Map<string, Restored>> {
  const args = ['-cp', classpath, 'dev.spillway.flink.PoisonJob', 'restore', '--mode', mode];
  args.push('--tmp', tmp);
  args.push('--poison', String(POISON), ...from.flatMap((f) => ['--from', f]));
  const { stdout } = await run('java', args, { maxBuffer: 256 * MiB });
  const runs = new Map<string, Restored>();
  let current: { path: string; out: string[] } | undefined;
  for (const line of stdout.split('\n')) {
    if (line.startsWith('RUN ')) current = { path: line.slice(4), out: [] };
    else if (line.startsWith('OUT ')) current?.out.push(line.slice(4));
    else if ((line === 'FINISHED' || line.startsWith('FAILED ')) && current !== undefined) {
      runs.set(current.path, { out: current.out, end: line });
      current = undefined;
    }
  }
  return runs;
}

/** A variant's checkpoints: the original, the rewrite without the poison, the copy. */
interface Case {
  readonly variant: string;
  readonly original: string;
  readonly dropped: string;
  readonly same: string;
  readonly poisonAt: string;
  /** The sequence numbers of the records in the original's input channel state. */
  readonly inFlight: string[];
}

for (const release of RELEASES) {
  suite(`a real Flink ${release.flink} restores what flink rewrite wrote`, () => {
    let root = '';
    let classpath = '';
    const cases: Case[] = [];
    let thrown = new Map<string, Restored>();
    let passed = new Map<string, Restored>();

    beforeAll(async () => {
      root = await tempDir();
      let t0 = performance.now();
      classpath = await harnessClasspath(release.profile);
      const timings = [`maven ${seconds(t0)} s`];
      for (const variant of variantsOf(release.profile)) {
        // The poison is in flight only if the checkpoint caught it in the network buffers: a
        // real job's timing, so a run that did not catch it is written again (at most 6 times).
        let original = '';
        let found: Awaited<ReturnType<typeof rewriteFlinkCheckpoint>> | undefined;
        for (let attempt = 1; found === undefined; attempt++) {
          t0 = performance.now();
          const written = await run(
            'java',
            ['-cp', classpath, 'dev.spillway.flink.PoisonJob', 'write'].concat(
              ['--out', join(root, `${variant}-${attempt}`), '--poison', String(POISON)],
              ['--tmp', join(root, 'flink-tmp')],
              VARIANT_FLAGS[variant]!,
            ),
            { maxBuffer: 256 * MiB },
          );
          timings.push(`write ${variant} ${seconds(t0)} s`);
          const chk = /^CHECKPOINT (.+)$/m.exec(written.stdout)?.[1];
          if (chk === undefined) throw new Error(`no checkpoint:\n${written.stderr}`);
          expect(written.stdout).toMatch(/^FAILED .*poison record/m);
          original = chk;
          // Where the poison is: Spillway's own reading of the input channel state.
          found = await rewriteFlinkCheckpoint({
            checkpoint: original,
            out: join(root, `${variant}-${attempt}-unused`),
            dryRun: true,
            drop: [(e) => e.kind === 'record' && e.bytes.includes(Buffer.from('poison'))],
          }).catch((error: unknown) => {
            if (attempt >= 6 || !(error instanceof RewriteRefusedError)) throw error;
            console.log(`rewrite-real-flink ${variant}: the poison was not in flight; again`);
            return undefined;
          });
        }
        expect(found.dropped.length, 'the poison is in flight in the input channel state').toBe(1);
        const poisonAt = found.dropped[0]!.position;
        const inFlight: string[] = [];
        const meta = await readFlinkMetadata(original);
        for (const op of meta.operators) {
          for (const st of op.subtasks) {
            for (const h of st.inputChannels) {
              const bytes = await readChannel(
                original,
                op.id,
                st.index,
                'input',
                h.gate,
                h.channel,
              );
              for (const frame of cutFrames(bytes).frames) {
                const m = /r(\d+)$/.exec(frame.toString('latin1'));
                if (m !== null) inFlight.push(m[1]!);
              }
            }
          }
        }
        const dropped = join(root, `${variant}-dropped`);
        const same = join(root, `${variant}-same`);
        const r1 = await runCli([
          'flink',
          'rewrite',
          original,
          '--out',
          dropped,
          '--drop',
          poisonAt,
        ]);
        expect(r1.code, r1.stderr).toBe(0);
        const r2 = await runCli(['flink', 'rewrite', original, '--out', same]);
        expect(r2.code, r2.stderr).toBe(0);
        cases.push({ variant, original, dropped, same, poisonAt, inFlight });
      }
      t0 = performance.now();
      thrown = await restore(
        classpath,
        join(root, 'flink-tmp'),
        'throw',
        cases.flatMap((c) => [c.original, c.dropped]),
      );
      passed = await restore(
        classpath,
        join(root, 'flink-tmp'),
        'pass',
        cases.flatMap((c) => [c.original, c.same]),
      );
      timings.push(`restores ${seconds(t0)} s`);
      console.log(`rewrite-real-flink ${release.profile}: ${timings.join(', ')}`);
    }, 1_200_000);

    afterAll(async () => {
      if (root !== '') await removeDir(root);
    });

    it('restored from the original checkpoint, the job fails on the poison record (each variant)', () => {
      expect(cases.length).toBe(variantsOf(release.profile).length);
      for (const c of cases) {
        expect(thrown.get(c.original)?.end, c.variant).toMatch(/^FAILED .*poison record/);
      }
    });

    it('restored from the rewrite without the poison, the job runs to the end; its sink gets every record of the original except the poison, exactly once, in-flight ones and all after', () => {
      for (const c of cases) {
        const fixed = thrown.get(c.dropped);
        expect(fixed?.end, c.variant).toBe('FINISHED');
        const reference = passed.get(c.original)!;
        expect(reference.end).toBe('FINISHED');
        expect(reference.out.filter((v) => v === 'poison')).toEqual(['poison']);
        const got = [...fixed!.out].sort();
        expect(new Set(got).size, `${c.variant}: no record twice`).toBe(got.length);
        expect(got, c.variant).toEqual(reference.out.filter((v) => v !== 'poison').sort());
        // Every record that was in flight (in the input channel state) reached the sink.
        const delivered = new Set(got);
        expect(c.inFlight.length).toBeGreaterThan(1);
        expect(
          c.inFlight.filter((n) => !delivered.has(n)),
          c.variant,
        ).toEqual([]);
        // …and everything the source emits after its checkpointed position.
        expect(delivered.has(String(POISON + 20_000))).toBe(true);
      }
    });

    it('a rewrite that drops nothing restores to the same sink output as the original', () => {
      for (const c of cases) {
        const a = passed.get(c.original)!;
        const b = passed.get(c.same)!;
        expect(b.end, c.variant).toBe('FINISHED');
        expect([...b.out].sort(), c.variant).toEqual([...a.out].sort());
      }
    });

    it("Flink's own serializer loads and stores every NEWDIR (poison rewrites, committed fixtures' rewrites) to the same bytes", async () => {
      const dirs = cases.flatMap((c) => [c.dropped, c.same]);
      for (const f of listFlinkFixtures().filter((x) => x.name.startsWith(release.fixtures))) {
        const out = join(root, `fixture-${f.name}`);
        await rewriteFlinkCheckpoint({
          checkpoint: f.checkpoint,
          out,
          relocate: [{ from: f.originalJobDir, to: f.jobDir }],
        });
        dirs.push(out);
      }
      for (const d of dirs)
        expect((await readFlinkMetadata(d)).version).toBe(release.metadataVersion);
      const r = await run(
        'java',
        ['-cp', classpath, 'dev.spillway.flink.MetadataRoundTrip', ...dirs],
        { maxBuffer: 16 * MiB },
      ).catch((e: { stdout?: string }) => ({ stdout: e.stdout ?? String(e) }));
      const lines = r.stdout.trim().split('\n');
      expect(lines.filter((l) => !l.startsWith('SAME '))).toEqual([]);
      expect(lines.length).toBe(dirs.length);
    }, 300_000);
  });
}
