/**
 * The import graph of the sources (src/, inspector/, bench/), walked from their relative imports
 * (types included: a type-only circle is still a circle a reader has to hold in the head):
 * - no circles;
 * - no arrow back up: src/services/ imports nothing of src/machines/, and neither imports the
 *   modules above them (src/*.ts: the public API and the recovery built on the machines), nor
 *   the pool or the CLI.
 * The walk is first run on a made-up graph with a circle, so the check can fail.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repo, sourcesUnder, specifiersOf, src } from './sources.ts';

type Graph = Map<string, string[]>;

/** file → the files it imports (relative imports that resolve to a scanned file). */
function importGraph(files: readonly string[]): Graph {
  const known = new Set(files);
  const graph: Graph = new Map();
  for (const file of files) {
    const targets = specifiersOf(readFileSync(file, 'utf8'))
      .filter((s) => s.startsWith('.'))
      .map((s) => resolve(dirname(file), s))
      .filter((t) => known.has(t));
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

/** Every circle, as the path of files that closes it (one per strongly connected part). */
function circles(graph: Graph): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string): void => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      const s = state.get(next);
      if (s === 'open') found.push([...stack.slice(stack.indexOf(next)), next]);
      else if (s === undefined) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) visit(node);
  return found;
}

const files = ['src', 'inspector', 'bench'].flatMap((d) => sourcesUnder(join(repo, d)));
const graph = importGraph(files);
const name = (f: string) => relative(repo, f);
const inside = (dir: string) => (f: string) => f.startsWith(join(src, dir) + sep);
// version.ts is a constant that imports nothing: below every layer, whatever its folder.
const topLevel = (f: string) => dirname(f) === src && f !== join(src, 'version.ts');

describe('import graph', () => {
  it('the walk finds a circle in a made-up graph, and none in a line', () => {
    const circle: Graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', ['a']],
    ]);
    expect(circles(circle)).toEqual([['a', 'b', 'c', 'a']]);
    expect(
      circles(
        new Map([
          ['a', ['b']],
          ['b', ['c']],
          ['c', []],
        ]),
      ),
    ).toEqual([]);
  });

  it('the sources import each other without a circle', () => {
    expect(graph.size).toBeGreaterThan(100);
    expect(circles(graph).map((c) => c.map(name).join(' → '))).toEqual([]);
  });

  it('no arrow back up: services never import machines, and neither imports the layers above', () => {
    const up: string[] = [];
    for (const [file, targets] of graph) {
      const services = inside('services')(file);
      if (!services && !inside('machines')(file)) continue;
      for (const t of targets) {
        const above =
          topLevel(t) ||
          inside('pool')(t) ||
          inside('cli')(t) ||
          (services && inside('machines')(t));
        if (above) up.push(`${name(file)} → ${name(t)}`);
      }
    }
    expect(up).toEqual([]);
  });
});
