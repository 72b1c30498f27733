/**
 * The layering rules, checked on the sources (docs/architecture.md):
 * - the core (all of src/ but src/cli/) imports nothing outside src/ but Node's builtins and
 *   its declared runtime dependencies; an optional dependency (the AWS SDK) only in types or by
 *   `import()`, never statically, so importing the package never needs it;
 * - src/services/ never imports XState;
 * - src/machines/ never touches the file system (no node:fs, no fs seam).
 * The checker itself is tested on a violating source first, so these tests can fail.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const src = join(repo, 'src');
const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
};
// Optional parts: optional dependencies and optional peers (the AWS SDK is one).
const optional: Record<string, string> = { ...pkg.optionalDependencies };
for (const [name, range] of Object.entries(pkg.peerDependencies ?? {})) {
  if (pkg.peerDependenciesMeta?.[name]?.optional === true) optional[name] = range;
}

/** Whether `text` imports `spec` statically for its values (not `import type`). */
function importsValuesStatically(text: string, spec: string): boolean {
  const s = spec.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  return (
    new RegExp(`^\\s*(?:import|export)\\s+(?!type\\b)[^'"]*?\\sfrom\\s+['"]${s}['"]`, 'm').test(
      text,
    ) || new RegExp(`^\\s*import\\s+['"]${s}['"]`, 'm').test(text)
  );
}

/** Every module specifier a source names: static imports and exports, and `import('…')`. */
function specifiersOf(text: string): string[] {
  const out: string[] = [];
  const patterns = [
    /^\s*(?:import|export)\s[^'"]*?\sfrom\s+['"]([^'"]+)['"]/gm,
    /^\s*import\s+['"]([^'"]+)['"]/gm,
    /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  for (const re of patterns) for (const m of text.matchAll(re)) out.push(m[1]!);
  return out;
}

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => join(e.parentPath, e.name));
}

const builtins = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));
const packageOf = (spec: string) =>
  spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!;

/** What one core file imports that the boundary forbids. */
function violations(file: string, text: string): string[] {
  const bad: string[] = [];
  for (const spec of specifiersOf(text)) {
    if (spec.startsWith('.')) {
      const target = resolve(dirname(file), spec);
      if (!target.startsWith(src + sep)) bad.push(`${spec} (outside src/)`);
    } else if (packageOf(spec) in optional) {
      if (importsValuesStatically(text, spec)) bad.push(`${spec} (optional: import() it lazily)`);
    } else if (!builtins.has(spec) && !(packageOf(spec) in pkg.dependencies)) {
      bad.push(`${spec} (not a runtime dependency)`);
    }
  }
  return bad;
}

const core = sourcesUnder(src).filter((f) => !f.startsWith(join(src, 'cli') + sep));

describe('import boundaries', () => {
  it('the checker finds imports of every form and flags what leaves src/', () => {
    const text = [
      "import { a } from '../../inspector/server.ts';",
      "import type { B } from './b.ts';",
      "export { c } from 'left-pad';",
      "const d = await import('../../bench/run.ts');",
      "import 'node:fs';",
      "import type { S3Client } from '@aws-sdk/client-s3';",
      "import { GetObjectCommand } from '@aws-sdk/client-s3';",
    ].join('\n');
    expect(specifiersOf(text)).toEqual([
      '../../inspector/server.ts',
      './b.ts',
      'left-pad',
      '@aws-sdk/client-s3',
      '@aws-sdk/client-s3',
      'node:fs',
      '../../bench/run.ts',
    ]);
    expect(violations(join(src, 'services', 'x.ts'), text)).toEqual([
      '../../inspector/server.ts (outside src/)',
      'left-pad (not a runtime dependency)',
      '@aws-sdk/client-s3 (optional: import() it lazily)',
      '@aws-sdk/client-s3 (optional: import() it lazily)',
      '../../bench/run.ts (outside src/)',
    ]);
  });

  it('the core (src/ but src/cli/) imports nothing outside src/ but builtins and runtime dependencies', () => {
    expect(core.length).toBeGreaterThan(30);
    const found = core.flatMap((f) =>
      violations(f, readFileSync(f, 'utf8')).map((v) => `${relative(repo, f)}: ${v}`),
    );
    expect(found).toEqual([]);
  });

  it('src/services never imports xstate', () => {
    const found = sourcesUnder(join(src, 'services')).filter((f) =>
      specifiersOf(readFileSync(f, 'utf8')).some((s) => packageOf(s) === 'xstate'),
    );
    expect(found.map((f) => relative(repo, f))).toEqual([]);
  });

  it('src/machines never touches the file system', () => {
    const found = sourcesUnder(join(src, 'machines')).filter((f) =>
      specifiersOf(readFileSync(f, 'utf8')).some(
        (s) => /^(node:)?fs(\/promises)?$/.test(s) || s === 'fs-extra' || /\/fs\.ts$/.test(s),
      ),
    );
    expect(found.map((f) => relative(repo, f))).toEqual([]);
  });
});
