/**
 * Layout facts (docs/architecture.md), checked on the sources:
 * - no folder under src/services/ imports one that imports it back (a folder is a layer: the
 *   arrows between folders run one way);
 * - no file in src/, inspector/ or bench/ is over 450 lines.
 * What does not hold yet is listed here by name, so the list can only shrink: a new circle or
 * a new long file fails, and so does an entry that no longer needs to be listed.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repo, sourcesUnder, specifiersOf, src } from './sources.ts';

const services = join(src, 'services');
const MAX_LINES = 450;

/** Folder circles still to break, each as `a ⇄ b` (sorted). */
const KNOWN_CIRCLES: readonly string[] = [];

/** Files still over MAX_LINES, with the most lines each may have until it is split. */
const KNOWN_LONG: Readonly<Record<string, number>> = {};

/** The folder of services/ a file is in ('' for a file directly in services/). */
function folderOf(file: string): string {
  const rel = relative(services, file);
  return rel.includes(sep) ? rel.split(sep)[0]! : '';
}

/** Every `a ⇄ b` of folders under services/ that import each other. */
function circles(files: readonly string[], read: (f: string) => string): string[] {
  const edges = new Set<string>();
  for (const file of files) {
    const from = folderOf(file);
    for (const s of specifiersOf(read(file))) {
      if (!s.startsWith('.')) continue;
      const target = resolve(dirname(file), s);
      if (!target.startsWith(services + sep)) continue;
      const to = folderOf(target);
      if (from !== '' && to !== '' && from !== to) edges.add(`${from} → ${to}`);
    }
  }
  const out = new Set<string>();
  for (const e of edges) {
    const [a, b] = e.split(' → ') as [string, string];
    if (edges.has(`${b} → ${a}`)) out.add([a, b].sort().join(' ⇄ '));
  }
  return [...out].sort();
}

describe('layout facts', () => {
  it('the check finds a folder circle', () => {
    const a = join(services, 'spill', 'x.ts');
    const b = join(services, 'rescale', 'y.ts');
    const text: Record<string, string> = {
      [a]: "import { y } from '../rescale/y.ts';",
      [b]: "import type { X } from '../spill/x.ts';\nimport { e } from '../errors.ts';",
    };
    expect(circles([a, b], (f) => text[f]!)).toEqual(['rescale ⇄ spill']);
  });

  it('no folder under services/ imports one that imports it back (but the listed ones)', () => {
    const found = circles(sourcesUnder(services), (f) => readFileSync(f, 'utf8'));
    expect(found).toEqual([...KNOWN_CIRCLES].sort());
  });

  it(`no file in src/, inspector/ or bench/ is over ${MAX_LINES} lines (but the listed ones, which may only shrink)`, () => {
    // Every code file: the TypeScript and the inspector page's ES modules.
    const files = ['src', 'inspector', 'bench'].flatMap((d) =>
      readdirSync(join(repo, d), { recursive: true, withFileTypes: true })
        .filter((e) => e.isFile() && /\.(ts|js|mjs)$/.test(e.name))
        .map((e) => join(e.parentPath, e.name)),
    );
    const problems: string[] = [];
    const long = new Set<string>();
    for (const file of files) {
      const rel = relative(repo, file);
      const lines = readFileSync(file, 'utf8').split('\n').length - 1;
      if (lines <= MAX_LINES) continue;
      long.add(rel);
      const allowed = KNOWN_LONG[rel];
      if (allowed === undefined) problems.push(`${rel}: ${lines} lines`);
      else if (lines > allowed) problems.push(`${rel}: ${lines} lines (was ${allowed})`);
    }
    for (const rel of Object.keys(KNOWN_LONG)) {
      if (!long.has(rel)) problems.push(`${rel} is no longer over ${MAX_LINES}: unlist it`);
    }
    expect(problems).toEqual([]);
  });
});
