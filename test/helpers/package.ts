/**
 * What the package tests share: running a command to its end (never throwing: the code is in
 * the result), npm with the fund banner off, and packing the built repo into a tarball the way
 * `npm publish` would, without its scripts (npm test built dist/ just before, as prepack would;
 * packing without scripts keeps the build from being redone under suites running the same bin).
 */
import { execFile, type ExecFileOptions } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { repoRoot } from './processes.ts';

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `file args` to its end: its exit code (1 when it could not start) and output. */
export function run(file: string, args: string[], options: ExecFileOptions = {}): Promise<Run> {
  return new Promise((done) => {
    execFile(file, args, { maxBuffer: 64 * 1024 * 1024, ...options }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
      done({ code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

/** `npm args` in `cwd`; a failure throws with npm's stderr. */
export async function npm(args: string[], cwd: string): Promise<Run> {
  const result = await run('npm', args, { cwd, env: { ...process.env, npm_config_fund: 'false' } });
  if (result.code !== 0) {
    throw new Error(`npm ${args.join(' ')} failed (${result.code}):\n${result.stderr}`);
  }
  return result;
}

/** Packs the built repository into `dest`; returns the tarball's path. */
export async function packBuilt(dest: string): Promise<string> {
  const built = await readFile(join(repoRoot, 'dist', 'src', 'index.js'), 'utf8').catch(() => '');
  if (built === '') throw new Error('dist/ is missing: run `npm run build` (npm test does)');
  const packed = await npm(
    ['pack', '--ignore-scripts', '--json', '--pack-destination', dest],
    repoRoot,
  );
  const [info] = JSON.parse(packed.stdout) as { filename: string }[];
  return join(dest, info!.filename);
}

/** The strict consumer's compiler options: nothing relaxed, declarations of libraries checked. */
export const STRICT_TSCONFIG = {
  compilerOptions: {
    module: 'nodenext',
    moduleResolution: 'nodenext',
    target: 'es2022',
    lib: ['es2023', 'esnext.disposable'],
    types: ['node'],
    strict: true,
    exactOptionalPropertyTypes: true,
    noUncheckedIndexedAccess: true,
    skipLibCheck: false,
    outDir: 'out',
  },
};

/** The TypeScript blocks of the README, in order. */
export async function readmeBlocks(): Promise<string[]> {
  const text = await readFile(join(repoRoot, 'README.md'), 'utf8');
  return [...text.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}

/** A strict project in `dir` of the README's blocks, one module each (`block-<k>.mts`). */
export async function writeReadmeBlocks(dir: string, blocks: string[]): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'tsconfig.json'), JSON.stringify(STRICT_TSCONFIG, null, 2));
  for (const [k, block] of blocks.entries()) {
    // A block without an import is a fragment of the one before it: it is not a module.
    await writeFile(
      join(dir, `block-${k}.mts`),
      /^import /m.test(block) ? block : `export {};\n${block}`,
    );
  }
}
