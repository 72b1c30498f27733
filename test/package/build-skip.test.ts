/**
 * `npm start` and `npm test` build first; a build whose sources did not change is skipped and
 * says so (issues 32 and 33: it cost 7–15 s, silently, on every run). Run on a copy of the
 * build's inputs in a temp dir, so the repository's own dist/ is never rebuilt under the tests
 * that spawn it. A build that does run recompiles only what changed (tsc's incremental output
 * kept in .tsc/).
 */
import { execFile } from 'node:child_process';
import { appendFile, cp, readFile, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../helpers/processes.ts';
import { removeDir, tempDir } from '../helpers/temp.ts';

const run = promisify(execFile);
let copy: string;

beforeAll(async () => {
  copy = await tempDir();
  for (const part of ['src', 'inspector', 'bench', 'scripts']) {
    await cp(join(repoRoot, part), join(copy, part), { recursive: true });
  }
  for (const file of [
    'tsconfig.json',
    'tsconfig.build.json',
    'package.json',
    'package-lock.json',
  ]) {
    await cp(join(repoRoot, file), join(copy, file));
  }
  await symlink(join(repoRoot, 'node_modules'), join(copy, 'node_modules'), 'dir');
}, 60_000);

afterAll(async () => {
  await removeDir(copy);
});

const build = () => run(process.execPath, [join(copy, 'scripts', 'build.mjs')], { cwd: copy });

describe('the build before start and test', () => {
  it('the first build says what it compiles; a second with unchanged sources is skipped and says so', async () => {
    const first = await build();
    expect(first.stderr).toMatch(/^build: compiling/m);
    expect(first.stderr).toMatch(/^build: done in/m);
    const stamp = await readFile(join(copy, 'dist', '.build-stamp.json'), 'utf8');

    const second = await build();
    expect(second.stderr.trim()).toMatch(/^build: up to date \(\d+ source files unchanged\)$/);
    // Skipped means untouched: the stamp (written last by a build) is the same file.
    expect(await readFile(join(copy, 'dist', '.build-stamp.json'), 'utf8')).toBe(stamp);

    // A touch is no change (a checkout touches files); the content is what counts.
    const later = new Date(Date.now() + 60_000);
    await utimes(join(copy, 'src', 'index.ts'), later, later);
    expect((await build()).stderr).toMatch(/up to date/);
  }, 120_000);

  it('an edit recompiles only the files it touches; a removed source leaves dist/ too', async () => {
    await build(); // up to date or not, from here on the copy has a complete build
    const untouched = join(copy, '.tsc', 'src', 'services', 'crc32.js');
    const before = (await stat(untouched)).mtimeMs;

    await appendFile(join(copy, 'src', 'services', 'human-bytes.ts'), '// incremental-probe\n');
    const edited = await build();
    expect(edited.stderr).toMatch(
      /^build: 1 file\(s\) changed since the last build \(src\/services\/human-bytes\.ts\); compiling$/m,
    );
    expect(
      await readFile(join(copy, 'dist', 'src', 'services', 'human-bytes.js'), 'utf8'),
    ).toContain('incremental-probe');
    // tsc kept what the edit does not reach: the same output file, not written again.
    expect((await stat(untouched)).mtimeMs).toBe(before);

    await writeFile(join(copy, 'src', 'probe-extra.ts'), 'export const probe = 1;\n');
    await build();
    expect(existsSync(join(copy, 'dist', 'src', 'probe-extra.js'))).toBe(true);
    await rm(join(copy, 'src', 'probe-extra.ts'));
    await build();
    // tsc never deletes an output: a removed source starts its output over, so none is stale.
    expect(existsSync(join(copy, 'dist', 'src', 'probe-extra.js'))).toBe(false);
    expect(existsSync(join(copy, '.tsc', 'src', 'probe-extra.js'))).toBe(false);
  }, 180_000);
});
