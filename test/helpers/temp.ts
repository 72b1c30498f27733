/**
 * Temp dirs for tests. All of them carry the `spillway-test-` prefix, so the leftover check
 * (`find /tmp -path '*spillway*' -name 'task-*'`) catches a leak.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';

const made: string[] = [];

/** A fresh temp dir for one test, removed after it. */
export async function makeTempRoot(): Promise<string> {
  const dir = await tempDir();
  made.push(dir);
  return dir;
}

afterEach(async () => {
  while (made.length > 0) await removeDir(made.pop()!);
});

/**
 * A temp dir that outlives the test that made it (a suite's fixture in `beforeAll`): the caller
 * removes it with {@link removeDir}, usually in `afterAll`.
 */
export function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'spillway-test-'));
}

export async function removeDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}
