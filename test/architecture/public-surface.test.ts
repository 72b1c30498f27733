/**
 * The public entries (package.json `exports`) say what they export, name by name, and export
 * nothing that exists only for tests or the demo's fault injection:
 * - no `export *` (a name added to an inner module must not become public unnoticed);
 * - no test-only name among everything an entry exports, as TypeScript resolves it (re-exports
 *   followed): the task hooks, the spill rules the model suite's mutants replace, the machine
 *   swap, the fault seam and its arming calls.
 * Each check is first run on a violating source, so it can fail.
 */
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { repo } from './sources.ts';

/** The sources behind package.json's `exports` (`dist/X.js` ← `X.ts`). */
function entries(): string[] {
  const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as {
    exports: Record<string, string | { default?: string }>;
  };
  return Object.values(pkg.exports)
    .map((e) => (typeof e === 'string' ? e : e.default))
    .filter((p): p is string => p !== undefined && p.endsWith('.js'))
    .map((p) => join(repo, p.replace(/^\.\/dist\//, '').replace(/\.js$/, '.ts')));
}

/** Names only tests and the demo's pool may use. */
const TEST_ONLY = [
  'TaskHooks',
  'withHooks',
  'checkHookTargets',
  'HOOK_TARGETS',
  'SpillRules',
  'spillRules',
  'createSpillCheckpoint',
  'startRecoveryOn',
  'FaultSeam',
  'faultSeam',
  'FsInterceptor',
  'interceptFs',
  'injectFault',
  'setFsHook',
  'setFsSyncHook',
];

function hasExportStar(text: string): boolean {
  return /^\s*export\s+(type\s+)?\*/m.test(text);
}

/** Every name each entry exports, re-exports resolved by the compiler. */
function exportedNames(files: readonly string[]): Map<string, string[]> {
  const program = ts.createProgram([...files], {
    allowImportingTsExtensions: true,
    noEmit: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    skipLibCheck: true,
  });
  const checker = program.getTypeChecker();
  const out = new Map<string, string[]>();
  for (const file of files) {
    const source = program.getSourceFile(file);
    const symbol = source === undefined ? undefined : checker.getSymbolAtLocation(source);
    out.set(
      file,
      symbol === undefined ? [] : checker.getExportsOfModule(symbol).map((s) => s.name),
    );
  }
  return out;
}

describe('public surface', () => {
  it('the checks flag an export * and find the entries', () => {
    expect(hasExportStar("export * from './machines/ownership.ts';")).toBe(true);
    expect(hasExportStar("export type * from './machines/events.ts';")).toBe(true);
    expect(hasExportStar("export { takeTaskDir } from './machines/ownership.ts';")).toBe(false);
    const found = entries().map((f) => relative(repo, f));
    expect(found).toEqual(expect.arrayContaining(['src/index.ts', 'src/machines.ts']));
  });

  it('no public entry re-exports with export *', () => {
    const found = entries().filter((f) => hasExportStar(readFileSync(f, 'utf8')));
    expect(found.map((f) => relative(repo, f))).toEqual([]);
  });

  it('no public entry exports a test-only name', () => {
    // First on a module that does: the check can fail.
    const violating = join(repo, 'src', 'machines', 'task-services.ts');
    const names = exportedNames([...entries(), violating]);
    expect(names.get(violating)).toContain('TaskHooks');
    const found = entries().flatMap((f) =>
      (names.get(f) ?? [])
        .filter((n) => TEST_ONLY.includes(n))
        .map((n) => `${relative(repo, f)}: ${n}`),
    );
    expect(found).toEqual([]);
    expect(names.get(join(repo, 'src', 'index.ts'))).toContain('recoverChannelState');
  });
});
