// The package build: compile src/, inspector/ and bench/ to dist/ (ESM, .d.ts, source maps),
// then copy the inspector's page, which is plain browser JavaScript served as it is.
// Run by `npm run build`, and by `prepare` / `prepack`, so a git install and `npm pack` both
// get a working package.
import { execFileSync } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

rmSync(join(root, 'dist'), { recursive: true, force: true });
execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], {
  stdio: 'inherit',
});
cpSync(join(root, 'inspector', 'page'), join(root, 'dist', 'inspector', 'page'), {
  recursive: true,
});
