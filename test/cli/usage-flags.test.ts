/**
 * Every usage line lists every flag (issue 32): for each command module, each option its
 * parser declares (`'name': { type: … }` in its source, and the shared Flink and remote option
 * tables it spreads in) appears as `--name` in the usage line (the synopsis) the command prints.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../helpers/processes.ts';

const CLI = join(repoRoot, 'src', 'cli');
const COMMANDS = [
  'bench',
  'checkpoint',
  'demo',
  'flink-diff',
  'flink-ls',
  'flink-records',
  'flink-report',
  'flink-rewrite',
  'inspect',
  'recover',
  'soak',
  'sweep',
];
/** Options a parser takes that are not flags a user types. */
const NOT_FLAGS = new Set(['help']);

/** The option names declared in a source's parser specs (`name: { type: 'string' }`). */
function declared(source: string): string[] {
  return [
    ...source.matchAll(/['"]?([a-z][a-z0-9-]*)['"]?\s*:\s*\{\s*type:\s*'(?:string|boolean)'/g),
  ]
    .map((m) => m[1]!)
    .filter((name) => !NOT_FLAGS.has(name));
}

describe('every usage lists every flag its parser takes', () => {
  for (const command of COMMANDS) {
    it(`spillway ${command.replace('-', ' ')}`, async () => {
      const source = readFileSync(join(CLI, `${command}.ts`), 'utf8');
      const module = (await import(join(CLI, `${command}.ts`))) as { usage: string };
      let names = declared(source);
      // Shared tables spread into a parser: their flags are this command's too.
      if (/flinkOptionSpec/.test(source))
        names.push(...declared(readFileSync(join(CLI, 'flink-arg.ts'), 'utf8')));
      if (/inspectUsage/.test(source)) names.push('inspect', 'inspect-hold', 'wait-for-page');
      names = [...new Set(names)];
      expect(names.length).toBeGreaterThan(0);
      // The usage line itself: the synopsis before the first blank line.
      const synopsis = module.usage.slice(0, module.usage.indexOf('\n\n'));
      const missing = names.filter((n) => !new RegExp(`--${n}(?![a-z-])`).test(synopsis));
      expect(missing).toEqual([]);
    });
  }
});
