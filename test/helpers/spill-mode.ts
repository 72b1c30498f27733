/**
 * The two spilling modes a suite can run in: `spilling` (Flink's
 * SpillingNoFilteringHandler, a v1 checkpoint recovered verbatim) and `filtering`
 * (SpillingWithFilteringHandler: a v2 record checkpoint recovered as new subtask 0 of 2). A
 * suite file runs in the default mode; its `*.filtering.test.ts` twin calls
 * {@link useSpillMode} and then imports it, so the very same tests run through the filtering
 * handler. Each test file has its own module state, so the two never mix.
 */
import { join } from 'node:path';
import { makeCheckpoint, type MadeCheckpoint } from '../../src/services/formats/spwc/generator.ts';
import { makeRecordCheckpoint } from '../../src/services/formats/spwc/record-generator.ts';
import { readCheckpoint } from '../../src/services/formats/spwc/reader.ts';
import { channelKey } from '../../src/services/channel.ts';
import type { RescaleOption } from '../../src/services/rescale/rescale-options.ts';
import { referenceFilter, type V2Entry } from './rescale-reference.ts';

export type SpillMode = 'spilling' | 'filtering';

let mode: SpillMode = 'spilling';

/** Switches this test file to `next` (call before the suite's tests are collected). */
export function useSpillMode(next: SpillMode): void {
  mode = next;
}

export function spillMode(): SpillMode {
  return mode;
}

/** The rescale target every recovery of a filtering-mode suite gets. */
export const FILTERING_TARGET = { subtask: 0, parallelism: 2 } as const;

/** `{ rescale }` in filtering mode, `{}` otherwise: spread into recovery options. */
export function modeOptions(): { rescale?: RescaleOption } {
  return mode === 'filtering' ? { rescale: FILTERING_TARGET } : {};
}

export interface ModeCheckpointOptions {
  kib: number;
  seed: number;
  gates: number;
  channels: number;
  maxEntryBytes: number;
  name?: string;
}

/**
 * A suite's checkpoint for the current mode and what recovering it must deliver.
 *
 * In `filtering` mode it is a v2 file of about 2 × `kib` KiB of records from 3 old subtasks
 * (about `kib` KiB survive), and
 * the returned `made.payloadBytes` / `made.channels[].bytes` / `original` are the survivors'
 * bytes as the independent reference filter computes them: what a recovery as subtask 0 of 2
 * must deliver, not the file's payload. `made.path` and `made.entries` are the file's.
 */
export async function makeModeCheckpoint(
  dir: string,
  o: ModeCheckpointOptions,
): Promise<{ made: MadeCheckpoint; original: Map<string, Buffer> }> {
  const out = join(dir, o.name ?? 'in.spwc');
  if (mode === 'spilling') {
    const made = await makeCheckpoint({
      out,
      mb: o.kib / 1024,
      seed: o.seed,
      gates: o.gates,
      channels: o.channels,
      maxEntryBytes: o.maxEntryBytes,
    });
    return { made, original: await entriesBytes(out) };
  }
  // Bodies of 8..2048 bytes average ~1 KiB, and about half survive: twice `kib` records
  // spill about `kib` KiB, so both modes rotate through as many spill files.
  const made = await makeRecordCheckpoint({
    out,
    records: 2 * o.kib,
    subtasks: 3,
    gates: o.gates,
    channels: o.channels,
    seed: o.seed,
    maxEntryBytes: o.maxEntryBytes,
  });
  const entries: V2Entry[] = [];
  await entriesBytes(out, entries);
  const original = referenceFilter(entries, { i: 0, p: 2, m: 128, k: 8 });
  const channels = made.channels.map((c) => ({
    ...c,
    bytes: original.get(channelKey(c))?.length ?? 0,
  }));
  const payloadBytes = channels.reduce((n, c) => n + c.bytes, 0);
  return { made: { ...made, channels, payloadBytes }, original };
}

/** Each channel's payload bytes from the file (and its entries, when asked for). */
async function entriesBytes(path: string, entries?: V2Entry[]): Promise<Map<string, Buffer>> {
  const parts = new Map<string, Buffer[]>();
  let current: Buffer[] = [];
  let entry: V2Entry | undefined;
  await readCheckpoint(path, {
    onEntry(gate, channel, _length, _offset, subtask) {
      const key = channelKey({ gate, channel });
      current = parts.get(key) ?? [];
      parts.set(key, current);
      entry = { subtask, gate, channel, payload: Buffer.alloc(0) };
      entries?.push(entry);
    },
    onPayload(chunk) {
      // The reader reuses its buffer: copy.
      const copy = Buffer.from(chunk);
      current.push(copy);
      if (entry !== undefined) entry.payload = Buffer.concat([entry.payload, copy]);
    },
  });
  return new Map([...parts].map(([k, v]) => [k, Buffer.concat(v)]));
}
