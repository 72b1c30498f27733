/**
 * `flink rewrite --drop` / `--drop-key` and `rewriteFlinkCheckpoint({ drop })` on real Flink
 * checkpoints (the committed fixtures): exactly the elements named are gone from the new
 * checkpoint, each as a whole frame, across entry boundaries; every other byte of every channel
 * reads back as before; a dry run writes nothing and reports what a real run drops.
 */
import { readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { readFlinkMetadata } from '../../src/services/formats/flink/metadata.ts';
import { readFlinkRecords } from '../../src/services/formats/flink/records/read-records.ts';
import type { FlinkElement } from '../../src/services/formats/flink/records/elements.ts';
import { rewriteFlinkCheckpoint } from '../../src/services/formats/flink/write/rewrite.ts';
import { runCli } from '../e2e/harness.ts';
import {
  copyFixtureCheckpoint,
  cutFrames,
  fixtureByName,
  readChannel,
  splitChannel,
  tempRootsForFile,
} from '../helpers/flink-rewrite.ts';

const tempRoot = tempRootsForFile();

beforeAll(async () => {
  // The CLI cases spawn the built CLI.
  expect(existsSync(join(__dirname, '../../dist'))).toBe(true);
});

/** The first input channel with at least `n` whole frames, and the others. */
async function channelWithFrames(
  chk: string,
  n: number,
): Promise<{ pick: [string, number, number, number]; others: [string, number, number, number][] }> {
  const all = await inputChannels(chk);
  for (const c of all) {
    if (cutFrames(await readChannel(chk, c[0], c[1], 'input', c[2], c[3])).frames.length >= n) {
      return { pick: c, others: all.filter((x) => x !== c) };
    }
  }
  throw new Error(`no input channel with ${n} frames in ${chk}`);
}

/** Every input channel with state: [operator, subtask, gate, channel]. */
async function inputChannels(chk: string): Promise<[string, number, number, number][]> {
  const meta = await readFlinkMetadata(chk);
  return meta.operators.flatMap((o) =>
    o.subtasks.flatMap((s) =>
      s.inputChannels.map(
        (h) => [o.id, s.index, h.gate, h.channel] as [string, number, number, number],
      ),
    ),
  );
}

describe('flink rewrite --drop on real Flink checkpoints', () => {
  for (const name of ['1.20.5-file', '2.3.0-file', '2.3.0-inline', '1.20.5-watermarks']) {
    it(`${name}: dropping element 3 of an input channel removes exactly that frame; every other channel reads back unchanged`, async () => {
      const f = fixtureByName(name);
      const { pick, others } = await channelWithFrames(f.checkpoint, 5);
      const [op, subtask, gate, channel] = pick;
      const before = await readChannel(f.checkpoint, op, subtask, 'input', gate, channel);
      const { frames, partial } = cutFrames(before);
      expect(frames.length).toBeGreaterThan(4);
      const out = join(await tempRoot(), 'new');
      const selector = `${op}/${subtask}/input/${gate}/${channel}/3`;
      const result = await rewriteFlinkCheckpoint({
        checkpoint: f.checkpoint,
        out,
        drop: [selector],
      });
      expect(result.dropped).toEqual([
        {
          position: selector,
          kind: frames[3]![4] === 2 ? 'watermark' : 'record',
          bytes: frames[3]!.length,
        },
      ]);
      const after = await readChannel(out, op, subtask, 'input', gate, channel);
      const want = Buffer.concat([
        ...frames.slice(0, 3),
        ...frames.slice(4),
        ...(partial ? [partial] : []),
      ]);
      expect(after.equals(want)).toBe(true);
      for (const [o, s, g, c] of others) {
        const a = await readChannel(f.checkpoint, o, s, 'input', g, c);
        const b = await readChannel(out, o, s, 'input', g, c);
        expect(b.equals(a), `${o}/${s}/${g}/${c}`).toBe(true);
      }
      // The state size Flink will see shrank by the frame, lengths of the entries counted.
      const sub = result.subtasks.find((x) => x.operator === op && x.subtask === subtask)!;
      expect(sub.inputBytes.before - sub.inputBytes.after).toBe(frames[3]!.length);
    });
  }

  it('positions are those flink records reads: elements readFlinkRecords yields, handed to drop, are exactly the ones gone', async () => {
    const f = fixtureByName('2.3.0-watermarks');
    const read = async (chk: string, subtask: number): Promise<FlinkElement[]> => {
      const out: FlinkElement[] = [];
      for await (const e of readFlinkRecords({
        checkpoint: chk,
        operator: f.keyedOperator,
        subtask,
      })) {
        out.push(e);
      }
      return out;
    };
    const sig = (e: FlinkElement): string =>
      e.side === 'input'
        ? `${e.gate}/${e.channel}/${e.kind}/${String(e.value ?? '')}/${String(e.timestamp ?? '')}`
        : 'output';
    const before = await read(f.checkpoint, 0);
    const picked = before.filter(
      (e, i) => e.kind !== 'partial' && (i % 5 === 2 || (e.kind === 'watermark' && i % 2 === 0)),
    );
    expect(picked.some((e) => e.kind === 'watermark')).toBe(true);
    expect(picked.some((e) => e.kind === 'record')).toBe(true);
    const out = join(await tempRoot(), 'new');
    const result = await rewriteFlinkCheckpoint({ checkpoint: f.checkpoint, out, drop: picked });
    expect(result.dropped.length).toBe(picked.length);
    const gone = new Set(picked);
    // Per channel, in order (channels may interleave differently in the new file).
    const perChannel = (es: FlinkElement[]): string[] =>
      es
        .map(sig)
        .sort((a, b) =>
          a.split('/').slice(0, 2).join('/').localeCompare(b.split('/').slice(0, 2).join('/')),
        );
    expect(perChannel(await read(out, 0))).toEqual(perChannel(before.filter((e) => !gone.has(e))));
  });

  it('output side: an element flink records reads in an output subpartition is dropped there; the partial head it may begin with is refused', async () => {
    const f = fixtureByName('2.3.0-file');
    const meta = await readFlinkMetadata(f.checkpoint);
    const op = meta.operators.find((o) =>
      o.subtasks.some((s) => s.outputSubpartitions.length > 0),
    )!;
    const read = async (chk: string): Promise<FlinkElement[]> => {
      const out: FlinkElement[] = [];
      for await (const e of readFlinkRecords({
        checkpoint: chk,
        operator: op.id,
        subtask: 0,
        outputState: true,
      })) {
        out.push(e);
      }
      return out;
    };
    const sig = (e: FlinkElement): string =>
      e.side === 'output'
        ? `${e.partition}/${e.subpartition}/${e.kind}/${String(e.value ?? '')}`
        : 'input';
    const before = await read(f.checkpoint);
    const picked = before.filter((e, i) => e.kind === 'record' && i % 7 === 3);
    expect(picked.length).toBeGreaterThan(2);
    const parent = await tempRoot();
    const result = await rewriteFlinkCheckpoint({
      checkpoint: f.checkpoint,
      out: join(parent, 'new'),
      drop: picked,
    });
    expect(result.dropped.length).toBe(picked.length);
    const gone = new Set(picked);
    const perChannel = (es: FlinkElement[]): string[] =>
      es
        .map(sig)
        .sort((a, b) =>
          a.split('/').slice(0, 2).join('/').localeCompare(b.split('/').slice(0, 2).join('/')),
        );
    expect(perChannel(await read(join(parent, 'new')))).toEqual(
      perChannel(before.filter((e) => !gone.has(e))),
    );
    const head = before.find((e) => e.kind === 'partial');
    expect(head?.side).toBe('output');
    if (head?.side === 'output') {
      const selector = `${op.id}/0/output/${head.partition}/${head.subpartition}/${head.index}`;
      const r = await runCli([
        'flink',
        'rewrite',
        f.checkpoint,
        '--out',
        join(parent, 'other'),
        '--drop',
        selector,
      ]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`${selector}: element ${head.index} is a partial record`);
    }
  });

  it('a record cut between an input channel and its upstream is dropped on both sides when the upstream is named', async () => {
    const f = fixtureByName('2.3.0-file');
    const upstream = { 0: 'to-record-a', 1: 'to-record-b' };
    let cut: FlinkElement | undefined;
    for (const subtask of [0, 1, 2]) {
      for await (const e of readFlinkRecords({
        checkpoint: f.checkpoint,
        operator: f.keyedOperator,
        subtask,
        upstream,
      })) {
        if (e.stitched !== undefined && cut === undefined) cut = e;
      }
    }
    expect(cut?.side).toBe('input');
    if (cut?.side !== 'input') return;
    const s = cut.stitched!;
    const selector = `${cut.operator}/${cut.subtask}/input/${cut.gate}/${cut.channel}/${cut.index}`;
    const parent = await tempRoot();
    const refused = await runCli([
      'flink',
      'rewrite',
      f.checkpoint,
      '--out',
      join(parent, 'a'),
      '--drop',
      selector,
    ]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--upstream GATE=OP');
    const ok = await runCli([
      'flink',
      'rewrite',
      f.checkpoint,
      '--out',
      join(parent, 'b'),
      '--drop',
      selector,
      '--upstream',
      '0=to-record-a',
      '--upstream',
      '1=to-record-b',
    ]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toContain(`dropped ${selector}  record  ${4 + cut.bytes} bytes`);
    const out = join(parent, 'b');
    const tailBefore = await readChannel(
      f.checkpoint,
      cut.operator,
      cut.subtask,
      'input',
      cut.gate,
      cut.channel,
    );
    const tailAfter = await readChannel(
      out,
      cut.operator,
      cut.subtask,
      'input',
      cut.gate,
      cut.channel,
    );
    const whole = cutFrames(tailBefore);
    expect(whole.partial?.length).toBe(4 + cut.bytes - s.bytes);
    expect(tailAfter.equals(Buffer.concat(whole.frames))).toBe(true);
    const headBefore = await readChannel(
      f.checkpoint,
      s.operator,
      s.subtask,
      'output',
      s.partition,
      s.subpartition,
    );
    const headAfter = await readChannel(
      out,
      s.operator,
      s.subtask,
      'output',
      s.partition,
      s.subpartition,
    );
    expect(headAfter.equals(headBefore.subarray(s.bytes))).toBe(true);
  });

  it('a record that spans entries is dropped whole; the entries around it keep the rest', async () => {
    const f = fixtureByName('1.20.5-file');
    const dir = await tempRoot();
    const chk = await copyFixtureCheckpoint(f, dir);
    const [op, subtask, gate, channel] = (await channelWithFrames(chk, 5)).pick;
    // 7-byte entries: every 26-byte record lies across four or five of them.
    const payload = await splitChannel(chk, op, subtask, gate, channel, 7);
    const { frames } = cutFrames(payload);
    const out = join(dir, 'new');
    const drop = [5, 6, frames.length - 1].map(
      (i) => `${op}/${subtask}/input/${gate}/${channel}/${i}`,
    );
    const result = await rewriteFlinkCheckpoint({ checkpoint: chk, out, drop });
    expect(result.dropped.map((d) => d.position)).toEqual(drop);
    const after = await readChannel(out, op, subtask, 'input', gate, channel);
    const kept = frames.filter((_, i) => i !== 5 && i !== 6 && i !== frames.length - 1);
    expect(after.equals(Buffer.concat(kept))).toBe(true);
    const meta = await readFlinkMetadata(out);
    const handle = meta.operators
      .find((o) => o.id === op)!
      .subtasks.find((s) => s.index === subtask)!
      .inputChannels.find((h) => h.gate === gate && h.channel === channel)!;
    // One entry per source entry that kept a byte; the state size counts their lengths.
    expect(handle.stateSize).toBe(after.length + 4 * handle.offsets.length);
    expect(handle.offsets.length).toBeLessThanOrEqual(Math.ceil(payload.length / 7));
  });

  it('--drop-key removes every record of that key from input channel state and nothing else; --dry-run reports the same and writes nothing', async () => {
    const f = fixtureByName('2.3.0-file');
    const dir = await tempRoot();
    // A key that is in flight: the key of some record in the first input channel.
    const [op, subtask, gate, channel] = (await channelWithFrames(f.checkpoint, 1)).pick;
    const first = cutFrames(await readChannel(f.checkpoint, op, subtask, 'input', gate, channel));
    const key = first.frames[0]!.readBigInt64BE(4 + 9);
    const out = join(dir, 'new');
    const dry = await runCli([
      'flink',
      'rewrite',
      f.checkpoint,
      '--out',
      out,
      '--drop-key',
      String(key),
      '--key',
      'long',
      '--dry-run',
      '--json',
    ]);
    expect(dry.code, dry.stderr).toBe(0);
    expect(existsSync(out)).toBe(false);
    const planned = JSON.parse(dry.stdout) as { dropped: { position: string }[]; dryRun: boolean };
    expect(planned.dryRun).toBe(true);
    const real = await runCli([
      'flink',
      'rewrite',
      f.checkpoint,
      '--out',
      out,
      '--drop-key',
      String(key),
      '--key',
      'long',
      '--json',
    ]);
    expect(real.code, real.stderr).toBe(0);
    const done = JSON.parse(real.stdout) as { dropped: { position: string }[] };
    expect(done.dropped).toEqual(planned.dropped);
    expect(done.dropped.length).toBeGreaterThan(0);
    for (const [o, s, g, c] of await inputChannels(f.checkpoint)) {
      const { frames, partial } = cutFrames(await readChannel(f.checkpoint, o, s, 'input', g, c));
      const isKey = (fr: Buffer): boolean =>
        fr[4] === 0 && fr.length >= 21 && fr.readBigInt64BE(13) === key;
      const want = Buffer.concat([
        ...frames.filter((fr) => !isKey(fr)),
        ...(partial ? [partial] : []),
      ]);
      const got = await readChannel(out, o, s, 'input', g, c);
      expect(got.equals(want), `${o}/${s}/${g}/${c}`).toBe(true);
      const expectedDropped = frames.flatMap((fr, i) =>
        isKey(fr) ? [`${o}/${s}/input/${g}/${c}/${i}`] : [],
      );
      expect(
        done.dropped
          .map((d) => d.position)
          .filter((p) => p.startsWith(`${o}/${s}/input/${g}/${c}/`)),
      ).toEqual(expectedDropped);
    }
  });

  it('the CLI prints each dropped element and the sizes that changed; NEWDIR holds _metadata and the new files only', async () => {
    const f = fixtureByName('1.20.5-inline');
    const out = join(await tempRoot(), 'new');
    const [op, subtask, gate, channel] = (await channelWithFrames(f.checkpoint, 1)).pick;
    const run = await runCli([
      'flink',
      'rewrite',
      f.checkpoint,
      '--out',
      out,
      '--drop',
      `${op}/${subtask}/input/${gate}/${channel}/0`,
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(`dropped ${op}/${subtask}/input/${gate}/${channel}/0  record`);
    expect(run.stdout).toMatch(new RegExp(`${op}/${subtask}: input \\d+ → \\d+ bytes`));
    expect(run.stdout).toMatch(
      /wrote .*: Flink checkpoint \d+, metadata v4, 1 element\(s\) dropped/,
    );
    // Inline state stays inline: the new _metadata holds it; no channel-state file is needed.
    const meta = await readFlinkMetadata(out);
    const kinds = new Set(
      meta.operators.flatMap((o) =>
        o.subtasks.flatMap((s) => s.inputChannels.map((h) => h.delegate.kind)),
      ),
    );
    expect([...kinds]).toEqual(['inline']);
    expect((await readFile(join(out, '_metadata'))).length).toBeGreaterThan(0);
  });
});
