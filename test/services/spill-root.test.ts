import { existsSync, readFileSync } from 'node:fs';
import {
  chmod,
  chown,
  lstat,
  mkdir,
  readdir,
  readFile,
  rm,
  stat,
  symlink,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { seam } from '../helpers/fault-seam.ts';
import { currentOwner, type OwnerMarker } from '../../src/services/spill-root/identity.ts';
import { isOwnerAlive } from '../../src/services/spill-root/liveness.ts';
import { resolveSpillRoot, SpillRoot } from '../../src/services/spill-root/spill-root.ts';
import { SpillRootError } from '../../src/services/errors.ts';
import { sweepSpillRoot, type SweepReport } from '../../src/services/spill-root/sweep.ts';
import {
  boot8,
  bootId,
  deadPid,
  nextMessage,
  repoRoot,
  spawnFixture,
  spawnTracked,
  type Child,
} from '../helpers/processes.ts';
import { makeTempRoot } from '../helpers/temp.ts';

const OTHER_BOOT = 'ffffffff-0000-4000-8000-000000000000';

const opened: SpillRoot[] = [];

afterEach(async () => {
  seam.resetFsSeam();
  while (opened.length > 0) await opened.pop()!.close();
});

async function open(
  root: string,
  options?: Parameters<typeof SpillRoot.open>[1],
): Promise<SpillRoot> {
  const spill = await SpillRoot.open(root, options);
  opened.push(spill);
  return spill;
}

function mode(st: { mode: number }): number {
  return st.mode & 0o777;
}

interface Planted {
  pid: number;
  bootId?: string;
  startTicks: number;
  pidNamespace?: number;
  /** Replaces the JSON marker: raw text, 'none' (no owner.json) or 'dir' (owner.json is a dir). */
  marker?: string;
  /** Backdates the owner dir past the 10-minute grace for marker-less dirs. */
  old?: boolean;
}

/** Plants an owner dir as another Spillway process would have left it, with a spill file. */
async function plantOwner(root: string, p: Planted): Promise<string> {
  const spillway = join(root, 'spillway');
  await mkdir(spillway, { mode: 0o700, recursive: true });
  const b = p.bootId ?? bootId;
  const dir = join(spillway, `owner-${b.replace(/-/g, '').slice(0, 8)}-${p.pid}-${p.startTicks}`);
  await mkdir(join(dir, 'task-1-abcdef'), { recursive: true, mode: 0o700 });
  await writeFile(join(dir, 'task-1-abcdef', 'spill-segment-0.bin'), Buffer.alloc(1024, 1));
  const marker = join(dir, 'owner.json');
  if (p.marker === 'dir') await mkdir(marker);
  else if (p.marker !== 'none') {
    const m: OwnerMarker = {
      pid: p.pid,
      bootId: b,
      startTicks: p.startTicks,
      version: '0.0.1',
      createdAt: new Date().toISOString(),
      ...(p.pidNamespace !== undefined ? { pidNamespace: p.pidNamespace } : {}),
    };
    await writeFile(marker, p.marker ?? JSON.stringify(m));
  }
  if (p.old) {
    const past = new Date(Date.now() - 3600_000);
    await utimes(dir, past, past);
  }
  return dir;
}

/** Runs test/fixtures/spill-root-child.ts (the real SpillRoot in a child) in `mode`. */
function spillRootChild(mode: string, root: string): Child {
  return spawnFixture('spill-root-child.ts', [mode, root]);
}

/**
 * A child that is not Spillway: it computes its own identity from /proc, as the issue
 * describes, plants its owner dir with a spill file and sleeps.
 */
const IDENTITY_CHILD = `
const fs = require('fs'), path = require('path');
const boot = fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
const stat = fs.readFileSync('/proc/self/stat', 'utf8');
const startTicks = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
const pidNamespace = fs.statSync('/proc/self/ns/pid').ino;
const dir = path.join(process.argv[1], 'spillway',
  'owner-' + boot.replace(/-/g, '').slice(0, 8) + '-' + process.pid + '-' + startTicks);
fs.mkdirSync(path.join(dir, 'task-9-123456'), { recursive: true, mode: 0o700 });
fs.writeFileSync(path.join(dir, 'task-9-123456', 'spill-segment-0.bin'), Buffer.alloc(4096));
fs.writeFileSync(path.join(dir, 'owner.json'), JSON.stringify({ pid: process.pid, bootId: boot,
  startTicks, pidNamespace, version: 'child', createdAt: new Date().toISOString() }));
console.log(JSON.stringify({ dir, pid: process.pid, startTicks }));
setInterval(() => {}, 1 << 30);
`;

async function identityChild(
  root: string,
): Promise<{ child: Child; dir: string; pid: number; startTicks: number }> {
  const child = spawnTracked(process.execPath, ['-e', IDENTITY_CHILD, root]);
  const line = await nextMessage<{ dir: string; pid: number; startTicks: number }>(child);
  return { child, ...line };
}

async function sweepQuiet(root: string): Promise<{ report: SweepReport; lines: string[] }> {
  const lines: string[] = [];
  const report = await sweepSpillRoot(root, { log: (l) => lines.push(l) });
  return { report, lines };
}

describe('SpillRoot.open', () => {
  it('G7 creates <root>/spillway and the owner dir with mode 0700 and a 0600 owner.json', async () => {
    const root = await makeTempRoot();
    const spill = await open(root);
    const me = currentOwner();
    expect(spill.root).toBe(root);
    expect(spill.ownerDir).toBe(
      join(root, 'spillway', `owner-${boot8}-${process.pid}-${me.startTicks}`),
    );
    expect(mode(await stat(join(root, 'spillway')))).toBe(0o700);
    expect(mode(await stat(spill.ownerDir))).toBe(0o700);
    expect(mode(await stat(join(spill.ownerDir, 'owner.json')))).toBe(0o600);
    // The atomic write leaves no temp file behind.
    expect(await readdir(spill.ownerDir)).toEqual(['owner.json']);
  });

  it('G7 owner.json names this process: pid, boot id, /proc start time, version, creation time', async () => {
    const root = await makeTempRoot();
    const spill = await open(root);
    const marker = JSON.parse(
      await readFile(join(spill.ownerDir, 'owner.json'), 'utf8'),
    ) as OwnerMarker;
    const procStat = readFileSync('/proc/self/stat', 'utf8');
    const ticks = Number(procStat.slice(procStat.lastIndexOf(')') + 2).split(' ')[19]);
    const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
      version: string;
    };
    expect(marker).toMatchObject({
      pid: process.pid,
      bootId,
      startTicks: ticks,
      version: pkg.version,
    });
    expect(Number.isNaN(Date.parse(marker.createdAt))).toBe(false);
    expect(currentOwner()).toMatchObject({ pid: process.pid, bootId, startTicks: ticks });
    expect(isOwnerAlive(marker)).toBe(true);
  });

  it('G7 one instance per spill root, also when reached through another path', async () => {
    const parent = await makeTempRoot();
    const root = join(parent, 'root');
    await mkdir(root);
    const via = join(await makeTempRoot(), 'via');
    await symlink(parent, via);
    const [a, b] = await Promise.all([open(root), open(root)]);
    expect(a).toBe(b);
    expect(await open(`${root}/./`)).toBe(a);
    // Through a symlinked parent: the root itself is still a real dir, and the same one.
    expect(await open(join(via, 'root'))).toBe(a);
  });

  it('G7 a spill root deleted behind its back and made anew gets a fresh owner dir', async () => {
    const parent = await makeTempRoot();
    const root = join(parent, 'root');
    await mkdir(root);
    const first = await open(root);
    // Deleted without close(); a new dir at the same path may reuse the inode.
    await rm(root, { recursive: true, force: true });
    await mkdir(root);
    const second = await open(root);
    expect((await stat(second.ownerDir)).isDirectory()).toBe(true);
    expect(second.taskDirPath('t').startsWith(second.ownerDir)).toBe(true);
    await second.close();
    if (first !== second) await first.close().catch(() => undefined);
  });

  it('G7 close removes the owner dir with its task dirs, is idempotent and drops the instance', async () => {
    const root = await makeTempRoot();
    const spill = await open(root);
    const taskDir = spill.taskDirPath('t1');
    await mkdir(taskDir, { mode: 0o700 });
    await writeFile(join(taskDir, 'spill-segment-0.bin'), 'x');
    await spill.close();
    expect(existsSync(spill.ownerDir)).toBe(false);
    await spill.close();
    expect(() => spill.taskDirPath('t2')).toThrow(/closed/);
    const again = await open(root);
    expect(again).not.toBe(spill);
    expect(existsSync(again.ownerDir)).toBe(true);
  });

  it('G7 taskDirPath gives a fresh, uncreated path that stays inside the owner dir', async () => {
    const root = await makeTempRoot();
    const spill = await open(root);
    const a = spill.taskDirPath('7');
    const b = spill.taskDirPath('7');
    expect(a).not.toBe(b);
    expect(a).toMatch(new RegExp(`^${spill.ownerDir}/task-7-[0-9a-f]{6}$`));
    expect(existsSync(a)).toBe(false);
    const hostile = spill.taskDirPath('../../etc/x');
    expect(hostile.startsWith(`${spill.ownerDir}/task-`)).toBe(true);
    expect(hostile.slice(spill.ownerDir.length + 1)).not.toContain('/');
  });

  it('G7 the start-up sweep runs on open and its report is kept; sweep: false skips it', async () => {
    const root = await makeTempRoot();
    const dead = await plantOwner(root, { pid: deadPid(), startTicks: 1 });
    const lines: string[] = [];
    const spill = await open(root, { sweep: false });
    expect(spill.lastSweep).toBeUndefined();
    expect(existsSync(dead)).toBe(true);
    await spill.close();
    const next = await open(root, { log: (l) => lines.push(l) });
    expect(next.lastSweep).toEqual({ swept: [dead], kept: [], errors: [] });
    expect(existsSync(dead)).toBe(false);
    expect(lines.join('\n')).toContain(`swept ${dead}`);
  });

  it('G7 a spill root that is a symlink is refused', async () => {
    const real = await makeTempRoot();
    const link = join(await makeTempRoot(), 'link');
    await symlink(real, link);
    await expect(SpillRoot.open(link)).rejects.toThrow(SpillRootError);
    await expect(SpillRoot.open(link)).rejects.toThrow(/is a symlink/);
    await expect(sweepSpillRoot(link)).rejects.toThrow(/is a symlink/);
    expect(existsSync(join(real, 'spillway'))).toBe(false);
  });

  it('G7 a world-writable spill root without the sticky bit is refused; with it (like /tmp) it is accepted', async () => {
    const root = await makeTempRoot();
    await chmod(root, 0o777);
    await expect(SpillRoot.open(root)).rejects.toThrow(/world-writable without the sticky bit/);
    await expect(sweepSpillRoot(root)).rejects.toThrow(SpillRootError);
    expect(existsSync(join(root, 'spillway'))).toBe(false);
    await chmod(root, 0o1777);
    const spill = await open(root);
    expect(mode(await stat(spill.ownerDir))).toBe(0o700);
  });

  it('G7 a missing spill root, or a <root>/spillway that is a symlink, is refused', async () => {
    const root = await makeTempRoot();
    await expect(SpillRoot.open(join(root, 'nope'))).rejects.toThrow(/does not exist/);
    const elsewhere = await makeTempRoot();
    await symlink(elsewhere, join(root, 'spillway'));
    await expect(SpillRoot.open(root)).rejects.toThrow(/spillway is a symlink/);
    await expect(sweepSpillRoot(root)).rejects.toThrow(/spillway is a symlink/);
    expect(await readdir(elsewhere)).toEqual([]);
  });

  it.runIf(process.getuid?.() === 0)(
    'G7 a <root>/spillway owned by another user is refused',
    async () => {
      const root = await makeTempRoot();
      await mkdir(join(root, 'spillway'), { mode: 0o700 });
      await chown(join(root, 'spillway'), 12345, 12345);
      await expect(SpillRoot.open(root)).rejects.toThrow(/belongs to uid 12345/);
    },
  );

  it('G7 a failed owner.json write leaves no owner dir behind', async () => {
    const root = await makeTempRoot();
    seam.injectFault({ op: 'writeFile', code: 'ENOSPC', pathIncludes: 'owner.json' });
    await expect(SpillRoot.open(root)).rejects.toThrow(/ENOSPC/);
    expect(await readdir(join(root, 'spillway'))).toEqual([]);
    seam.resetFsSeam();
    const spill = await open(root);
    expect(existsSync(join(spill.ownerDir, 'owner.json'))).toBe(true);
  });
});

describe('resolveSpillRoot', () => {
  it('G7 takes --spill-root, then SPILLWAY_SPILL_ROOT, then the OS temp dir', async () => {
    const saved = process.env.SPILLWAY_SPILL_ROOT;
    try {
      process.env.SPILLWAY_SPILL_ROOT = '/var/spill-env';
      expect(resolveSpillRoot('/x/explicit')).toBe('/x/explicit');
      expect(resolveSpillRoot()).toBe('/var/spill-env');
      delete process.env.SPILLWAY_SPILL_ROOT;
      const { tmpdir } = await import('node:os');
      expect(resolveSpillRoot()).toBe(tmpdir());
    } finally {
      if (saved === undefined) delete process.env.SPILLWAY_SPILL_ROOT;
      else process.env.SPILLWAY_SPILL_ROOT = saved;
    }
  });
});

describe('the sweep', () => {
  it("G7 a kill -9'd owner is swept by the next start", async () => {
    const root = await makeTempRoot();
    const { child, dir } = await identityChild(root);
    // While it runs, its files are never touched.
    expect((await sweepQuiet(root)).report.kept).toEqual([dir]);
    child.proc.kill('SIGKILL');
    expect((await child.exited).signal).toBe('SIGKILL');
    expect(existsSync(dir)).toBe(true);
    const spill = await open(root, { log: () => {} });
    expect(spill.lastSweep).toEqual({ swept: [dir], kept: [], errors: [] });
    expect(existsSync(dir)).toBe(false);
  });

  it("G7 a kill -9'd Spillway process's owner dir and spill files are swept by the next start", async () => {
    const root = await makeTempRoot();
    const child = spillRootChild('hang', root);
    const { ownerDir, taskDir } = await nextMessage<{ ownerDir: string; taskDir: string }>(child);
    expect(existsSync(join(taskDir, 'spill-segment-0.bin'))).toBe(true);
    child.proc.kill('SIGKILL');
    await child.exited;
    expect(existsSync(ownerDir)).toBe(true);
    const spill = await open(root, { log: () => {} });
    expect(spill.lastSweep?.swept).toEqual([ownerDir]);
    expect(await readdir(join(root, 'spillway'))).toEqual([spill.ownerDir.split('/').pop()]);
  });

  it("G7 a live child's owner dir is kept", async () => {
    const root = await makeTempRoot();
    const { dir } = await identityChild(root);
    const { report, lines } = await sweepQuiet(root);
    expect(report).toEqual({ swept: [], kept: [dir], errors: [] });
    expect(lines.join('\n')).toMatch(/still runs/);
    expect(existsSync(join(dir, 'task-9-123456', 'spill-segment-0.bin'))).toBe(true);
  });

  it("G7 this process's own identity is kept", async () => {
    const root = await makeTempRoot();
    const me = currentOwner();
    const dir = await plantOwner(root, { pid: me.pid, startTicks: me.startTicks });
    expect((await sweepQuiet(root)).report).toEqual({ swept: [], kept: [dir], errors: [] });
    expect(existsSync(dir)).toBe(true);
  });

  it("G7 pid reuse: this process's pid with another start time is swept", async () => {
    const root = await makeTempRoot();
    const me = currentOwner();
    const dir = await plantOwner(root, { pid: me.pid, startTicks: me.startTicks + 1 });
    const { report, lines } = await sweepQuiet(root);
    expect(report).toEqual({ swept: [dir], kept: [], errors: [] });
    expect(lines.join('\n')).toMatch(/pid reused/);
    expect(isOwnerAlive({ ...me, startTicks: me.startTicks + 1 })).toBe(false);
  });

  it("G7 pid reuse: a sleeping child's pid with another start time is swept, the child's own dir kept", async () => {
    const root = await makeTempRoot();
    const { dir, pid, startTicks } = await identityChild(root);
    const stale = await plantOwner(root, { pid, startTicks: startTicks - 1 });
    const { report } = await sweepQuiet(root);
    expect(report.swept).toEqual([stale]);
    expect(report.kept).toEqual([dir]);
    expect(report.errors).toEqual([]);
  });

  it('G7 an owner from another boot is swept', async () => {
    const root = await makeTempRoot();
    const me = currentOwner();
    // Our own live pid and start time, but from another boot: provably not us.
    const dir = await plantOwner(root, {
      pid: me.pid,
      bootId: OTHER_BOOT,
      startTicks: me.startTicks,
    });
    const { report, lines } = await sweepQuiet(root);
    expect(report).toEqual({ swept: [dir], kept: [], errors: [] });
    expect(lines.join('\n')).toMatch(/not this boot/);
  });

  it('G7 an owner with no such pid on this boot is swept', async () => {
    const root = await makeTempRoot();
    const dir = await plantOwner(root, { pid: deadPid(), startTicks: 5 });
    expect((await sweepQuiet(root)).report).toEqual({ swept: [dir], kept: [], errors: [] });
  });

  it('G7 an owner in another pid namespace (a container sharing the root) is never judged by pid', async () => {
    const root = await makeTempRoot();
    const me = currentOwner();
    expect(me.pidNamespace).toBeTypeOf('number');
    const dir = await plantOwner(root, {
      pid: deadPid(),
      startTicks: 5,
      pidNamespace: me.pidNamespace! + 1,
    });
    const { report, lines } = await sweepQuiet(root);
    expect(report).toEqual({ swept: [], kept: [dir], errors: [] });
    expect(lines.join('\n')).toMatch(/pid namespace/);
  });

  it('G7 a symlink planted in <root>/spillway is not followed and its target survives', async () => {
    const root = await makeTempRoot();
    const outside = await makeTempRoot();
    await writeFile(join(outside, 'precious.txt'), 'keep me');
    const pid = deadPid();
    await mkdir(join(root, 'spillway'), { mode: 0o700 });
    const link = join(root, 'spillway', `owner-${boot8}-${pid}-1`);
    await symlink(outside, link);
    const sweptLink = join(root, 'spillway', `swept-${boot8}-${pid}-1-0123abcd`);
    await symlink(outside, sweptLink);
    // And a dead owner dir whose task dir is a symlink out of the root.
    const dead = await plantOwner(root, { pid, startTicks: 2 });
    await symlink(outside, join(dead, 'task-2-abcdef'));

    const { report, lines } = await sweepQuiet(root);
    expect(report).toEqual({ swept: [dead], kept: [link], errors: [] });
    expect(lines.join('\n')).toMatch(/symlink/);
    expect((await lstat(link)).isSymbolicLink()).toBe(true);
    expect((await lstat(sweptLink)).isSymbolicLink()).toBe(true);
    expect(await readFile(join(outside, 'precious.txt'), 'utf8')).toBe('keep me');
  });

  it('G7 entries that are not Spillway owner dirs are never touched', async () => {
    const root = await makeTempRoot();
    const spillway = join(root, 'spillway');
    await mkdir(spillway, { mode: 0o700 });
    await mkdir(join(spillway, 'owner-notanowner'));
    await writeFile(join(spillway, `owner-${boot8}-${deadPid()}-3`), 'a file, not a dir');
    await mkdir(join(spillway, 'someone-else'));
    const { report } = await sweepQuiet(root);
    expect(report.swept).toEqual([]);
    expect(report.errors).toEqual([]);
    expect((await readdir(spillway)).sort()).toHaveLength(3);
  });

  it.runIf(process.getuid?.() === 0)(
    'G7 an owner dir of another uid is foreign and kept, even if its owner is dead',
    async () => {
      const root = await makeTempRoot();
      const dir = await plantOwner(root, { pid: deadPid(), startTicks: 1 });
      await chown(dir, 12345, 12345);
      expect((await sweepQuiet(root)).report).toEqual({ swept: [], kept: [dir], errors: [] });
    },
  );

  it('G7 a garbage owner.json in a young dir is logged and kept, no crash', async () => {
    const root = await makeTempRoot();
    const dir = await plantOwner(root, { pid: deadPid(), startTicks: 1, marker: '{"pid": "x' });
    const { report, lines } = await sweepQuiet(root);
    expect(report).toEqual({ swept: [], kept: [dir], errors: [] });
    expect(lines.join('\n')).toMatch(/owner.json is not valid JSON; dir is \d+ s old/);
    // The marker's text is not echoed into the log.
    expect(lines.join('\n')).not.toContain('"pid"');
  });

  it('G7 an owner.json that is a directory, or unreadable, is logged and kept while young', async () => {
    const root = await makeTempRoot();
    const asDir = await plantOwner(root, { pid: deadPid(), startTicks: 1, marker: 'dir' });
    const unreadable = await plantOwner(root, { pid: deadPid(), startTicks: 2 });
    seam.injectFault({ op: 'readFile', code: 'EACCES', pathIncludes: 'owner.json' });
    const { report, lines } = await sweepQuiet(root);
    expect(report.kept.sort()).toEqual([asDir, unreadable].sort());
    expect(report.swept).toEqual([]);
    expect(report.errors).toEqual([]);
    const log = lines.join('\n');
    expect(log).toContain('owner.json is not a regular file');
    expect(log).toContain('owner.json cannot be read (EACCES)');
  });

  it('G7 an old dir without a usable owner.json is swept only if its name proves the owner dead', async () => {
    const root = await makeTempRoot();
    const me = currentOwner();
    const deadNoMarker = await plantOwner(root, {
      pid: deadPid(),
      startTicks: 1,
      marker: 'none',
      old: true,
    });
    const deadGarbage = await plantOwner(root, {
      pid: me.pid,
      startTicks: me.startTicks + 7,
      marker: 'garbage',
      old: true,
    });
    // A live child whose marker has gone missing: its name still proves it alive.
    const { dir: liveNoMarker } = await identityChild(root);
    await rm(join(liveNoMarker, 'owner.json'));
    const past = new Date(Date.now() - 3600_000);
    await utimes(liveNoMarker, past, past);
    const { report, lines } = await sweepQuiet(root);
    expect(report.swept.sort()).toEqual([deadNoMarker, deadGarbage].sort());
    expect(report.kept).toEqual([liveNoMarker]);
    expect(report.errors).toEqual([]);
    expect(lines.join('\n')).toMatch(/owner.json is missing; judged by its name: .*still runs/);
  });

  it('G7 an owner.json that does not match its dir name is judged by the name', async () => {
    const root = await makeTempRoot();
    const { pid, startTicks } = await identityChild(root);
    // A copied marker claims a dead owner, but the dir belongs to a live child.
    const dir = await plantOwner(root, { pid, startTicks, old: true });
    const me = currentOwner();
    await writeFile(
      join(dir, 'owner.json'),
      JSON.stringify({ ...me, pid: deadPid(), startTicks: 3 }),
    );
    const past = new Date(Date.now() - 3600_000);
    await utimes(dir, past, past);
    const { report, lines } = await sweepQuiet(root);
    expect(report.kept).toEqual([dir]);
    expect(report.swept).toEqual([]);
    expect(lines.join('\n')).toMatch(/not this dir/);
  });

  it('G7 a half-finished sweep (a leftover swept-* dir) is finished', async () => {
    const root = await makeTempRoot();
    const spillway = join(root, 'spillway');
    const leftover = join(spillway, `swept-${boot8}-${deadPid()}-9-0badc0de`);
    await mkdir(join(leftover, 'task-1-abcdef'), { recursive: true, mode: 0o700 });
    await writeFile(join(leftover, 'task-1-abcdef', 'spill-segment-0.bin'), 'x');
    const { report } = await sweepQuiet(root);
    expect(report).toEqual({ swept: [leftover], kept: [], errors: [] });
    expect(await readdir(spillway)).toEqual([]);
  });

  it('G7 a sweep interrupted between rename and removal is finished by the next one', async () => {
    const root = await makeTempRoot();
    const dead = await plantOwner(root, { pid: deadPid(), startTicks: 1 });
    seam.injectFault({ op: 'rm', code: 'EIO' });
    const first = await sweepQuiet(root);
    expect(first.report.swept).toEqual([]);
    expect(first.report.errors).toHaveLength(1);
    expect(first.report.errors[0]!.path).toBe(dead);
    expect(first.report.errors[0]!.message).toMatch(/EIO/);
    const [left] = await readdir(join(root, 'spillway'));
    expect(left).toMatch(/^swept-/);
    const second = await sweepQuiet(root);
    expect(second.report).toEqual({
      swept: [join(root, 'spillway', left!)],
      kept: [],
      errors: [],
    });
    expect(await readdir(join(root, 'spillway'))).toEqual([]);
  });

  it('G7 an error on one entry is logged and the sweep goes on', async () => {
    const root = await makeTempRoot();
    const a = await plantOwner(root, { pid: deadPid(), startTicks: 1 });
    const b = await plantOwner(root, { pid: deadPid(), startTicks: 2 });
    seam.injectFault({ op: 'rename', code: 'EIO', pathIncludes: a });
    const { report, lines } = await sweepQuiet(root);
    expect(report.swept).toEqual([b]);
    expect(report.errors).toEqual([{ path: a, message: expect.stringMatching(/EIO/) }]);
    expect(lines.join('\n')).toContain(`error at ${a}`);
    expect(existsSync(a)).toBe(true);
  });

  it('G7 two concurrent sweepers in one process both succeed and the dead dirs are gone', async () => {
    const root = await makeTempRoot();
    const dead: string[] = [];
    for (let i = 0; i < 20; i++)
      dead.push(await plantOwner(root, { pid: deadPid(), startTicks: i }));
    const { dir: live } = await identityChild(root);
    const [a, b] = await Promise.all([sweepQuiet(root), sweepQuiet(root)]);
    expect(a.report.errors).toEqual([]);
    expect(b.report.errors).toEqual([]);
    const sweptOwners = [...a.report.swept, ...b.report.swept].filter((p) => p.includes('/owner-'));
    expect(sweptOwners.sort()).toEqual(dead.sort());
    expect(await readdir(join(root, 'spillway'))).toEqual([live.split('/').pop()]);
  });

  it('G7 two sweepers racing for the same dead dir: one claims it, the other treats ENOENT as done', async () => {
    const root = await makeTempRoot();
    const dead = await plantOwner(root, { pid: deadPid(), startTicks: 1 });
    // Hold each rename until both sweepers have reached it, so both really try the same claim.
    const waiting: (() => void)[] = [];
    seam.setFsHook(async (op) => {
      if (op !== 'rename') return;
      await new Promise<void>((release) => {
        waiting.push(release);
        if (waiting.length === 2) for (const r of waiting) r();
      });
    });
    const [a, b] = await Promise.all([sweepQuiet(root), sweepQuiet(root)]);
    expect(waiting).toHaveLength(2);
    expect([...a.report.swept, ...b.report.swept]).toEqual([dead]);
    expect([...a.report.errors, ...b.report.errors]).toEqual([]);
    expect([...a.lines, ...b.lines].join('\n')).toMatch(/claimed by another sweeper/);
    expect(existsSync(dead)).toBe(false);
  });

  it('G7 two sweeper processes at once both succeed and each dead dir is swept exactly once', async () => {
    const root = await makeTempRoot();
    const dead: string[] = [];
    for (let i = 0; i < 30; i++) {
      dead.push(
        await plantOwner(root, {
          pid: deadPid(),
          startTicks: i,
          ...(i % 2 === 0 ? { bootId: OTHER_BOOT } : {}),
        }),
      );
    }
    const [c1, c2] = [spillRootChild('sweep', root), spillRootChild('sweep', root)];
    const [r1, r2] = await Promise.all([
      nextMessage<SweepReport>(c1),
      nextMessage<SweepReport>(c2),
    ]);
    expect((await c1.exited).code).toBe(0);
    expect((await c2.exited).code).toBe(0);
    expect(r1.errors).toEqual([]);
    expect(r2.errors).toEqual([]);
    const sweptOwners = [...r1.swept, ...r2.swept].filter((p) => p.includes('/owner-'));
    expect(sweptOwners.sort()).toEqual(dead.sort());
    expect(await readdir(join(root, 'spillway'))).toEqual([]);
  });

  it('G7 a sweep with no <root>/spillway reports nothing and creates nothing', async () => {
    const root = await makeTempRoot();
    expect(await sweepSpillRoot(root)).toEqual({ swept: [], kept: [], errors: [] });
    expect(await readdir(root)).toEqual([]);
  });

  it('G7 the owner dir of an open SpillRoot is always kept', async () => {
    const root = await makeTempRoot();
    const spill = await open(root);
    const { report } = await sweepQuiet(root);
    expect(report).toEqual({ swept: [], kept: [spill.ownerDir], errors: [] });
  });
});

describe('process endings', () => {
  it('G7 the owner dir is gone after the process exits normally', async () => {
    const root = await makeTempRoot();
    const child = spillRootChild('exit', root);
    const { ownerDir } = await nextMessage<{ ownerDir: string }>(child);
    expect((await child.exited).code).toBe(0);
    expect(existsSync(ownerDir)).toBe(false);
    expect(await readdir(join(root, 'spillway'))).toEqual([]);
  });

  it('G7 the owner dir is gone after SIGTERM when the process exits from its handler', async () => {
    const root = await makeTempRoot();
    const child = spillRootChild('sigterm', root);
    const { ownerDir, taskDir } = await nextMessage<{ ownerDir: string; taskDir: string }>(child);
    expect(existsSync(join(taskDir, 'spill-segment-0.bin'))).toBe(true);
    child.proc.kill('SIGTERM');
    expect((await child.exited).code).toBe(143);
    expect(existsSync(ownerDir)).toBe(false);
    expect(await readdir(join(root, 'spillway'))).toEqual([]);
  });

  it('G7 the owner dir is gone after an uncaught exception', async () => {
    const root = await makeTempRoot();
    const child = spillRootChild('throw', root);
    const { ownerDir } = await nextMessage<{ ownerDir: string }>(child);
    expect((await child.exited).code).toBe(1);
    expect(existsSync(ownerDir)).toBe(false);
  });
});
