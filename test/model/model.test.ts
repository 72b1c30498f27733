/**
 * Statechart-driven suite: every path of the spec model that ends the task is replayed on the
 * real actors and files (./replay.ts), and the oracle (G1, G2, G3, G5 and conformance to the
 * model) is checked after every step. Each test stands alone: a path test proves its own path
 * clean, and the coverage test proves from the model alone that the replayed paths walk every
 * transition. After the file it prints what actually ran, as one line:
 * `model coverage: transitions X/Y, abort paths A/B clean`.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { suiteCheckpoint } from '../helpers/checkpoints.ts';
import { makeModeCheckpoint, modeOptions } from '../helpers/spill-mode.ts';
import { traverseModel, transitionsOf } from './paths.ts';
import { replayPath } from './replay.ts';

const traversal = traverseModel();
const abortPaths = traversal.paths.filter((p) => p.isAbort);
/** What the path tests that passed in this run walked: for the printed line only. */
const ran = { walked: new Set<string>(), cleanAborts: 0 };
// makeSmallCheckpoint's defaults; in filtering mode a v2 record checkpoint of the same size.
const input = suiteCheckpoint(
  async (dir) =>
    (
      await makeModeCheckpoint(dir, {
        kib: 128,
        seed: 7,
        gates: 1,
        channels: 3,
        maxEntryBytes: 6 * 1024,
      })
    ).made,
);

afterAll(() => {
  const covered = traversal.transitions.filter((t) => ran.walked.has(t)).length;
  console.log(
    `model coverage: transitions ${covered}/${traversal.transitions.length}, abort paths ${ran.cleanAborts}/${abortPaths.length} clean`,
  );
});

describe('spec model traversal', () => {
  it('finds a shortest path to every ending and at least 30 abort paths among the simple paths', () => {
    expect(traversal.shortest.map((p) => p.ending).sort()).toEqual([
      'cancelled',
      'failed',
      'finished',
      'stopped',
    ]);
    // Shortest paths are simple: the union adds nothing the simple paths do not have.
    expect(traversal.paths.length).toBe(traversal.simple.length);
    expect(abortPaths.length).toBeGreaterThanOrEqual(30);
  });
});

describe('every model path replayed on the real task keeps G1, G2, G3 and G5', () => {
  for (const path of traversal.paths) {
    it(`${path.ending}: ${path.name}`, async () => {
      // The oracle throws on the first broken promise; returning means this path is clean.
      const outcome = await replayPath(path, { fixture: input.made, ...modeOptions() });
      if (path.isAbort) expect(outcome.error).toBeInstanceOf(Error);
      else expect(outcome.report?.bytesDelivered).toBe(input.made.payloadBytes);
      for (const t of transitionsOf(path)) ran.walked.add(t);
      if (path.isAbort) ran.cleanAborts++;
    });
  }
});

describe('model coverage', () => {
  it('the replayed paths walk every transition of the model, and at least 30 of them are abort paths', () => {
    const walked = new Set(traversal.paths.flatMap(transitionsOf));
    expect(traversal.transitions.filter((t) => !walked.has(t))).toEqual([]);
    // Every step of every path is a transition of the model (no path invents one).
    expect([...walked].filter((t) => !traversal.transitions.includes(t))).toEqual([]);
    expect(abortPaths.length).toBeGreaterThanOrEqual(30);
    expect(abortPaths.every((p) => p.ending !== 'finished')).toBe(true);
  });
});
