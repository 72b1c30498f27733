/**
 * DESIGN §6: a strict `nodenext` consumer compiles against the package's declarations with
 * TypeScript 5.0, 5.9 and 7.x, as ESM and as CommonJS, with and without `"types"` set, and no
 * other config (no `lib`, no `skipLibCheck`): the declarations reference the Node types they
 * use, and the app installs nothing but the package (npm brings `@types/node`, a peer
 * dependency). Each TypeScript is installed once into a temp dir from the npm cache (or the registry).
 * A CommonJS consumer loads the ESM package with `await import()`, which every version types;
 * a static `import`/`require()` of it needs TypeScript ≥ 5.8 (README § Install).
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { npm, packBuilt, readmeBlocks, run, writeReadmeBlocks } from '../helpers/package.ts';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const VERSIONS = ['5.0.4', '5.9.3', '7.0.2'] as const;

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
/** The app of the TypeScript versions older than the newest @types/node supports. */
let appOldTs = '';
const OLD_TS = new Set<string>(['5.0.4']);

/** An app with `deps` installed and the four consumers (ESM/CommonJS × with/without "types"). */
async function makeApp(dir: string, deps: string[]): Promise<void> {
  await mkdir(dir);
  await writeFile(
    join(dir, 'package.json'),
    JSON.stringify({ name: 'tsmatrix-app', private: true }),
  );
  await npm(['install', '--prefer-offline', '--no-audit', ...deps], dir);
  for (const kind of ['esm', 'cjs'] as const) {
    for (const withTypes of [true, false]) {
      const consumer = join(dir, `${kind}-${withTypes ? 'types' : 'notypes'}`);
      await mkdir(consumer);
      await writeFile(
        join(consumer, 'package.json'),
        JSON.stringify({ type: kind === 'esm' ? 'module' : 'commonjs' }),
      );
      await writeFile(join(consumer, 'main.ts'), kind === 'esm' ? ESM_SOURCE : CJS_SOURCE);
      await writeFile(
        join(consumer, 'tsconfig.json'),
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
}
const started = Date.now();

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'spillway-tsmatrix-'));
  app = join(work, 'app');
  appOldTs = join(work, 'app-old-ts');

  // A fresh app installs the tarball and nothing else: the Node types the declarations use come
  // with it (a peer dependency npm installs), as the README says (issue 32). The newest
  // @types/node supports TypeScript ≥ 5.6 (DefinitelyTyped's two-year window), so the TypeScript
  // 5.0 app pins the @types/node of Node 20, as the README tells such users to.
  const tarball = await packBuilt(work);
  const types = (
    JSON.parse(
      await readFile(join(repo, 'node_modules', '@types/node', 'package.json'), 'utf8'),
    ) as { version: string }
  ).version;
  await Promise.all([
    makeApp(app, [tarball]),
    makeApp(appOldTs, [tarball, `@types/node@${types}`]),
    ...VERSIONS.map(async (v) => {
      const dir = join(work, `ts-${v}`);
      await mkdir(dir);
      await writeFile(
        join(dir, 'package.json'),
        JSON.stringify({ name: `ts-${v}`, private: true }),
      );
      await npm(['install', '--prefer-offline', '--no-audit', `typescript@${v}`], dir);
    }),
  ]);
  // Nobody asked for @types/node in the fresh app: it came as the package's peer.
  await readFile(join(app, 'node_modules', '@types', 'node', 'package.json'));
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
          const dir = join(
            OLD_TS.has(v) ? appOldTs : app,
            `${kind}-${withTypes ? 'types' : 'notypes'}`,
          );
          const result = await run(process.execPath, [tsc, '-p', dir], { cwd: dir });
          expect(result.stdout + result.stderr).toBe('');
          expect(result.code).toBe(0);
        }, 120_000);
      }
    }
  }
});

describe('the README in a fresh app that installed only the tarball', () => {
  for (const v of VERSIONS.filter((x) => !OLD_TS.has(x))) {
    it(`TypeScript ${v} compiles every TypeScript block of the README, strict, libraries checked`, async () => {
      const dir = join(app, `readme-${v}`);
      await writeReadmeBlocks(dir, await readmeBlocks());
      const tsc = join(work, `ts-${v}`, 'node_modules', 'typescript', 'bin', 'tsc');
      const result = await run(process.execPath, [tsc, '-p', dir], { cwd: dir });
      expect(result.stdout + result.stderr).toBe('');
      expect(result.code).toBe(0);
    }, 120_000);
  }
});
