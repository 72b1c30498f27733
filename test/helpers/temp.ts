import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';

const made: string[] = [];

/**
 * A fresh temp dir for one test, removed after it. The `spillway-test-` prefix lets the
 * leftover check (`find /tmp -path '*spillway*' -name 'task-*'`) catch a leak.
 */
export async function makeTempRoot(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'spillway-test-'));
  made.push(dir);
  return dir;
}

afterEach(async () => {
  while (made.length > 0) await rm(made.pop()!, { recursive: true, force: true });
});
