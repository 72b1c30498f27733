/**
 * `spillway flink records` through the real CLI (a child process on dist/): JSON Lines in
 * Flink's reading order with 64-bit integers exact; `--limit`; the usage lists every flag; and
 * the bad-input contract on the new paths — a value that does not parse under `--type` (too
 * short, a bad string length, an unknown POJO flag, trailing bytes), a `--type` syntax error,
 * a spec nested 10,000 deep — is exit 2 with one line naming the channel and element index
 * (or the character), and nothing is left behind.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildFlinkMetadata, oneInputChannel, opId } from '../helpers/flink-metadata-builder.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import { lines, listTree, runCli } from './harness.ts';

const be32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};
const be64 = (n: bigint): Buffer => {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(n);
  return b;
};
/** One stream element framed as Flink's network stack frames it. */
const frame = (element: Buffer): Buffer => Buffer.concat([be32(element.length), element]);
/** A record without timestamp (tag 1) whose value is `value`. */
const record = (value: Buffer): Buffer => frame(Buffer.concat([Buffer.of(1), value]));
/** StringValue.writeString of an ASCII string: length + 1, then a byte per char. */
const str = (s: string): Buffer =>
  Buffer.concat([Buffer.of(s.length + 1), Buffer.from(s, 'latin1')]);

/**
 * A v4 checkpoint (`chk-1/_metadata`) whose one operator has, on subtask 0, input channel
 * (0, 0) holding `payload` as one inline entry. Returns the checkpoint dir.
 */
async function checkpointWith(tmp: string, payload: Buffer): Promise<string> {
  const chk = join(tmp, 'job', 'chk-1');
  await mkdir(chk, { recursive: true });
  const data = Buffer.concat([be32(0), be32(payload.length), payload]);
  const metadata = buildFlinkMetadata(
    oneInputChannel({
      id: opId(1),
      maxParallelism: 128,
      payloadBytes: payload.length,
      delegate: { kind: 'inline', name: 'in', data },
    }),
  );
  await writeFile(join(chk, '_metadata'), metadata);
  return chk;
}

const args = (chk: string, ...more: string[]): string[] => [
  'flink',
  'records',
  chk,
  '--operator',
  opId(1),
  '--subtask',
  '0',
  ...more,
];

/** Exit 2, one stderr line, no stack, and the temp dir holds exactly what it did before. */
async function expectBadInput(
  tmp: string,
  run: Awaited<ReturnType<typeof runCli>>,
  ...parts: (string | RegExp)[]
): Promise<string> {
  expect(run.code, run.stderr).toBe(2);
  const errLines = lines(run.stderr);
  expect(errLines, run.stderr).toHaveLength(1);
  for (const p of parts) expect(errLines[0]).toMatch(p);
  expect(run.stderr).not.toContain('    at ');
  expect(await listTree(tmp)).toEqual(['job', 'job/chk-1', 'job/chk-1/_metadata']);
  return errLines[0]!;
}

describe('spillway flink records (CLI)', () => {
  it('prints JSON Lines in reading order, 64-bit integers exact, watermarks and a partial tail as elements', async () => {
    const tmp = await makeTempRoot();
    const big = 9007199254740993n; // 2^53 + 1: a double would print …992
    const payload = Buffer.concat([
      record(Buffer.concat([be64(big), str('ab')])),
      frame(Buffer.concat([Buffer.of(2), be64(-5n)])),
      frame(Buffer.concat([Buffer.of(0), be64(1234n), be64(-1n), str('x')])),
      be32(40).subarray(0, 3), // the next element's length field, cut: the record goes on upstream
    ]);
    const chk = await checkpointWith(tmp, payload);
    const run = await runCli(args(chk, '--type', 'Tuple<Long,String>', '--key', 'long'));
    expect(run.code, run.stderr).toBe(0);
    const out = lines(run.stdout);
    expect(out).toHaveLength(4);
    expect(out[0]).toBe(
      `{"operator":"${opId(1)}","subtask":0,"side":"input","gate":0,"channel":0,"index":0,"kind":"record","bytes":12,` +
        `"key":9007199254740993,"keyGroup":${JSON.parse(out[0]!).keyGroup},"value":[9007199254740993,"ab"]}`,
    );
    expect(JSON.parse(out[1]!)).toMatchObject({
      index: 1,
      kind: 'watermark',
      bytes: 9,
      timestamp: -5,
    });
    expect(out[2]).toContain('"index":2,"kind":"record","bytes":19,"timestamp":1234,"key":-1');
    expect(JSON.parse(out[3]!)).toMatchObject({ index: 3, kind: 'partial', end: 'tail', bytes: 3 });
    // --limit stops early; no --type prints the value's bytes in base64.
    const limited = await runCli(args(chk, '--limit', '1'));
    expect(lines(limited.stdout)).toHaveLength(1);
    expect(JSON.parse(lines(limited.stdout)[0]!).value).toBe(
      Buffer.concat([be64(big), str('ab')]).toString('base64'),
    );
  });

  it('a value that does not parse under --type is exit 2, one line naming the channel and element index', async () => {
    const tmp = await makeTempRoot();
    const good = record(Buffer.concat([be64(1n), str('a')]));
    const cases: [Buffer, string, RegExp][] = [
      // Too short: a Long needs 8 bytes, 4 are left.
      [
        Buffer.concat([good, record(be32(7))]),
        'Tuple<Long,String>',
        /element 1: a Long needs 8 byte\(s\), 4 left/,
      ],
      // A string claiming 99 chars in 3 bytes.
      [
        Buffer.concat([
          good,
          good,
          record(Buffer.concat([be64(2n), Buffer.of(100), Buffer.from('abc')])),
        ]),
        'Tuple<Long,String>',
        /element 2: a string of 99 char\(s\) cannot fit the 3 byte\(s\) left/,
      ],
      // A string length that never ends (every byte has the high bit).
      [
        record(Buffer.concat([be64(2n), Buffer.alloc(9, 0xff)])),
        'Tuple<Long,String>',
        /element 0: a string length is longer than 5 bytes/,
      ],
      // A POJO flag Flink never writes.
      [record(Buffer.of(7, 0)), 'Pojo<a Long>', /element 0: unknown POJO flag 7/],
      // A list claiming more items than bytes.
      [
        record(Buffer.concat([be32(1_000_000_000), Buffer.of(1)])),
        'List<Byte>',
        /element 0: a List declares 1000000000 item\(s\)/,
      ],
      // Bytes left over: the type does not match.
      [
        record(Buffer.concat([be64(1n), str('a'), Buffer.of(9)])),
        'Tuple<Long,String>',
        /element 0: the value ends 1 byte\(s\) before the record does/,
      ],
    ];
    for (const [payload, type, reason] of cases) {
      const chk = await checkpointWith(tmp, payload);
      const run = await runCli(args(chk, '--type', type));
      await expectBadInput(
        tmp,
        run,
        /_metadata/,
        /corrupt checkpoint at byte \d+/,
        /input gate 0 channel 0/,
        reason,
      );
    }
  });

  it('a length no element can have is exit 2 naming the channel and element, never an allocation of it', async () => {
    const tmp = await makeTempRoot();
    const good = record(Buffer.concat([be64(1n), str('a')]));
    for (const [length, reason] of [
      [0x7fffffff, /element 1: element length 2147483647 is larger than the 16777216-byte limit/],
      [-5, /element 1: element length -5/],
      [0, /element 1: element length 0/],
    ] as const) {
      const chk = await checkpointWith(tmp, Buffer.concat([good, be32(length), Buffer.alloc(8)]));
      await expectBadInput(tmp, await runCli(args(chk)), /input gate 0 channel 0/, reason);
    }
  });

  it('a --type syntax error points at the character; a spec nested 10,000 deep is the same one line', async () => {
    const tmp = await makeTempRoot();
    const chk = await checkpointWith(tmp, record(be64(1n)));
    await expectBadInput(
      tmp,
      await runCli(args(chk, '--type', 'Tuple<Long,>')),
      /at character 12: expected a type, found '>'/,
    );
    const deep = `${'List<'.repeat(10_000)}Long${'>'.repeat(10_000)}`;
    const line = await expectBadInput(
      tmp,
      await runCli(args(chk, '--type', deep)),
      /at character \d+: types nest deeper than 64/,
    );
    expect(line.length).toBeLessThan(500);
    await expectBadInput(
      tmp,
      await runCli(args(chk, '--upstream', 'x')),
      /--upstream must be GATE=OP/,
    );
    await expectBadInput(
      tmp,
      await runCli(args(chk, '--upstream', '0=nope')),
      /unknown operator 'nope'/,
    );
  });

  it('--json: a failure is also one JSON object on stdout, with the code', async () => {
    const tmp = await makeTempRoot();
    const chk = await checkpointWith(tmp, record(be64(1n)));
    const run = await runCli(args(chk, '--type', 'Tuple<Long,', '--json'));
    expect(run.code).toBe(2);
    const out = lines(run.stdout);
    expect(out).toHaveLength(1);
    expect(JSON.parse(out[0]!)).toMatchObject({ error: { code: 'ERR_SPILLWAY_TYPE_SPEC' } });
    const corrupt = await runCli(args(chk, '--type', 'Tuple<Long,Long>', '--json'));
    expect(corrupt.code).toBe(2);
    expect(JSON.parse(lines(corrupt.stdout)[0]!)).toMatchObject({
      error: {
        code: 'ERR_SPILLWAY_CORRUPT_CHECKPOINT',
        file: expect.stringContaining('_metadata'),
      },
    });
  });

  it('--help lists every flag', async () => {
    const run = await runCli(['flink', 'records', '--help']);
    expect(run.code).toBe(0);
    for (const flag of [
      '--operator',
      '--subtask',
      '--output-state',
      '--type',
      '--key',
      '--upstream',
      '--limit',
      '--allow-path',
      '--relocate',
      '--s3-endpoint',
      '--json',
    ]) {
      expect(run.stdout).toContain(flag);
    }
  });
});
