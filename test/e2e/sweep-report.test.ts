/**
 * `spillway sweep` reports as its help says (docs/cli.md): on success its text and its `--json`
 * name the same dir — `<root>/spillway`, the one it swept, as `--dry-run` does — and a
 * `--spill-root` that does not exist is bad input, exit 2, text and JSON alike.
 */
import { existsSync } from 'node:fs';
import { mkdir, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { deadPid } from '../helpers/processes.ts';
import { makeTempRoot } from '../helpers/temp.ts';
import { plantOwner, runCli, spillLeftovers } from './harness.ts';

describe('sweep names one dir', () => {
  it('sweep text and --json name the same dir on success (<root>/spillway, as --dry-run does), with the dead owner it swept', async () => {
    const root = join(await realpath(await makeTempRoot()), 'root');
    await mkdir(root);
    const dir = join(root, 'spillway');
    const dead = await plantOwner(root, { pid: deadPid(), startTicks: 1 });
    const listing = JSON.parse(
      (await runCli(['sweep', '--spill-root', root, '--dry-run', '--json'])).stdout,
    ) as { dir: string };
    const dry = await runCli(['sweep', '--spill-root', root, '--dry-run']);
    expect(dry.stderr.split('\n')[0]).toBe(`${dir}: 1 owner(s)`);
    expect(listing.dir).toBe(dir);

    const json = await runCli(['sweep', '--spill-root', root, '--json']);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ dir, swept: [dead], kept: [], errors: [] });
    await plantOwner(root, { pid: deadPid(), startTicks: 1 });
    const text = await runCli(['sweep', '--spill-root', root]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stderr).toMatch(
      new RegExp(`^swept ${dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\n`, 'm'),
    );
    expect(text.stderr).toMatch(/^ +swept +1$/m);
    expect(await spillLeftovers(root)).toEqual([]);
  });

  it('sweep of an empty root: the same dir in text and JSON though nothing is there yet', async () => {
    const root = await realpath(await makeTempRoot());
    const json = await runCli(['sweep', '--spill-root', root, '--json']);
    const text = await runCli(['sweep', '--spill-root', root]);
    expect(json.code).toBe(0);
    expect(text.code).toBe(0);
    const named = (JSON.parse(json.stdout) as { dir: string }).dir;
    expect(named).toBe(join(root, 'spillway'));
    expect(text.stderr.split('\n')[0]).toBe(`swept ${named}`);
  });

  it('sweep --spill-root /nonexistent exits 2 as its help says, with one line naming it (text and JSON)', async () => {
    if (existsSync('/nonexistent')) {
      console.log('skipped: this machine has a /nonexistent');
      return;
    }
    const help = await runCli(['sweep', '--help']);
    expect(help.stdout).toMatch(/2 bad usage or an unusable root/);
    const text = await runCli(['sweep', '--spill-root', '/nonexistent']);
    const json = await runCli(['sweep', '--spill-root', '/nonexistent', '--json']);
    expect(text.code).toBe(2);
    expect(json.code).toBe(2);
    expect(text.stderr.trimEnd().split('\n')).toEqual([
      'spillway sweep: spill root /nonexistent does not exist',
    ]);
    expect(JSON.parse(json.stdout)).toMatchObject({
      error: { code: 'ERR_SPILLWAY_SPILL_ROOT', message: 'spill root /nonexistent does not exist' },
    });
  });
});
