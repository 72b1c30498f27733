/**
 * DESIGN §7 "Memory stays bounded whatever a count or length declares", measured where it can be
 * seen: in a child process of its own (old space capped at 64 MiB), sampling heap and external
 * (buffer) memory every millisecond while the library reads a real checkpoint made hostile — a
 * channel-state entry declaring 2 GiB, a handle declaring 2^31 - 1 offsets. Each is one
 * CorruptCheckpointError, and the child's memory grows by less than 64 MiB (a reader that
 * allocated what is declared would grow by GiBs or die of the cap).
 */
import { cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readFlinkMetadata } from '../../src/services/formats/flink/metadata.ts';
import { listFlinkFixtures, type FlinkFixture } from '../helpers/flink-expected.ts';
import { repoRoot, spawnTracked } from '../helpers/processes.ts';
import { listSpill } from '../helpers/spill-root.ts';
import { makeTempRoot } from '../helpers/temp.ts';

const fixture: FlinkFixture | undefined = listFlinkFixtures().find(
  (f) => f.variant === 'file' && f.metadataVersion === 4,
);
const MIB = 1024 * 1024;

/** The child: imports the built library, recovers, reports its error and its memory growth. */
const CHILD = `
import { recoverChannelState } from ${JSON.stringify(join(repoRoot, 'dist', 'src', 'index.js'))};
const [checkpoint, spillRoot, operator] = process.argv.slice(2);
const used = () => { const m = process.memoryUsage(); return m.heapUsed + m.external; }; // external includes array buffers
globalThis.gc?.();
const base = used();
let peak = base;
const sample = setInterval(() => { peak = Math.max(peak, used()); }, 1);
let code = 'none';
try {
  await recoverChannelState({ checkpoint, spillRoot, flink: { operator, subtask: 0 },
    channels: () => ({ onBuffer() {}, onFinished() {} }) }).done;
} catch (error) { code = error.code; }
peak = Math.max(peak, used());
clearInterval(sample);
console.log(JSON.stringify({ code, growth: peak - base }));
`;

async function hostileCopy(f: FlinkFixture): Promise<{ root: string; checkpoint: string }> {
  const root = await makeTempRoot();
  await cp(f.jobDir, join(root, 'job'), { recursive: true });
  return { root, checkpoint: join(root, 'job', f.checkpoint.slice(f.jobDir.length + 1)) };
}

async function runChild(root: string, checkpoint: string, operator: string) {
  const script = join(root, 'child.mjs');
  await writeFile(script, CHILD);
  const child = spawnTracked(process.execPath, [
    '--max-old-space-size=64',
    '--expose-gc',
    script,
    checkpoint,
    root,
    operator,
  ]);
  const { code } = await child.exited;
  expect(code, child.stderr).toBe(0);
  return JSON.parse(child.stdout.trim()) as { code: string; growth: number };
}

describe.skipIf(fixture === undefined)('G9 hostile Flink input: memory bounded in a child', () => {
  const f = fixture!;

  for (const [what, patch] of [
    [
      'a channel-state entry declaring 2 GiB',
      async (checkpoint: string) => {
        const meta = await readFlinkMetadata(checkpoint);
        const op = meta.operators.find((o) => o.id === f.keyedOperator)!;
        const handle = op.subtasks.find((s) => s.index === 0)!.inputChannels[0]!;
        if (handle.delegate.kind !== 'relative') throw new Error('expected a relative handle');
        const file = join(checkpoint, handle.delegate.relativePath);
        const bytes = await readFile(file);
        bytes.writeInt32BE(0x7fffffff, Math.min(...handle.offsets));
        await writeFile(file, bytes);
      },
    ],
    [
      'a handle declaring 2^31 - 1 offsets',
      async (checkpoint: string) => {
        const meta = await readFlinkMetadata(checkpoint);
        const op = meta.operators.find((o) => o.id === f.keyedOperator)!;
        const handle = op.subtasks.find((s) => s.index === 0)!.inputChannels[0]!;
        const file = join(checkpoint, '_metadata');
        const bytes = await readFile(file);
        // Metadata v4 (ChannelStateHandleSerializerV1): subtask, gate, channel, offset count.
        bytes.writeInt32BE(0x7fffffff, handle.metadataOffset + 12);
        await writeFile(file, bytes);
      },
    ],
  ] as const) {
    it(`${what}: one CorruptCheckpointError, memory growth < 64 MiB, nothing on disk`, async () => {
      const { root, checkpoint } = await hostileCopy(f);
      await patch(checkpoint);
      const result = await runChild(root, checkpoint, f.keyedOperator);
      console.log(`${what}: ${result.code}, memory growth ${(result.growth / MIB).toFixed(1)} MiB`);
      expect(result.code).toBe('ERR_SPILLWAY_CORRUPT_CHECKPOINT');
      expect(result.growth).toBeLessThan(64 * MIB);
      expect(listSpill(root)).toEqual({ taskDirs: [], spillFiles: [] });
    }, 60_000);
  }
});
