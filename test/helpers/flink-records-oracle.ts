/**
 * Compares `readFlinkRecords` with RecordsOracle's `records.jsonl` (interop/flink: Flink's own
 * StreamElementSerializer over the job's TypeSerializer): for every pipeline of the typed job,
 * every input channel of its downstream (tails joined to the upstream's head) and every output
 * subpartition of its upstream, element for element. Numbers are compared as written (a Java
 * long's digits exactly; a double by value, so Java's `1.0E10` equals JavaScript's
 * `10000000000`); a Map's `[key, value]` pairs as a set (Flink's MapSerializer writes a HashMap
 * in its iteration order, which a deserialized HashMap need not keep).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
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

interface TypedPipeline {
  name: string;
  spec: string;
  maxParallelism: number;
  upstream: string | null;
  downstream: string | null;
}

const channelOf = (e: Record<string, unknown>): string =>
  `${e.operator as string}/${e.subtask as number}/${e.side as string}/` +
  (e.side === 'input'
    ? `${e.gate as number}/${e.channel as number}`
    : `${e.partition as number}/${e.subpartition as number}`);

/**
 * Checks every element Spillway reads from `checkpoint` against `expected/records.jsonl`;
 * returns counts by kind (and stitched / head) for the caller to log and bound.
 */
export async function compareWithRecordsOracle(
  checkpoint: string,
  expected: string,
): Promise<Record<string, number>> {
  const pipelines = JSON.parse(
    readFileSync(join(expected, 'types.json'), 'utf8'),
  ) as TypedPipeline[];
  const oracle = new Map<string, unknown[]>();
  for (const line of readFileSync(join(expected, 'records.jsonl'), 'utf8').split('\n')) {
    if (line === '') continue;
    const e = parseExact(line) as Record<string, unknown>;
    const key = channelOf(
      Object.fromEntries(
        Object.entries(e).map(([k, v]) => [
          k,
          typeof v === 'object' && v !== null && 'n' in v ? Number((v as { n: string }).n) : v,
        ]),
      ),
    );
    oracle.set(key, [...(oracle.get(key) ?? []), e]);
  }
  const listing = await listFlinkCheckpoint(checkpoint);
  const ours = new Map<string, unknown[]>();
  const counts: Record<string, number> = {};
  for (const p of pipelines) {
    for (const [id, outputState] of [
      [p.downstream, false],
      [p.upstream, true],
    ] as const) {
      if (id === null) continue;
      const op = listing.operators.find((o) => o.id === id)!;
      for (const s of op.subtasks) {
        if ((outputState ? s.outputSubpartitions : s.inputChannels) === 0) continue;
        for await (const e of readFlinkRecords({
          checkpoint,
          operator: id,
          subtask: s.index,
          outputState,
          type: p.spec,
          ...(outputState || p.upstream === null ? {} : { upstream: { 0: p.upstream } }),
        })) {
          const key = channelOf(e as unknown as Record<string, unknown>);
          ours.set(key, [...(ours.get(key) ?? []), parseExact(toJson(e))]);
          counts[e.kind] = (counts[e.kind] ?? 0) + 1;
          if (e.stitched !== undefined) counts.stitched = (counts.stitched ?? 0) + 1;
          if (e.end === 'head') counts.head = (counts.head ?? 0) + 1;
        }
      }
    }
  }
  expect([...ours.keys()].sort()).toEqual([...oracle.keys()].sort());
  for (const [key, list] of oracle) {
    const mine = ours.get(key)!;
    expect(mine.length, key).toBe(list.length);
    list.forEach((want, i) => expect(mine[i], `${key} element ${i}`).toEqual(want));
  }
  return counts;
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
