/**
 * G10 safe outputs, through the real CLI: `recover` never writes through a link it finds in
 * the output dir, never clobbers a channel file unless told to, and a failed or cancelled run
 * leaves the dir exactly as it found it; a `kill -9` leaves a staging dir that the next
 * recovery into the same dir removes. Plus the inputs that are not usable (exit 2), a closed
 * stdout (no stack, the result stands), and real read-only and full file systems (exit 1,
 * naming the errno).
 */
import { execFileSync, spawn } from 'node:child_process';
import {
  link,
  lstat,
  mkdir,
  readFile,
  readdir,
  readlink,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { makeCheckpoint } from '../../src/services/formats/spwc/generator.ts';
import { channelBytes, suiteCheckpoint, vector } from '../helpers/checkpoints.ts';
import { waitFor } from '../helpers/processes.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import {
  expectByteExact,
  lines,
  listTree,
  runCli,
  spawnCli,
  spillLeftovers,
  spillwayBin,
} from './harness.ts';

const small = suiteCheckpoint((dir) =>
  makeCheckpoint({ out: join(dir, 'small.spwc'), gates: 1, channels: 2, mb: 1, seed: 5 }),
);
/** Big enough that a signal lands mid-drain. */
const big = suiteCheckpoint((dir) =>
  makeCheckpoint({ out: join(dir, 'big.spwc'), gates: 1, channels: 2, mb: 128, seed: 6 }),
);

/** A dir's entries with what each one is and holds: to prove it was left exactly as it was. */
async function snapshotDir(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of (await readdir(dir)).sort()) {
    const p = join(dir, name);
    const st = await lstat(p);
    out[name] = st.isSymbolicLink()
      ? `link → ${await readlink(p)}`
      : `ino ${st.ino} nlink ${st.nlink} ${(await readFile(p)).toString('hex')}`;
  }
  return out;
}

async function setup() {
  const dir = await makeTempRoot();
  const root = join(dir, 'root');
  const out = join(dir, 'out');
  const outside = join(dir, 'outside.txt');
  await mkdir(root);
  await mkdir(out);
  await writeFile(outside, 'precious, outside the output dir');
  return { dir, root, out, outside };
}

const recover = (checkpoint: string, out: string, root: string, ...extra: string[]) =>
  runCli(['recover', checkpoint, '--out', out, '--spill-root', root, ...extra]);

describe('G10 safe outputs', () => {
  it('G10 a planted symlink named like a channel file is refused, its target untouched', async () => {
    const { root, out, outside } = await setup();
    await symlink(outside, join(out, 'gate-0-channel-0.bin'));
    const before = await snapshotDir(out);
    const run = await recover(small.path, out, root);
    expect(run.code).toBe(2);
    expect(lines(run.stderr)).toEqual([
      `spillway recover: ${out}: gate-0-channel-0.bin already exists (pass --overwrite to replace it)`,
    ]);
    expect(await readFile(outside, 'utf8')).toBe('precious, outside the output dir');
    expect(await snapshotDir(out)).toEqual(before);
    expect(await spillLeftovers(root)).toEqual([]);
  });

  it('G10 with --overwrite a planted symlink is replaced, never followed', async () => {
    const { root, out, outside } = await setup();
    await symlink(outside, join(out, 'gate-0-channel-0.bin'));
    const run = await recover(small.path, out, root, '--overwrite');
    expect(run.code, run.stderr).toBe(0);
    expect(await readFile(outside, 'utf8')).toBe('precious, outside the output dir');
    expect((await lstat(join(out, 'gate-0-channel-0.bin'))).isSymbolicLink()).toBe(false);
    await expectByteExact(out, await channelBytes(small.path));
    expect(await spillLeftovers(root)).toEqual([]);
  });

  it('G10 a planted hard link is refused, and with --overwrite replaced; the other link keeps its bytes', async () => {
    const { root, out, outside } = await setup();
    await link(outside, join(out, 'gate-0-channel-1.bin'));
    const refused = await recover(small.path, out, root);
    expect(refused.code).toBe(2);
    expect(await readFile(outside, 'utf8')).toBe('precious, outside the output dir');
    const run = await recover(small.path, out, root, '--overwrite');
    expect(run.code, run.stderr).toBe(0);
    expect(await readFile(outside, 'utf8')).toBe('precious, outside the output dir');
    expect((await stat(outside)).nlink).toBe(1);
    await expectByteExact(out, await channelBytes(small.path));
  });

  it('G10 an existing channel file is not clobbered without --overwrite (one line naming it)', async () => {
    const { root, out } = await setup();
    await writeFile(join(out, 'gate-0-channel-1.bin'), 'an earlier run');
    await writeFile(join(out, 'notes.txt'), 'the user’s own');
    const before = await snapshotDir(out);
    const run = await recover(small.path, out, root);
    expect(run.code).toBe(2);
    expect(lines(run.stderr)).toHaveLength(1);
    expect(run.stderr).toContain('gate-0-channel-1.bin already exists');
    expect(await snapshotDir(out)).toEqual(before);
  });

  it('G10 a cancelled --overwrite run leaves the dir byte-identical, links and all', async () => {
    const { root, out, outside } = await setup();
    await writeFile(join(out, 'gate-0-channel-0.bin'), 'an earlier run');
    await symlink(outside, join(out, 'gate-0-channel-1.bin'));
    await writeFile(join(out, 'notes.txt'), 'the user’s own');
    const before = await snapshotDir(out);
    const child = spawnCli([
      'recover',
      big.path,
      '--out',
      out,
      '--spill-root',
      root,
      '--overwrite',
    ]);
    await waitFor(
      'a channel file in the staging dir',
      async () => (await listTree(out)).find((p) => /^\.spillway-staging-[^/]+\/gate-/.test(p)),
      { child },
    );
    child.proc.kill('SIGTERM');
    const { code } = await child.exited;
    expect(code, child.stderr).toBe(143);
    expect(await snapshotDir(out)).toEqual(before);
    expect(await readFile(outside, 'utf8')).toBe('precious, outside the output dir');
    expect(await spillLeftovers(root)).toEqual([]);
  });

  it('G10 a failed --overwrite run (a corrupt checkpoint) leaves the dir byte-identical', async () => {
    const { root, out } = await setup();
    await writeFile(join(out, 'gate-0-channel-1.bin'), 'an earlier run');
    const before = await snapshotDir(out);
    const run = await recover(vector('corrupt-crc-mismatch.spwc'), out, root, '--overwrite');
    expect(run.code).toBe(2);
    expect(await snapshotDir(out)).toEqual(before);
    expect(await spillLeftovers(root)).toEqual([]);
  });

  it('G10 channel files of an earlier run that this checkpoint does not name are kept, and said', async () => {
    const { root, out } = await setup();
    await writeFile(join(out, 'gate-9-channel-9.bin'), 'stale');
    const run = await recover(small.path, out, root, '--overwrite', '--json');
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ staleFiles: ['gate-9-channel-9.bin'] });
    expect(run.stderr).toContain('also holds 1 channel file(s) this checkpoint does not name');
    expect(await readFile(join(out, 'gate-9-channel-9.bin'), 'utf8')).toBe('stale');
  });

  it('G7 G10 kill -9 leaves a staging dir; the next recover into that dir removes it', async () => {
    const { root, out } = await setup();
    const child = spawnCli(['recover', big.path, '--out', out, '--spill-root', root]);
    await waitFor(
      'a channel file in the staging dir',
      async () => (await listTree(out)).find((p) => /^\.spillway-staging-[^/]+\/gate-/.test(p)),
      { child },
    );
    child.proc.kill('SIGKILL');
    await child.exited;
    expect((await readdir(out)).filter((n) => n.startsWith('.spillway-staging-'))).toHaveLength(1);
    const run = await recover(small.path, out, root);
    expect(run.code, run.stderr).toBe(0);
    await expectByteExact(out, await channelBytes(small.path));
    expect(await spillLeftovers(root)).toEqual([]);
  });
});

describe('inputs that are not usable are bad input (exit 2, one line)', () => {
  const cases: [string, (dir: string) => Promise<string>, RegExp][] = [
    [
      'a symlink loop as the checkpoint',
      async (d) => {
        await symlink(join(d, 'b'), join(d, 'a'));
        await symlink(join(d, 'a'), join(d, 'b'));
        return join(d, 'a');
      },
      /a symlink loop, not a checkpoint file/,
    ],
    [
      'a dangling link as the checkpoint',
      async (d) => {
        await symlink(join(d, 'gone'), join(d, 'dangling'));
        return join(d, 'dangling');
      },
      /a dangling symlink, not a checkpoint file/,
    ],
    [
      'a FIFO with no writer as the checkpoint (opening it does not block)',
      async (d) => {
        execFileSync('mkfifo', [join(d, 'fifo')]);
        return join(d, 'fifo');
      },
      /is a FIFO, not a checkpoint file/,
    ],
    ['a device as the checkpoint', async () => '/dev/zero', /is a device, not a checkpoint file/],
  ];
  for (const [what, make, message] of cases) {
    it(`G9 ${what}`, async () => {
      const { dir, root, out } = await setup();
      const run = await recover(await make(dir), out, root);
      expect(run.code).toBe(2);
      expect(lines(run.stderr)).toHaveLength(1);
      expect(run.stderr).toMatch(message);
      expect(await readdir(out)).toEqual([]);
    });
  }

  it('G9 a symlink loop or a dangling link as --out', async () => {
    const { dir, root } = await setup();
    await symlink(join(dir, 'l2'), join(dir, 'l1'));
    await symlink(join(dir, 'l1'), join(dir, 'l2'));
    await symlink(join(dir, 'nowhere'), join(dir, 'dangling'));
    const loop = await recover(small.path, join(dir, 'l1'), root);
    expect(loop.code).toBe(2);
    expect(loop.stderr).toMatch(/is a symlink loop/);
    const dangling = await recover(small.path, join(dir, 'dangling'), root);
    expect(dangling.code).toBe(2);
    expect(dangling.stderr).toMatch(/is a dangling symlink/);
    expect(await lstat(join(dir, 'nowhere')).catch(() => 'absent')).toBe('absent');
  });
});

describe('a closed stdout', () => {
  for (const reader of ['head -c1', 'true']) {
    it(`\`recover --json | ${reader}\` ends quietly with exit 0 and the outputs complete`, async () => {
      const { root, out } = await setup();
      const script = `"$0" recover "$1" --out "$2" --spill-root "$3" --json | ${reader} > /dev/null; echo "spillway=\${PIPESTATUS[0]}" >&2`;
      const proc = spawn('bash', ['-c', script, spillwayBin, small.path, out, root], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      await new Promise((resolve) => proc.on('close', resolve));
      expect(stderr).toMatch(/spillway=0\s*$/);
      expect(stderr).not.toMatch(/EPIPE|Unhandled|    at /);
      await expectByteExact(out, await channelBytes(small.path));
      expect(await spillLeftovers(root)).toEqual([]);
    });
  }
});

/** A small tmpfs of our own, or the reason there is none (not root, no mount). */
function tryMountTmpfs(dir: string, options: string): string | undefined {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', dir], { stdio: 'pipe' });
    return undefined;
  } catch (e) {
    return (e as { stderr?: Buffer }).stderr?.toString().trim() || (e as Error).message;
  }
}
const mounted: string[] = [];
// Before the temp dirs holding them are removed (that is an afterEach too, registered earlier).
afterEach(() => {
  while (mounted.length > 0) execFileSync('umount', ['-l', mounted.pop()!], { stdio: 'ignore' });
});

/**
 * `dir/name` with a tmpfs of `options` mounted on it for this test (unmounted after it), or the
 * test skipped with the printed reason where mounting is refused.
 */
async function mountedTmpfs(
  ctx: { skip(): void },
  dir: string,
  name: string,
  options: string,
  test: string,
): Promise<string> {
  const path = join(dir, name);
  await mkdir(path);
  const refused = tryMountTmpfs(path, options);
  if (refused !== undefined) {
    console.warn(`skipping the ${test} test: cannot mount a tmpfs here (${refused})`);
    ctx.skip();
  }
  mounted.push(path);
  return path;
}

describe('real read-only and full file systems', () => {
  it('an --out on a read-only file system is exit 1 naming EROFS, and nothing is left', async (ctx) => {
    const { dir, root } = await setup();
    const ro = await mountedTmpfs(ctx, dir, 'ro', 'size=1m,ro', 'read-only');
    const run = await recover(small.path, join(ro, 'out'), root);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/EROFS/);
    expect(run.stderr).not.toMatch(/ENOENT|    at /);
    expect(await spillLeftovers(root)).toEqual([]);
  });

  it('a full spill file system is exit 1 naming ENOSPC, and the spill root is left empty', async (ctx) => {
    const { dir, out } = await setup();
    const full = await mountedTmpfs(ctx, dir, 'full', 'size=8m,mode=0700', 'full-disk');
    const run = await recover(big.path, out, full);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/ENOSPC/);
    expect(run.stderr).not.toMatch(/    at /);
    expect(await spillLeftovers(full)).toEqual([]);
    expect(await readdir(out)).toEqual([]);
  });

  it('ENOSPC creating the owner dir is exit 1 naming ENOSPC, not bad input', async (ctx) => {
    const { dir, out } = await setup();
    // nr_inodes=2: the root inode and `spillway/`; the owner dir has no inode left.
    const tiny = await mountedTmpfs(
      ctx,
      dir,
      'tiny',
      'size=1m,nr_inodes=2,mode=0700',
      'inode-exhaustion',
    );
    const run = await recover(small.path, out, tiny);
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toMatch(/ENOSPC/);
  });
});
