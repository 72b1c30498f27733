// The package build: compile src/, inspector/ and bench/ to dist/ (ESM, .d.ts, source maps),
// then copy the inspector's page, which is plain browser JavaScript served as it is.
// Run by `npm run build`, and by `prepack`, so `npm pack` gets a working package.
//
// Then the entries a user imports (the package entry and its subpaths) are bundled in place by
// esbuild, xstate included, with the modules they share split into chunks (one copy of each
// class, so `instanceof` holds across subpaths): loading 63 modules and xstate's own files cost
// `import('spillway')` ~1.7x the start of a bare node; one minified file costs ~1.2x
// (docs/performance.md). The CLI is bundled too, in a build of its own, its lazily loaded
// commands becoming chunks: `recover` loaded its 81 modules and xstate's files one by one,
// ~0.1 s over a bare node's start on every run. tsc's module-per-file output stays beside the
// bundles (scripts the bench spawns run from it). Declarations are tsc's throughout.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { build } from 'esbuild';
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

// `npm start` and `npm test` build first. A build whose sources have not changed since the
// last one is skipped (it cost 7–15 s, silently, on every run): the stamp in dist/ holds a hash
// of every input file's content, so a checkout, an edit or a new dependency rebuilds, and a
// touch or a second run does not. `--force` rebuilds anyway.
const STAMP = join(root, 'dist', '.build-stamp.json');
/** The build's own settings, inputs beside the sources: a change to one starts tsc over. */
const SETTINGS = [
  'scripts/build.mjs',
  'tsconfig.json',
  'tsconfig.build.json',
  'package.json',
  'package-lock.json',
];
const inputs = buildInputs();
const previous = readStamp();
const changed = Object.keys(inputs).filter((f) => previous?.[f] !== inputs[f]);
const removed = Object.keys(previous ?? {}).filter((f) => !(f in inputs));
if (
  !process.argv.includes('--force') &&
  previous !== undefined &&
  changed.length + removed.length === 0
) {
  console.error(`build: up to date (${Object.keys(inputs).length} source files unchanged)`);
  process.exit(0);
}
const started = Date.now();
console.error(
  previous === undefined
    ? 'build: compiling src/, inspector/ and bench/ into dist/ (first build, ~10 s)'
    : `build: ${changed.length + removed.length} file(s) changed since the last build ` +
        `(${[...changed, ...removed].slice(0, 3).join(', ')}${changed.length + removed.length > 3 ? ', …' : ''}); compiling`,
);

// tsc compiles incrementally into .tsc/ (gitignored), which keeps its output and its
// .tsbuildinfo between builds: an edit recompiles the files it touches and re-checks what
// depends on their types (~2.5 s for a body, against ~8 s for everything). dist/ is then made
// afresh from it, because the bundling below overwrites tsc's entry files in dist/ in place.
// .tsc/ sits beside dist/ at the same depth, so the source maps' relative paths hold in both.
// A removed source (tsc never deletes an output) or a changed build setting starts it over.
const TSC_OUT = join(root, '.tsc');
if (
  process.argv.includes('--force') ||
  previous === undefined ||
  removed.length > 0 ||
  changed.some((f) => SETTINGS.includes(f))
) {
  rmSync(TSC_OUT, { recursive: true, force: true });
}
execFileSync(
  process.execPath,
  [
    tsc,
    '-p',
    join(root, 'tsconfig.build.json'),
    '--outDir',
    TSC_OUT,
    '--incremental',
    '--tsBuildInfoFile',
    join(TSC_OUT, '.tsbuildinfo'),
  ],
  { stdio: 'inherit' },
);
rmSync(join(root, 'dist'), { recursive: true, force: true });
cpSync(TSC_OUT, join(root, 'dist'), {
  recursive: true,
  filter: (from) => from !== join(TSC_OUT, '.tsbuildinfo'),
});
cpSync(join(root, 'inspector', 'page'), join(root, 'dist', 'inspector', 'page'), {
  recursive: true,
});

// What a user imports: package.json `exports` (the CLI is not among them). Each subpath entry
// also loads the package entry, so everything the entry needs sits in one shared chunk:
// `import('spillway')` reads two files, not one per combination of entries sharing a module.
const entries = ['src/index', 'src/machines', 'src/testing', 'src/rescale', 'inspector/index'];
const CORE = join(root, 'dist', 'src', 'index.js');
/** What both bundles share: ESM for Node, minified with names kept, linked source maps. */
const common = {
  outdir: join(root, 'dist'),
  allowOverwrite: true,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20.19',
  // Optional peers and the native CRC stay the user's own install, loaded when needed.
  external: ['@aws-sdk/*', '@statelyai/inspect', '@node-rs/crc32', 'ws'],
  minify: true,
  // Lines of at most ~160 characters: an error thrown from the package prints its source line,
  // and one minified line was ~80 KB of code before the message (issue 32). Whitespace kept
  // instead cost import('spillway') ~25 % more (a third more bytes to parse).
  lineLimit: 160,
  // Error classes take their `name` from the class (`new.target.name`).
  keepNames: true,
  sourcemap: 'linked',
  logLevel: 'warning',
};
// The command (bin/spillway imports dist/src/cli/main.js), bundled on its own and first (from
// tsc's output alone, before the entries below are bundled over theirs): its commands
// load lazily, each a chunk. A build of its own, so adding it does not split the entries'
// chunks (one build of both made `import('spillway')` read 17 files instead of 4). The CLI's
// process never loads the entries, so its copy of each class is the only one there.
await build({
  ...common,
  entryPoints: [{ in: join(root, 'dist', 'src', 'cli', 'main.js'), out: 'src/cli/main' }],
  chunkNames: 'src/cli/chunks/[name]-[hash]',
});

// What the entries load on first use (a relative `import()`: Flink's readers, the directory
// runner, the rewrite, …) is reached through one lazy module, `spillway-lazy-parts`, that
// re-exports each such module's namespace: esbuild makes a chunk per set of entries and lazy
// imports reaching a module, so nine lazy targets split what `import('spillway')` loads into
// 13 files (each ~0.6 ms to resolve, read and link); through one, the import reads 3.
const DYNAMIC = /\bimport\((['"])(\.{1,2}\/[^'"]+\.js)\1\)/g;
const LAZY_PARTS = [];
for (const file of jsFiles(join(root, 'dist', 'src'), join(root, 'dist', 'src', 'cli'))) {
  for (const m of readFileSync(file, 'utf8').matchAll(DYNAMIC)) {
    const target = join(dirname(file), m[2]);
    if (!LAZY_PARTS.includes(target)) LAZY_PARTS.push(target);
  }
}
/** `code` with each relative `import('./x.js')` as `import('spillway-lazy-parts')`'s part. */
function throughLazyParts(code, dir) {
  return code.replace(DYNAMIC, (_, _q, rel) => {
    const k = LAZY_PARTS.indexOf(join(dir, rel));
    return k < 0 ? _ : `import('spillway-lazy-parts').then((parts) => parts.L${k})`;
  });
}
/** The .js files under `dir`, except those under `skip`. */
function jsFiles(dir, skip) {
  const out = [];
  for (const d of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, d.name);
    if (d.isDirectory() && p !== skip) out.push(...jsFiles(p, skip));
    else if (d.isFile() && d.name.endsWith('.js')) out.push(p);
  }
  return out;
}

await build({
  ...common,
  entryPoints: entries.map((e) => ({ in: join(root, 'dist', `${e}.js`), out: e })),
  chunkNames: 'src/chunks/[name]-[hash]',
  plugins: [
    {
      name: 'subpaths-share-the-entry',
      setup(b) {
        b.onLoad({ filter: /\.js$/ }, async (args) => {
          const e = entries.find((n) => args.path === join(root, 'dist', `${n}.js`));
          const code = await readFile(args.path, 'utf8');
          const lazy = throughLazyParts(code, dirname(args.path));
          if ((e === undefined || e === 'src/index') && lazy === code) return undefined;
          return {
            contents:
              e === undefined || e === 'src/index'
                ? lazy
                : `${lazy}\nimport ${JSON.stringify(CORE)};\n`,
            loader: 'js',
            resolveDir: dirname(args.path),
          };
        });
        // The package declares `sideEffects: false`; this one import is kept for its chunking.
        b.onResolve({ filter: /index\.js$/ }, (args) =>
          args.path === CORE ? { path: CORE, sideEffects: true } : undefined,
        );
        b.onResolve({ filter: /^spillway-lazy-parts$/ }, () => ({
          path: 'lazy-parts',
          namespace: 'spillway-lazy-parts',
        }));
        b.onLoad({ filter: /.*/, namespace: 'spillway-lazy-parts' }, () => ({
          contents: LAZY_PARTS.map((p, k) => `export * as L${k} from ${JSON.stringify(p)};`).join(
            '\n',
          ),
          loader: 'js',
          resolveDir: root,
        }));
      },
    },
  ],
});

writeFileSync(STAMP, JSON.stringify(inputs));
console.error(`build: done in ${((Date.now() - started) / 1000).toFixed(1)} s`);

/** Every file the build reads, by path relative to the root, with a hash of its content. */
function buildInputs() {
  const files = {};
  const add = (rel) => {
    files[rel] = createHash('sha256')
      .update(readFileSync(join(root, rel)))
      .digest('hex')
      .slice(0, 16);
  };
  const walk = (dir) => {
    for (const d of readdirSync(join(root, dir), { withFileTypes: true })) {
      const rel = `${dir}/${d.name}`;
      if (d.isDirectory()) walk(rel);
      else if (d.isFile()) add(rel);
    }
  };
  for (const dir of ['src', 'inspector', 'bench']) walk(dir);
  for (const f of SETTINGS) {
    if (existsSync(join(root, f))) add(f);
  }
  return files;
}

/** The last build's inputs, or undefined when there is no complete build to keep. */
function readStamp() {
  try {
    return JSON.parse(readFileSync(STAMP, 'utf8'));
  } catch {
    return undefined;
  }
}
