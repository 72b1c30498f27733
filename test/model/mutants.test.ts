/**
 * Mutation check: the model oracle (./replay.ts) must fail on at least one path of each
 * deliberately broken task machine (./mutants.ts). An oracle that never fails proves nothing.
 * Each mutant's test stands alone; the line `mutants caught: N/4` is printed after the file.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { taskMachine } from '../../src/machines.ts';
import { makeSmallCheckpoint, suiteCheckpoint } from '../helpers/checkpoints.ts';
import { traverseModel } from './paths.ts';
import { OracleViolation, replayPath } from './replay.ts';
import { mutants } from './mutants.ts';

const { paths } = traverseModel();
const input = suiteCheckpoint((dir) => makeSmallCheckpoint(dir));
/** Mutants whose test ran and caught them in this run: for the printed line only. */
const caught = new Set<string>();

afterAll(() => {
  console.log(`mutants caught: ${caught.size}/${mutants().length}`);
});

describe('mutation check: the model oracle catches each broken machine', () => {
  for (const mutant of mutants()) {
    it(`catches: ${mutant.name}`, { timeout: 180_000 }, async () => {
      const failures: OracleViolation[] = [];
      const examples: string[] = [];
      for (const path of paths) {
        try {
          await replayPath(path, { fixture: input.made, machine: mutant.machine, hangMs: 3_000 });
        } catch (e) {
          // Only the oracle's verdicts count; anything else is a bug in the harness.
          if (!(e instanceof OracleViolation)) throw e;
          failures.push(e);
          if (examples.length < 2) examples.push(`${path.name}: ${e.message}`);
        }
      }
      const rules = [...new Set(failures.map((f) => f.rule))].join(', ');
      console.log(
        `mutant "${mutant.name}": ${failures.length}/${paths.length} paths fail (${rules})\n  ` +
          examples.join('\n  '),
      );
      expect(failures.length).toBeGreaterThan(0);
      caught.add(mutant.name);
    });
  }

  it('there are four mutants, each a different machine from the product and from each other', () => {
    const all = mutants();
    expect(all).toHaveLength(4);
    expect(new Set(all.map((m) => m.name)).size).toBe(4);
    expect(new Set([taskMachine, ...all.map((m) => m.machine)]).size).toBe(5);
  });
});
