/**
 * `spillway sweep --dry-run` and `listSpillRoot()` (API issue): they list every owner of a
 * spill root — pid, alive or provably dead and why, age, task dirs with files and bytes — and
 * what a sweep would delete, and delete nothing. The listing and the sweep share one judge, so
 * the sweep that follows deletes exactly what the dry run said.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeCheckpoint } from '../../src/services/formats/spwc/generator.ts';
import { listFiles } from '../../src/services/fs.ts';
import { listSpillRoot, type SpillRootListing } from '../../src/services/spill-root/listing.ts';
import { suiteCheckpoint } from '../helpers/checkpoints.ts';
import { deadPid, nextMessage, spawnFixture } from '../helpers/processes.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import { listTree, plantOwner, runCli, spillLeftovers } from './harness.ts';

const input = suiteCheckpoint((dir) =>
  makeCheckpoint({ out: join(dir, 'cp8.spwc'), gates: 1, channels: 2, mb: 8, seed: 5 }),
);

interface Paused {
  phase: string;
  taskDir: string;
  ownerDir: string;
}

describe('sweep --dry-run lists owners and deletes nothing', () => {
  it('sweep --dry-run lists a live owner mid-drain and a dead one, deletes nothing; the sweep then deletes exactly what it listed', async () => {
    const dir = await makeTempRoot();
    const root = join(dir, 'root');
    const out = join(dir, 'out');
    await mkdir(root);
    const child = spawnFixture('recover-child.ts', [
      JSON.stringify({
        checkpoint: input.path,
        spillRoot: root,
        out,
        maxSpillFileBytes: 1024 * 1024,
        pauseDrain: true,
      }),
    ]);
    const paused = await nextMessage<Paused>(child, (m) => m.phase === 'drain');
    const dead = await plantOwner(root, { pid: deadPid(), startTicks: 1 });
    const before = await listTree(root);

    const run = await runCli(['sweep', '--spill-root', root, '--dry-run', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const listing = JSON.parse(run.stdout) as SpillRootListing;
    expect(await listTree(root)).toEqual(before);

    const live = listing.owners.find((o) => o.path === paused.ownerDir);
    expect(live).toMatchObject({ pid: child.proc.pid, alive: true });
    expect(live!.ageMs).toBeGreaterThanOrEqual(0);
    expect(live!.tasks.map((t) => t.path)).toEqual([paused.taskDir]);
    // Exactly the files and bytes the paused drain holds on disk.
    const held = await listFiles(paused.taskDir);
    expect(held.length).toBeGreaterThan(1);
    expect(live!.tasks[0]).toMatchObject({
      files: held.length,
      bytes: held.reduce((n, f) => n + f.size, 0),
    });
    const gone = listing.owners.find((o) => o.path === dead);
    expect(gone).toMatchObject({ alive: false, files: 2, bytes: expect.any(Number) });
    expect(gone!.reason).toMatch(/no process/);
    expect(listing.wouldSweep).toEqual([dead]);

    // The human form says the same in lines, and still deletes nothing.
    const human = await runCli(['sweep', '--spill-root', root, '--dry-run']);
    expect(human.code).toBe(0);
    expect(human.stderr).toContain(`alive pid ${child.proc.pid}`);
    expect(human.stderr).toContain(`a sweep would delete:\n  ${dead}`);
    expect(await listTree(root)).toEqual(before);

    const swept = await runCli(['sweep', '--spill-root', root, '--json']);
    expect(JSON.parse(swept.stdout).swept).toEqual(listing.wouldSweep);

    child.proc.stdin!.write('go\n');
    expect((await child.exited).code).toBe(0);
    expect(await spillLeftovers(root)).toEqual([]);
  });

  it('listSpillRoot of a root without a spillway dir is an empty listing, and creates nothing', async () => {
    const root = await makeTempRoot();
    const listing = await listSpillRoot(root);
    expect(listing).toMatchObject({ owners: [], wouldSweep: [], errors: [] });
    expect(await listTree(root)).toEqual([]);
  });
});
