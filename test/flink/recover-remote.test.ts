/**
 * A real Flink checkpoint served over http from the test's own 127.0.0.1 server recovers to the
 * same bytes as Flink reads (relative and inline handles are read through the same resumable
 * ranged sources as the `_metadata`), through the library and the CLI.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recoverChannelState } from '../../src/index.ts';
import { channelKey } from '../../src/services/channel.ts';
import {
  compareChannelFiles,
  expectedSubtasks,
  listFlinkFixtures,
} from '../helpers/flink-expected.ts';
import { startFileServer, type FileServer } from '../helpers/http-file-server.ts';
import { listSpill } from '../helpers/spill-root.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import { runRecover } from '../e2e/harness.ts';
import { mkdir, writeFile } from 'node:fs/promises';

// Fixtures whose channel state is not behind absolute paths of the machine that wrote them.
const fixtures = listFlinkFixtures().filter((f) => f.variant === 'file' || f.variant === 'inline');

describe.skipIf(fixtures.length === 0)('a Flink checkpoint over http recovers identically', () => {
  let server: FileServer;
  beforeAll(async () => {
    server = await startFileServer(join(fixtures[0]!.dir, '..'));
  });
  afterAll(async () => {
    await server?.stop();
  });

  for (const f of fixtures) {
    const subtasks = expectedSubtasks(f.expected);
    it(`${f.name}: every operator/subtask through the library, input and output side, equals Flink's bytes`, async () => {
      const rel = f.checkpoint.slice(join(f.dir, '..').length + 1);
      const url = `${server.url}/${rel}/_metadata`;
      for (const s of subtasks) {
        const root = await makeTempRoot();
        const out = join(root, 'out');
        await mkdir(out);
        for (const outputState of [false, true]) {
          const parts = new Map<string, Buffer[]>();
          const recovery = recoverChannelState({
            checkpoint: url,
            spillRoot: root,
            flink: { operator: s.operator, subtask: s.subtask, outputState },
            channels: (info) => {
              const chunks: Buffer[] = [];
              const name = outputState
                ? `partition-${info.gate}-subpartition-${info.channel}`
                : channelKey(info);
              parts.set(name, chunks);
              return {
                onBuffer: (b) => void chunks.push(Buffer.from(b)),
                onFinished: () => undefined,
              };
            },
          });
          await recovery.done;
          for (const [name, chunks] of parts) {
            await writeFile(join(out, `${name}.bin`), Buffer.concat(chunks));
          }
        }
        expect(await compareChannelFiles(s.dir, out, { input: true, output: true })).toEqual([]);
        expect(listSpill(root)).toEqual({ taskDirs: [], spillFiles: [] });
      }
    }, 120_000);
  }

  it('the CLI recovers an http:// chk-N dir URL as it recovers the local copy', async () => {
    const f = fixtures[0]!;
    const s = expectedSubtasks(f.expected).find((x) => x.inputFiles.length > 0)!;
    const rel = f.checkpoint.slice(join(f.dir, '..').length + 1);
    const root = await makeTempRoot();
    const out = join(root, 'out');
    const run = await runRecover(`${server.url}/${rel}/`, out, root, [
      '--operator',
      s.operator,
      '--subtask',
      String(s.subtask),
      '--output-state',
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(await compareChannelFiles(s.dir, out, { input: true, output: true })).toEqual([]);
    expect(listSpill(root)).toEqual({ taskDirs: [], spillFiles: [] });
  }, 60_000);
});
