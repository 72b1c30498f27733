/**
 * The package entry's declarations, and the inspector's, never reach XState's (docs/package.md:
 * a consumer compiling with `skipLibCheck: false` and `exactOptionalPropertyTypes` type-checks
 * every declaration file it reaches, and XState's own fail there). Walks the built `.d.ts`
 * files from each entry through their relative imports — seconds faster than the consumer
 * test's compile, and it names the chain that got there.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../helpers/processes.ts';

/** The first chain of declaration files from `entry` to one importing `target`, or []. */
function chainTo(entry: string, target: string): string[] {
  const seen = new Set<string>();
  const walk = (file: string, path: string[]): string[] => {
    if (seen.has(file) || !existsSync(file)) return [];
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:from\s+|import\()\s*['"]([^'"]+)['"]/g)) {
      const spec = m[1]!;
      if (spec === target || spec.startsWith(`${target}/`)) return [...path, file];
      if (!spec.startsWith('.')) continue;
      const next = resolve(dirname(file), spec).replace(/\.(ts|js)$/, '.d.ts');
      const found = walk(next, [...path, file]);
      if (found.length > 0) return found;
    }
    return [];
  };
  return walk(entry, []).map((f) => relative(repoRoot, f));
}

describe('declarations a strict consumer reaches', () => {
  for (const entry of ['dist/src/index.d.ts', 'dist/inspector/index.d.ts']) {
    it(`${entry} reaches no XState declaration`, () => {
      const file = join(repoRoot, entry);
      expect(existsSync(file), 'dist/ is built by npm test').toBe(true);
      expect(chainTo(file, 'xstate')).toEqual([]);
    });
  }

  it('the walk finds XState where it is meant to be: spillway/machines', () => {
    expect(chainTo(join(repoRoot, 'dist/src/machines.d.ts'), 'xstate').length).toBeGreaterThan(0);
  });
});
