/**
 * `spillway flink ls` answers "what is large" (DESIGN §8, issue 30): totals per checkpoint,
 * operator and subtask; human sizes (36,348 bytes is "35.5 KiB", never "0.0 MiB"); operators
 * sorted by in-flight bytes with empty ones hidden unless --all; --channels one row per input
 * channel / output subpartition whose bytes are Flink's (each the oracle's payload plus the
 * 4-byte entry lengths); --operator filters by id, prefix or uid; --json keeps exact numbers.
 * On the committed real checkpoints, through the built CLI.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatByteChange, formatBytes } from '../../src/services/human-bytes.ts';
import type { FlinkCheckpointListing } from '../../src/services/formats/flink/list.ts';
import { listFlinkCheckpoint } from '../../src/index.ts';
import { readFlinkMetadata } from '../../src/services/formats/flink/metadata.ts';
import { runCli } from '../e2e/harness.ts';
import {
  expectedSubtasks,
  listFlinkFixtures,
  readExpectedLs,
  withFlinkTotals,
} from '../helpers/flink-expected.ts';

const fixtures = listFlinkFixtures();
const SLOW_JOIN = 'b04c65efe1b1b80162da73517c40e7de';

describe('sizes a person reads', () => {
  it('binary units by size: 36,348 bytes is 35.5 KiB, never 0.0 MiB; below 1 KiB whole bytes', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(1024)).toBe('1.0 KiB');
    expect(formatBytes(36348)).toBe('35.5 KiB');
    expect(formatBytes(150 * 1024)).toBe('150 KiB');
    expect(formatBytes(1024 ** 2 - 1)).toBe('1.0 MiB');
    expect(formatBytes(5.25 * 1024 ** 3)).toBe('5.3 GiB');
    expect(formatByteChange(1536)).toBe('+1.5 KiB');
    expect(formatByteChange(-200)).toBe('-200 B');
    expect(formatByteChange(0)).toBe('0 B');
  });
});

describe('flink ls on real checkpoints', () => {
  it('there are real fixtures', () => expect(fixtures.length).toBeGreaterThan(0));

  for (const f of fixtures) {
    describe(`${f.name} (Flink ${f.flink})`, () => {
      it('the table leads with the total, lists operators largest first, hides empty ones and says how many', async () => {
        const flink = withFlinkTotals(readExpectedLs(f.expected));
        const r = await runCli(['flink', 'ls', f.checkpoint]);
        expect(r.stderr).toBe('');
        expect(r.code).toBe(0);
        const total = flink.inputBytes + flink.outputBytes;
        expect(r.stdout).toContain(`in flight: ${formatBytes(total)} — input`);
        expect(r.stdout).not.toMatch(/\b0\.0 [KMG]iB/);
        const inFlight = (o: (typeof flink.operators)[number]) => o.inputBytes + o.outputBytes;
        const nonEmpty = flink.operators.filter((o) => inFlight(o) > 0);
        const shown = [...r.stdout.matchAll(/^operator ([0-9a-f]{32})/gm)].map((m) => m[1]);
        expect(shown).toEqual(
          [...nonEmpty].sort((a, b) => inFlight(b) - inFlight(a)).map((o) => o.id),
        );
        const hidden = flink.operators.length - nonEmpty.length;
        expect(hidden).toBeGreaterThan(0);
        expect(r.stdout).toContain(`${hidden} operator(s) without channel state not shown`);
        const all = await runCli(['flink', 'ls', f.checkpoint, '--all']);
        expect([...all.stdout.matchAll(/^operator /gm)]).toHaveLength(flink.operators.length);
        expect(all.stdout).not.toContain('not shown');
      });

      it('--channels --json: one row per channel, bytes = Flink’s payload + 4 bytes per entry (+ the 4-byte header of an inline blob), summing to the subtask’s bytes', async () => {
        const meta = await readFlinkMetadata(f.checkpoint);
        const r = await runCli(['flink', 'ls', f.checkpoint, '--channels', '--json']);
        expect(r.code, r.stderr).toBe(0);
        const listing = JSON.parse(r.stdout) as FlinkCheckpointListing;
        expect(listing).toEqual(await listFlinkCheckpoint(f.checkpoint, { channels: true }));
        for (const s of expectedSubtasks(f.expected)) {
          const sub = listing.operators
            .find((o) => o.id === s.operator)!
            .subtasks.find((x) => x.index === s.subtask)!;
          const rows = sub.channels!;
          const files = [
            ...rows.map((c) =>
              c.side === 'input'
                ? `gate-${c.gate}-channel-${c.channel}.bin`
                : `partition-${c.partition}-subpartition-${c.subpartition}.bin`,
            ),
          ].sort();
          expect(files).toEqual([...s.inputFiles, ...s.outputFiles].sort());
          for (const c of rows) {
            const file =
              c.side === 'input'
                ? `gate-${c.gate}-channel-${c.channel}.bin`
                : `partition-${c.partition}-subpartition-${c.subpartition}.bin`;
            // Flink counts an inline blob whole: its `int32 0` header too (extractAndMerge).
            const inlineBlobs = meta.operators
              .find((o) => o.id === s.operator)!
              .subtasks.find((x) => x.index === s.subtask)!
              [c.side === 'input' ? 'inputChannels' : 'outputSubpartitions'].filter(
                (h) =>
                  h.delegate.kind === 'inline' &&
                  h.gate === (c.side === 'input' ? c.gate : c.partition) &&
                  h.channel === (c.side === 'input' ? c.channel : c.subpartition),
              ).length;
            expect(c.bytes, `${s.operator}/${s.subtask} ${file}`).toBe(
              statSync(join(s.dir, file)).size + 4 * c.entries + 4 * inlineBlobs,
            );
          }
          const sum = (side: string) =>
            rows.filter((c) => c.side === side).reduce((t, c) => t + c.bytes, 0);
          expect([sum('input'), sum('output')]).toEqual([sub.inputBytes, sub.outputBytes]);
        }
      });
    });
  }
});

describe('flink ls --operator', () => {
  const v4 = fixtures.find((f) => f.metadataVersion < 5);
  const v6 = fixtures.find((f) => f.metadataVersion >= 5);

  it('on Flink 1.x metadata (no names) a uid finds its operator; --json totals are that operator’s', async () => {
    if (v4 === undefined) return;
    const r = await runCli(['flink', 'ls', v4.checkpoint, '--operator', 'slow-join', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const listing = JSON.parse(r.stdout) as FlinkCheckpointListing;
    expect(listing.operators.map((o) => o.id)).toEqual([SLOW_JOIN]);
    const flink = readExpectedLs(v4.expected).operators.find((o) => o.id === SLOW_JOIN)!;
    expect(listing.inputBytes).toBe(flink.subtasks.reduce((t, s) => t + s.inputBytes, 0));
    const table = await runCli(['flink', 'ls', v4.checkpoint, '--operator', 'b04c65']);
    expect(table.code).toBe(0);
    expect([...table.stdout.matchAll(/^operator ([0-9a-f]+)/gm)].map((m) => m[1])).toEqual([
      SLOW_JOIN,
    ]);
  });

  it('a typo is exit 2 with one line: "did you mean", the operators listed', async () => {
    if (v6 === undefined) return;
    const r = await runCli(['flink', 'ls', v6.checkpoint, '--operator', 'slow-jion']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain("unknown operator 'slow-jion' (did you mean 'slow-join'?)");
    const json = await runCli(['flink', 'ls', v6.checkpoint, '--operator', 'x', '--json']);
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout).error.code).toBe('ERR_SPILLWAY_UNKNOWN_OPERATOR');
  });

  it('an operator asked for by name is shown even when it holds nothing', async () => {
    if (v6 === undefined) return;
    const r = await runCli(['flink', 'ls', v6.checkpoint, '--operator', 'sink']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^operator 2e588ce1c86a9d46e2e85186773ce4fd {2}name "Sink: sink"/m);
    expect(r.stdout).toContain('in flight 0 B: input 0 B, output 0 B');
  });
});
