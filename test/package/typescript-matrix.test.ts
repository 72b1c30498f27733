/**
 * DESIGN §6: a strict `nodenext` consumer compiles against the package's declarations with
 * TypeScript 5.0, 5.9 and 7.x, as ESM and as CommonJS, with and without `"types"` set, and no
 * other config (no `lib`, no `skipLibCheck`): the declarations reference the Node types they
 * use. Each TypeScript is installed once into a temp dir from the npm cache (or the registry).
 * A CommonJS consumer loads the ESM package with `await import()`, which every version types;
 * a static `import`/`require()` of it needs TypeScript ≥ 5.8 (README § Install).
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const VERSIONS = ['5.0.4', '5.9.3', '7.0.2'] as const;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[], cwd: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      cmd,
      args,
      { cwd, env: { ...process.env, npm_config_fund: 'false' }, maxBuffer: 1 << 24 },
      (error, stdout, stderr) =>
        resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

async function npm(args: string[], cwd: string): Promise<Run> {
  const result = await run('npm', args, cwd);
  if (result.code !== 0) throw new Error(`npm ${args.join(' ')} failed:\n${result.stderr}`);
  return result;
}

const ESM_SOURCE = `import { recoverChannelState, isSpillwayError, type RecoveryReport } from 'spillway';

const recovery = recoverChannelState({
  checkpoint: 'job.spwc',
  channels: () => ({ onBuffer: (buffer: Buffer) => void buffer.length, onFinished: () => undefined }),
});
const report: RecoveryReport = await recovery.done.catch((error: unknown) => {
  if (isSpillwayError(error) && error.code === 'ERR_SPILLWAY_CORRUPT_CHECKPOINT') console.log(error.offset);
  throw error;
});
console.log(report.bytesDelivered);
`;

const CJS_SOURCE = `async function main(): Promise<void> {
  const { recoverChannelState } = await import('spillway');
  const recovery = recoverChannelState({
    checkpoint: 'job.spwc',
    channels: () => ({ onBuffer: (buffer: Buffer) => void buffer.length, onFinished: () => undefined }),
  });
  console.log((await recovery.done).bytesDelivered);
}
void main();
`;

let work = '';
let app = '';
const started = Date.now();

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'spillway-tsmatrix-'));
  app = join(work, 'app');
  await mkdir(app);
  const built = await readFile(join(repo, 'dist', 'src', 'index.js'), 'utf8').catch(() => '');
  if (built === '') throw new Error('dist/ is missing: run `npm run build` (npm test does)');
  const packed = await npm(
    ['pack', '--ignore-scripts', '--json', '--pack-destination', work],
    repo,
  );
  const [info] = JSON.parse(packed.stdout) as { filename: string }[];
  const types = (
    JSON.parse(
      await readFile(join(repo, 'node_modules', '@types/node', 'package.json'), 'utf8'),
    ) as {
      version: string;
    }
  ).version;
  await writeFile(
    join(app, 'package.json'),
    JSON.stringify({ name: 'tsmatrix-app', private: true }),
  );
  await npm(
    [
      'install',
      '--prefer-offline',
      '--no-audit',
      join(work, info!.filename),
      `@types/node@${types}`,
    ],
    app,
  );
  // Each TypeScript in a dir of its own, so one app's node_modules serves them all.
  await Promise.all(
    VERSIONS.map(async (v) => {
      const dir = join(work, `ts-${v}`);
      await mkdir(dir);
      await writeFile(
        join(dir, 'package.json'),
        JSON.stringify({ name: `ts-${v}`, private: true }),
      );
      await npm(['install', '--prefer-offline', '--no-audit', `typescript@${v}`], dir);
    }),
  );
  for (const kind of ['esm', 'cjs'] as const) {
    for (const withTypes of [true, false]) {
      const dir = join(app, `${kind}-${withTypes ? 'types' : 'notypes'}`);
      await mkdir(dir);
      await writeFile(
        join(dir, 'package.json'),
        JSON.stringify({ type: kind === 'esm' ? 'module' : 'commonjs' }),
      );
      await writeFile(join(dir, 'main.ts'), kind === 'esm' ? ESM_SOURCE : CJS_SOURCE);
      await writeFile(
        join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            module: 'nodenext',
            moduleResolution: 'nodenext',
            target: 'es2022',
            strict: true,
            noEmit: true,
            ...(withTypes ? { types: ['node'] } : {}),
          },
          files: ['main.ts'],
        }),
      );
    }
  }
}, 600_000);

afterAll(async () => {
  if (work !== '') await rm(work, { recursive: true, force: true });
  console.log(`typescript matrix: ${((Date.now() - started) / 1000).toFixed(1)} s in all`);
});

describe('the declarations compile for a strict nodenext consumer', () => {
  for (const v of VERSIONS) {
    for (const kind of ['esm', 'cjs'] as const) {
      for (const withTypes of [true, false]) {
        it(`TypeScript ${v}, ${kind === 'esm' ? 'ESM' : 'CommonJS'}, ${withTypes ? 'with' : 'without'} "types"`, async () => {
          const tsc = join(work, `ts-${v}`, 'node_modules', 'typescript', 'bin', 'tsc');
          const dir = join(app, `${kind}-${withTypes ? 'types' : 'notypes'}`);
          const result = await run(process.execPath, [tsc, '-p', dir], dir);
          expect(result.stdout + result.stderr).toBe('');
          expect(result.code).toBe(0);
        }, 120_000);
      }
    }
  }
});
