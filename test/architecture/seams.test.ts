/**
 * The seams are the only way in (docs/architecture.md), checked on the sources:
 * - nothing under src/ but services/fs.ts (and the open file it hands out) imports node:fs or node:fs/promises (the CLI aside:
 *   it reads the user's files before any recovery starts); the bench lives outside src/;
 * - the product outside src/pool/ (the demo's fault injection, a feature of `spillway demo`)
 *   imports no fault or hook registry: the file seam counts and fails nothing unless a fault
 *   seam is handed to it;
 * - one code path: nothing in src/ asks whether a fault seam is installed (the product's seam
 *   and a faulty one run the same algorithm, synchronous calls included);
 * - no stage calls a task hook: the hooks (tests, the demo's pool) run where the stages reach
 *   the task's mailbox and executor, wrapped by machines/task-hooks.ts only for a task started
 *   with hooks;
 * - the product carries no switch for the mutation tests: no option swaps the task machine
 *   (tests call `startRecoveryOn` with a machine made in their own code) and no boolean turns a
 *   guarantee off (the spill actor is composed from its rules, the product's in `spillRules`).
 * Each check is first run on a violating source, so it can fail.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repo, sourcesUnder, specifiersOf, src } from './sources.ts';

/** The file seam: fs.ts and the open file it hands out (fs-file.ts). */
const FS_SEAM = [join(src, 'services', 'fs.ts'), join(src, 'services', 'fs-file.ts')];
const FAULT_SEAM = join(src, 'pool', 'fault-seam.ts');
const TASK_HOOKS = join(src, 'machines', 'task-hooks.ts');
const under = (dir: string) => (file: string) => file.startsWith(join(src, dir) + sep);

/** Whether a source imports node's file system module itself. */
function importsNodeFs(text: string): boolean {
  return specifiersOf(text).some((s) => /^(node:)?fs(\/promises)?$/.test(s));
}

/** Whether a source (at `file`) imports the fault registry, or names its arming calls. */
function importsFaultRegistry(file: string, text: string): boolean {
  const viaPath = specifiersOf(text).some(
    (s) => s.startsWith('.') && resolve(dirname(file), s) === FAULT_SEAM,
  );
  return viaPath || /\b(injectFault|setFsHook|fsOpCounts|resetFsSeam)\s*\(/.test(text);
}

/**
 * Whether a source asks whether a fault seam is installed (to choose another algorithm): an
 * interceptor or seam compared with undefined, called optionally, or a `syncAllowed` question.
 */
function readsSeamPresence(text: string): boolean {
  return /\b(interceptor|seam|faults)\s*(===|!==|==|!=)\s*(undefined|null)\b|\b(undefined|null)\s*(===|!==)\s*(this\.)?(interceptor|seam)\b|\binterceptor\?\.|\bsyncAllowed\b/i.test(
    text,
  );
}

/** Whether a source calls one of the task hooks (`beforeStage`, `afterDrainerBuilt`, `beforeDrain`). */
function callsTaskHook(text: string): boolean {
  return /\.(beforeStage|afterDrainerBuilt|beforeDrain)\s*(\?\.)?\s*\(/.test(text);
}

/** Whether a source declares a machine-swapping option or a guarantee-off switch. */
function hasMutantSwitch(text: string): boolean {
  return /\bmachine\?\s*:|\?\?\s*taskMachine\b|\b(handOffAtAcquisition|honourAbort)\s*\??\s*[:=]/.test(
    text,
  );
}

describe('seams', () => {
  it('the checks flag a direct fs import and a fault registry import', () => {
    expect(importsNodeFs("import { readFileSync } from 'node:fs';")).toBe(true);
    expect(importsNodeFs("import type { Stats } from 'fs';")).toBe(true);
    expect(importsNodeFs("import { fsSeam } from '../fs.ts';")).toBe(false);
    const file = join(src, 'services', 'spill', 'x.ts');
    expect(
      importsFaultRegistry(file, "import { faultSeam } from '../../pool/fault-seam.ts';"),
    ).toBe(true);
    expect(importsFaultRegistry(file, "seam.injectFault({ op: 'rm', code: 'EIO' });")).toBe(true);
    expect(importsFaultRegistry(file, "import { fsSeam } from '../fs.ts';")).toBe(false);
  });

  it('the check flags a source asking whether a seam is installed', () => {
    expect(
      readsSeamPresence('if (interceptor === undefined && removeSmallTreeSync(p)) return;'),
    ).toBe(true);
    expect(readsSeamPresence('  return interceptor?.before(op, path);')).toBe(true);
    expect(readsSeamPresence('const sync = fsSeam.syncAllowed();')).toBe(true);
    expect(readsSeamPresence('    this.interceptor.beforeSync(op, path);')).toBe(false);
    expect(readsSeamPresence('    fsSeam.linkSync(inStaging + name, target);')).toBe(false);
  });

  it('one code path: nothing in src/ reads whether a fault seam is installed', () => {
    const found = sourcesUnder(src)
      .filter((f) => !under('pool')(f))
      .filter((f) => readsSeamPresence(readFileSync(f, 'utf8')));
    expect(found.map((f) => relative(repo, f))).toEqual([]);
  });

  it('the check flags a task hook called, not one handed in', () => {
    expect(callsTaskHook("await services.hooks.beforeStage?.('drain', services);")).toBe(true);
    expect(callsTaskHook('input.services.hooks.afterDrainerBuilt?.(drainer);')).toBe(true);
    expect(callsTaskHook('await this.hooks.beforeDrain(drainer);')).toBe(true);
    expect(
      callsTaskHook("hooks: { beforeStage: (stage) => void (fetching &&= stage === 'fetch') },"),
    ).toBe(false);
    expect(callsTaskHook('  beforeDrain?(drainer: Drainer): void | Promise<void>;')).toBe(false);
  });

  it('no stage calls a task hook: outside src/pool/ only machines/task-hooks.ts runs them', () => {
    const found = sourcesUnder(src)
      .filter((f) => f !== TASK_HOOKS && !under('pool')(f))
      .filter((f) => callsTaskHook(readFileSync(f, 'utf8')));
    expect(found.map((f) => relative(repo, f))).toEqual([]);
  });

  it('the check flags a machine option and a guarantee-off switch', () => {
    expect(hasMutantSwitch('  machine?: typeof taskMachine;')).toBe(true);
    expect(hasMutantSwitch('createActor(options.machine ?? taskMachine, {')).toBe(true);
    expect(hasMutantSwitch('  readonly honourAbort?: boolean;')).toBe(true);
    expect(
      hasMutantSwitch('const handOffAtAcquisition = wiring.handOffAtAcquisition ?? true;'),
    ).toBe(true);
    expect(hasMutantSwitch('  return startRecoveryOn(taskMachine, options);')).toBe(false);
  });

  it('the product has no switch for the mutation tests (machine option, guarantee off)', () => {
    const found = sourcesUnder(src).filter((f) => hasMutantSwitch(readFileSync(f, 'utf8')));
    expect(found.map((f) => relative(repo, f))).toEqual([]);
  });

  it('nothing under src/ but services/fs.ts (and its fs-file.ts) imports node:fs (the CLI aside)', () => {
    const found = sourcesUnder(src)
      .filter((f) => !FS_SEAM.includes(f) && !under('cli')(f))
      .filter((f) => importsNodeFs(readFileSync(f, 'utf8')));
    expect(found.map((f) => relative(repo, f))).toEqual([]);
  });

  it('the product outside src/pool/ imports no fault or hook registry', () => {
    const found = sourcesUnder(src)
      .filter((f) => !under('pool')(f))
      .filter((f) => importsFaultRegistry(f, readFileSync(f, 'utf8')));
    expect(found.map((f) => relative(repo, f))).toEqual([]);
  });
});
