/**
 * Statechart-driven suite: every path of the spec model that ends the task is replayed on the
 * real actors and files (./replay.ts), and the oracle (G1, G2, G3, G5 and conformance to the
 * model) is checked after every step. Prints one line:
 * `model coverage: transitions X/Y, abort paths A/B clean`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MadeCheckpoint } from '../../src/services/checkpoint/generator.ts';
import { traverseModel, transitionsOf } from './paths.ts';
import { replayPath } from './replay.ts';
import { makeSmallCheckpoint, removeDir, tempDir } from './support.ts';

const traversal = traverseModel();
const abortPaths = traversal.paths.filter((p) => p.isAbort);
const walked = new Set<string>();
let cleanAborts = 0;
let fixtureDir = '';
let fixture: MadeCheckpoint;

beforeAll(async () => {
  fixtureDir = await tempDir();
  fixture = await makeSmallCheckpoint(fixtureDir);
});

afterAll(async () => {
  await removeDir(fixtureDir);
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
      await replayPath(path, { fixture });
      for (const t of transitionsOf(path)) walked.add(t);
      if (path.isAbort) cleanAborts++;
    });
  }
});

describe('model coverage', () => {
  it('walks every transition of the model and every abort path cleanly', () => {
    const covered = traversal.transitions.filter((t) => walked.has(t)).length;
    const total = traversal.transitions.length;
    console.log(
      `model coverage: transitions ${covered}/${total}, abort paths ${cleanAborts}/${abortPaths.length} clean`,
    );
    expect(traversal.transitions.filter((t) => !walked.has(t))).toEqual([]);
    expect(cleanAborts).toBe(abortPaths.length);
    expect(abortPaths.length).toBeGreaterThanOrEqual(30);
  });
});
