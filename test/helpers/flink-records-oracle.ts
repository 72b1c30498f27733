/**
 * Compares `readFlinkRecords` with RecordsOracle's `records.jsonl` (or `records.jsonl.gz`;
 * interop/flink: Flink's own StreamElementSerializer over the job's TypeSerializer): for every
 * pipeline of the job (the typed job's four, the Writer job's one), every input channel of its
 * downstream (tails joined to the head of the upstream feeding that gate) and every output
 * subpartition of its upstreams, element for element. Numbers are compared as written (a Java
 * long's digits exactly; a double by value, so Java's `1.0E10` equals JavaScript's
 * `10000000000`); a Map's `[key, value]` pairs as a set (Flink's MapSerializer writes a HashMap
 * in its iteration order, which a deserialized HashMap need not keep).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { expect } from 'vitest';
import { listFlinkCheckpoint, readFlinkRecords } from '../../src/index.ts';
import { toJson } from '../../src/services/formats/flink/records/json.ts';

/** JSON with every number kept as its canonical text (integers exact, others by value). */
export function parseExact(text: string): unknown {
  let i = 0;
  const ws = (): void => {
    while (i < text.length && /\s/.test(text[i]!)) i++;
  };
  const value = (): unknown => {
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      const out: Record<string, unknown> = {};
      ws();
      if (text[i] === '}') return (i++, out);
      for (;;) {
        ws();
        const k = value() as string;
        ws();
        i++; // ':'
        out[k] = value();
        ws();
        if (text[i++] === '}') return out;
      }
    }
    if (c === '[') {
      i++;
      const out: unknown[] = [];
      ws();
      if (text[i] === ']') return (i++, out);
      for (;;) {
        out.push(value());
        ws();
        if (text[i++] === ']') return out;
      }
    }
    if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      const s = JSON.parse(text.slice(i, j + 1)) as string;
      i = j + 1;
      return s;
    }
    const m = /^(?:true|false|null|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)/.exec(text.slice(i, i + 64))!;
    i += m[0].length;
    if (m[0] === 'true' || m[0] === 'false' || m[0] === 'null') return JSON.parse(m[0]);
    if (/^-?\d+$/.test(m[0])) return { n: BigInt(m[0]).toString() };
    const v = Number(m[0]);
    return { n: Number.isInteger(v) && Math.abs(v) < 2 ** 53 ? String(v) : String(v) };
  };
  return canonical(value());
}

/** Sorts arrays of `[key, value]` pairs (a Map's entries) so their order does not matter. */
function canonical(v: unknown): unknown {
  if (Array.isArray(v)) {
    const items = v.map(canonical);
    const pairs = items.length > 0 && items.every((x) => Array.isArray(x) && x.length === 2);
    return pairs ? items.sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1)) : items;
  }
  if (v !== null && typeof v === 'object' && !('n' in v)) {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, canonical(x)]));
  }
  return v;
}

/** One `types.json` entry: the typed job names gate 0's upstream, the Writer's each gate's. */
export interface OraclePipeline {
  name: string;
  spec: string;
  maxParallelism: number;
  upstream?: string | null;
  upstreams?: Record<string, string>;
  downstream: string | null;
}

/** JSON text of a parsed value with object keys sorted: equal text iff `toEqual`. */
export function sortedText(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(sortedText).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const keys = Object.keys(v).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${sortedText((v as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

/** What a comparison may pass to `readFlinkRecords` besides the channel (e.g. `relocate`). */
export type OracleReadOptions = Omit<
  Parameters<typeof readFlinkRecords>[0],
  'checkpoint' | 'operator' | 'subtask' | 'outputState' | 'type' | 'upstream'
>;

/** RecordsOracle's lines, from `records.jsonl` or its gzip. */
function oracleLines(expected: string): string[] {
  const plain = join(expected, 'records.jsonl');
  const text = existsSync(plain)
    ? readFileSync(plain, 'utf8')
    : gunzipSync(readFileSync(`${plain}.gz`)).toString('utf8');
  return text.split('\n').filter((line) => line !== '');
}

/** `operator/subtask/side/gate/channel` or `…/partition/subpartition`: one channel's key. */
export const channelOf = (e: Record<string, unknown>): string =>
  `${e.operator as string}/${e.subtask as number}/${e.side as string}/` +
  (e.side === 'input'
    ? `${e.gate as number}/${e.channel as number}`
    : `${e.partition as number}/${e.subpartition as number}`);

/** The oracle's elements (as `parseExact` reads them) per channel (`channelOf`), in order. */
export function readRecordsOracle(expected: string): Map<string, unknown[]> {
  const oracle = new Map<string, unknown[]>();
  for (const line of oracleLines(expected)) {
    const e = parseExact(line) as Record<string, unknown>;
    const key = channelOf(
      Object.fromEntries(
        Object.entries(e).map(([k, v]) => [
          k,
          typeof v === 'object' && v !== null && 'n' in v ? Number((v as { n: string }).n) : v,
        ]),
      ),
    );
    const list = oracle.get(key);
    if (list === undefined) oracle.set(key, [e]);
    else list.push(e);
  }
  return oracle;
}

/**
 * Checks every element Spillway reads from `checkpoint` against `expected/records.jsonl[.gz]`;
 * returns counts by kind (and stitched / head, and `compared`: elements checked) for the caller
 * to log and bound. `options` go to every `readFlinkRecords` call (e.g. `relocate`).
 */
export async function compareWithRecordsOracle(
  checkpoint: string,
  expected: string,
  options: OracleReadOptions = {},
): Promise<Record<string, number>> {
  const pipelines = JSON.parse(
    readFileSync(join(expected, 'types.json'), 'utf8'),
  ) as OraclePipeline[];
  const oracle = readRecordsOracle(expected);
  const listing = await listFlinkCheckpoint(checkpoint);
  const ours = new Map<string, unknown[]>();
  const counts: Record<string, number> = {};
  for (const p of pipelines) {
    const upstream: Record<number, string> =
      p.upstreams !== undefined
        ? Object.fromEntries(Object.entries(p.upstreams).map(([g, id]) => [Number(g), id]))
        : p.upstream
          ? { 0: p.upstream }
          : {};
    const reads: [string | null, boolean][] = [
      [p.downstream, false],
      ...[...new Set(Object.values(upstream))].sort().map((id): [string, boolean] => [id, true]),
    ];
    for (const [id, outputState] of reads) {
      if (id === null) continue;
      const op = listing.operators.find((o) => o.id === id)!;
      for (const s of op.subtasks) {
        if ((outputState ? s.outputSubpartitions : s.inputChannels) === 0) continue;
        for await (const e of readFlinkRecords({
          ...options,
          checkpoint,
          operator: id,
          subtask: s.index,
          outputState,
          type: p.spec,
          ...(outputState || Object.keys(upstream).length === 0 ? {} : { upstream }),
        })) {
          const key = channelOf(e as unknown as Record<string, unknown>);
          const list = ours.get(key);
          if (list === undefined) ours.set(key, [parseExact(toJson(e))]);
          else list.push(parseExact(toJson(e)));
          counts[e.kind] = (counts[e.kind] ?? 0) + 1;
          if (e.stitched !== undefined) counts.stitched = (counts.stitched ?? 0) + 1;
          if (e.end === 'head') counts.head = (counts.head ?? 0) + 1;
        }
      }
    }
  }
  expect([...ours.keys()].sort()).toEqual([...oracle.keys()].sort());
  let compared = 0;
  for (const [key, list] of oracle) {
    const mine = ours.get(key)!;
    expect(mine.length, key).toBe(list.length);
    list.forEach((want, i) => {
      // Text first (fast); `toEqual` only where they differ, for its diff in the failure.
      if (sortedText(mine[i]) !== sortedText(want)) {
        expect(mine[i], `${key} element ${i}`).toEqual(want);
      }
      compared++;
    });
  }
  return { ...counts, compared };
}

/** The committed typed fixtures: `test/fixtures/flink/typed/<release>/`. */
export function typedFixtures(
  root: string,
): { release: string; checkpoint: string; expected: string }[] {
  const out: { release: string; checkpoint: string; expected: string }[] = [];
  for (const release of ['1.20.5', '2.3.0']) {
    const dir = join(root, release);
    let info: { checkpoint: string };
    try {
      info = JSON.parse(readFileSync(join(dir, 'typed.json'), 'utf8')) as { checkpoint: string };
    } catch {
      continue;
    }
    out.push({ release, checkpoint: join(dir, info.checkpoint), expected: join(dir, 'expected') });
  }
  return out;
}
