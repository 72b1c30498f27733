/**
 * G9 for Flink channel state: a real Flink checkpoint (a committed fixture, copied) with its
 * channel-state files made hostile — truncated at every structure, a bad header version,
 * negative and huge entry lengths, offsets past the end, a relative path that leaves the
 * checkpoint dir, a symlink that leads out — is exit 2 with one line naming the file (and the
 * byte, where there is one), the spill root empty and --out untouched. Absolute paths outside the
 * job dir are refused naming the path and the flag that would allow them.
 */
import { cp, mkdir, readFile, rm, stat, symlink, truncate, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { readFlinkMetadata } from '../../src/services/formats/flink/metadata.ts';
import type { FlinkChannelHandle } from '../../src/services/formats/flink/metadata-types.ts';
import { FlinkPaths } from '../../src/services/formats/flink/paths.ts';
import { readDelegateEntries } from '../../src/services/formats/flink/channel-state.ts';
import { CheckpointPathError, CorruptCheckpointError } from '../../src/services/errors.ts';
import { expectCorruptAt, lines, runRecover, type Finished } from '../e2e/harness.ts';
import { listFlinkFixtures, type FlinkFixture } from '../helpers/flink-expected.ts';
import { listSpill } from '../helpers/spill-root.ts';
import { makeTempRoot } from '../helpers/temp.ts';

// A fixture whose keyed operator reads its channel state from files (not inline).
const fixture: FlinkFixture | undefined = listFlinkFixtures().find(
  (f) => f.variant === 'file' && f.flink.startsWith('1.'),
);

interface Copy {
  root: string;
  checkpoint: string;
  /** The channel-state file of the keyed operator's subtask 0 and its handles in it. */
  file: string;
  handles: FlinkChannelHandle[];
  metadata: string;
}

/** Copies the fixture's job dir into a fresh temp root and finds subtask 0's state file. */
async function copyFixture(f: FlinkFixture): Promise<Copy> {
  const root = await makeTempRoot();
  const job = join(root, 'job');
  await cp(f.jobDir, job, { recursive: true });
  const checkpoint = join(job, f.checkpoint.slice(f.jobDir.length + 1));
  const meta = await readFlinkMetadata(checkpoint);
  const op = meta.operators.find((o) => o.id === f.keyedOperator)!;
  const handles = op.subtasks.find((s) => s.index === 0)!.inputChannels;
  const delegate = handles[0]!.delegate;
  if (delegate.kind !== 'relative')
    throw new Error(`expected a relative handle, got ${delegate.kind}`);
  const file = join(checkpoint, delegate.relativePath);
  const mine = handles.filter(
    (h) => h.delegate.kind === 'relative' && h.delegate.relativePath === delegate.relativePath,
  );
  return { root, checkpoint, file, handles: mine, metadata: meta.location };
}

function recover(c: Copy, f: FlinkFixture, extra: string[] = []): Promise<Finished> {
  return runRecover(c.checkpoint, join(c.root, 'out'), c.root, [
    '--operator',
    f.keyedOperator,
    '--subtask',
    '0',
    ...extra,
  ]);
}

/** Nothing of the run is left: no spill file, no task dir, no --out dir. */
function expectNothingLeft(c: Copy): void {
  expect(listSpill(c.root)).toEqual({ taskDirs: [], spillFiles: [] });
  expect(existsSync(join(c.root, 'out'))).toBe(false);
}

describe.skipIf(fixture === undefined)('G9 hostile Flink channel-state files', () => {
  if (fixture === undefined) console.log('no Flink 1.x file fixture committed: skipped');
  const f = fixture!;
  let firstOffset = 0;
  let size = 0;

  beforeAll(async () => {
    if (fixture === undefined) return;
    const c = await copyFixture(f);
    firstOffset = Math.min(...c.handles.flatMap((h) => h.offsets));
    size = (await stat(c.file)).size;
  });

  it('truncated inside the header, inside an entry length, inside a payload, one byte short: exit 2 naming the file and where it ends', async () => {
    for (const cut of [2, firstOffset + 2, firstOffset + 7, size - 1]) {
      const c = await copyFixture(f);
      await truncate(c.file, cut);
      const run = await recover(c, f);
      expectCorruptAt(run, c.file, cut, /the file has \d+ bytes/);
      expectNothingLeft(c);
      await rm(c.root, { recursive: true, force: true });
    }
  }, 120_000);

  it('a header version other than 0 is exit 2 at byte 0', async () => {
    const c = await copyFixture(f);
    const bytes = await readFile(c.file);
    bytes.writeInt32BE(1, 0);
    await writeFile(c.file, bytes);
    expectCorruptAt(await recover(c, f), c.file, 0, /serialization version 1/);
    expectNothingLeft(c);
  }, 60_000);

  it('a negative entry length is exit 2 at that entry', async () => {
    const c = await copyFixture(f);
    const bytes = await readFile(c.file);
    bytes.writeInt32BE(-7, firstOffset);
    await writeFile(c.file, bytes);
    expectCorruptAt(await recover(c, f), c.file, firstOffset, /negative entry length -7/);
    expectNothingLeft(c);
  }, 60_000);

  it('a huge entry length (past the end) is exit 2 at that entry, nothing allocated for it', async () => {
    const c = await copyFixture(f);
    const bytes = await readFile(c.file);
    bytes.writeInt32BE(0x7fffffff, firstOffset);
    await writeFile(c.file, bytes);
    expectCorruptAt(await recover(c, f), c.file, firstOffset, /runs past the end/);
    expectNothingLeft(c);
  }, 60_000);

  it('an entry longer than its handle declares (into the next entry) is exit 2', async () => {
    const c = await copyFixture(f);
    const bytes = await readFile(c.file);
    const length = bytes.readInt32BE(firstOffset);
    bytes.writeInt32BE(length + 4, firstOffset);
    await writeFile(c.file, bytes);
    const run = await recover(c, f);
    expect(run.code, run.stderr).toBe(2);
    expect(lines(run.stderr)).toHaveLength(1);
    expect(run.stderr).toMatch(/at byte \d+/);
    expect(run.stderr).toContain(c.file);
    expectNothingLeft(c);
  }, 60_000);

  it('a channel-state file replaced by a symlink that leads out of the checkpoint dir is refused (exit 2 naming it)', async () => {
    const c = await copyFixture(f);
    const outside = join(c.root, 'elsewhere', 'state.bin');
    await mkdir(dirname(outside));
    await cp(c.file, outside);
    await rm(c.file);
    await symlink(outside, c.file);
    const run = await recover(c, f);
    expect(run.code, run.stderr).toBe(2);
    expect(lines(run.stderr)).toHaveLength(1);
    expect(run.stderr).toContain(c.file);
    expect(run.stderr).toMatch(/symlink/);
    expectNothingLeft(c);
  }, 60_000);

  it('a relative path that leaves the checkpoint dir (same length, patched into _metadata) is refused', async () => {
    const c = await copyFixture(f);
    const name = c.file.slice(c.checkpoint.length + 1);
    const meta = await readFile(c.metadata);
    const at = meta.indexOf(Buffer.from(name, 'utf8'));
    expect(at).toBeGreaterThan(0);
    const escaping = `../${name.slice(3)}`;
    meta.write(escaping, at, 'utf8');
    await writeFile(c.metadata, meta);
    // The escape target exists, so only the rule refuses it.
    await cp(c.file, join(dirname(c.checkpoint), name.slice(3)));
    const run = await recover(c, f);
    expect(run.code, run.stderr).toBe(2);
    expect(lines(run.stderr)).toHaveLength(1);
    expect(run.stderr).toContain(escaping);
    expect(run.stderr).toMatch(/leaves the checkpoint's directory/);
    expectNothingLeft(c);
  }, 60_000);

  it('an offset past the end of the stream is refused before any byte is read', async () => {
    const c = await copyFixture(f);
    const handle = { ...c.handles[0]!, offsets: [size + 100] };
    const where = await new FlinkPaths(c.metadata).locate(handle.delegate);
    const error = await readDelegateEntries(where, [{ handle, subtask: 0 }], {
      onEntry: () => {
        throw new Error('no entry may be read');
      },
      onPayload: () => undefined,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CorruptCheckpointError);
    expect((error as CorruptCheckpointError).file).toBe(c.file);
    expect((error as CorruptCheckpointError).message).toMatch(/past the end/);
  });

  it('two handles naming overlapping entries are refused at the second', async () => {
    const c = await copyFixture(f);
    const owner = c.handles.find((h) => h.offsets.includes(firstOffset))!;
    const a = { ...owner, offsets: [firstOffset] };
    const b = { ...owner, offsets: [firstOffset + 2] };
    const where = await new FlinkPaths(c.metadata).locate(a.delegate);
    const error = await readDelegateEntries(
      where,
      [
        { handle: a, subtask: 0 },
        { handle: b, subtask: 0 },
      ],
      { onEntry: () => undefined, onPayload: () => undefined },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CorruptCheckpointError);
    expect((error as CorruptCheckpointError).offset).toBe(firstOffset + 2);
    expect((error as CorruptCheckpointError).message).toMatch(/overlaps/);
  });
});

describe('where Flink channel-state files may be (DESIGN §7)', () => {
  const meta = '/data/ckpt/job-1/chk-7/_metadata';

  it('an absolute path outside the job dir is refused naming the path and --allow-path', async () => {
    const paths = new FlinkPaths(meta);
    const error = await paths
      .locate({ kind: 'file', path: '/etc/passwd', size: 10 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CheckpointPathError);
    expect((error as Error).message).toContain('/etc/passwd');
    expect((error as Error).message).toContain('--allow-path');
    expect((error as Error).message).toContain('--relocate');
  });

  it('a path under the job dir (shared/, taskowned/) is read where it points; file: URIs too', async () => {
    const paths = new FlinkPaths(meta);
    const a = await paths.locate({ kind: 'file', path: '/data/ckpt/job-1/shared/x', size: 10 });
    expect(a.location).toBe('/data/ckpt/job-1/shared/x');
    const b = await paths.locate({
      kind: 'file',
      path: 'file:/data/ckpt/job-1/taskowned/y',
      size: 3,
    });
    expect(b.location).toBe('/data/ckpt/job-1/taskowned/y');
  });

  it('.. segments cannot climb out of the job dir', async () => {
    const error = await new FlinkPaths(meta)
      .locate({ kind: 'file', path: '/data/ckpt/job-1/../other/x', size: 1 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CheckpointPathError);
  });

  it('--allow-path admits a root; --relocate maps s3:// and old local prefixes', async () => {
    const allowed = new FlinkPaths(meta, { allowPaths: ['/mnt/shared'] });
    expect((await allowed.locate({ kind: 'file', path: '/mnt/shared/z', size: 1 })).location).toBe(
      '/mnt/shared/z',
    );
    const moved = new FlinkPaths(meta, {
      relocate: [{ from: 's3://bucket/flink/job-1', to: '/data/ckpt/job-1' }],
    });
    const where = await moved.locate({
      kind: 'file',
      path: 's3://bucket/flink/job-1/shared/abc',
      size: 5,
    });
    expect(where.location).toBe('/data/ckpt/job-1/shared/abc');
  });

  it('an s3:// path not under a remote job dir or a relocation is refused; hdfs:// names --relocate', async () => {
    const paths = new FlinkPaths(meta);
    await expect(
      paths.locate({ kind: 'file', path: 's3://bucket/flink/job-1/shared/abc', size: 5 }),
    ).rejects.toThrow(/--allow-path/);
    await expect(
      paths.locate({ kind: 'file', path: 'hdfs://nn/flink/x', size: 5 }),
    ).rejects.toThrow(/--relocate/);
  });

  it('a relative path with .. or an absolute relative path is refused', async () => {
    const paths = new FlinkPaths(meta);
    for (const relativePath of ['../x', 'a/../../x', '/etc/passwd']) {
      await expect(paths.locate({ kind: 'relative', relativePath, size: 1 })).rejects.toThrow(
        /leaves the checkpoint's directory/,
      );
    }
  });
});
