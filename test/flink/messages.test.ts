/**
 * Messages that say what happened (issue 32): an SPWC file given to `flink ls`, a Flink job dir
 * given instead of its `chk-N`, and a checkpoint URL that answers a web page (a dir URL without
 * its trailing slash, on a server with directory listings) — each one line, exit 2, naming what
 * it is and what to pass; a dir URL without the slash is read as the dir it names.
 */
import { cp, mkdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFileServer, type FileServer } from '../helpers/http-file-server.ts';
import { makeTempRoot, repoRoot, runCli } from '../e2e/harness.ts';

const JOB = join(
  repoRoot,
  'test',
  'fixtures',
  'flink',
  '2.3.0-file',
  '821b16614a1d40b11808cbf157412d2f',
);
const lines = (text: string) => text.trim().split('\n');

const servers: FileServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.stop();
});

describe('what was given, named', () => {
  it('an SPWC checkpoint given to flink ls says so and names the command that reads it', async () => {
    const run = await runCli([
      'flink',
      'ls',
      join(repoRoot, 'test', 'fixtures', 'vectors', 'tiny.spwc'),
    ]);
    expect(run.code).toBe(2);
    expect(lines(run.stderr)).toHaveLength(1);
    expect(run.stderr).toMatch(
      /an SPWC checkpoint, not a Flink _metadata file: read it with 'spillway recover FILE --out DIR'/,
    );
  });

  it('a Flink job dir given to flink ls or recover lists the chk-N it holds and names the newest to pass', async () => {
    const root = await makeTempRoot();
    for (const args of [
      ['flink', 'ls', JOB],
      ['recover', JOB, '--operator', 'slow-join', '--subtask', '0', '--out', join(root, 'o')],
    ]) {
      const run = await runCli(args);
      expect(run.code, run.stderr).toBe(2);
      expect(lines(run.stderr)).toHaveLength(1);
      expect(run.stderr).toContain(
        `${JOB}: a Flink job dir, not a checkpoint: it holds chk-3; pass one of them (the newest: ${join(JOB, 'chk-3')})`,
      );
    }
  });

  it('a chk-N URL without its trailing slash that answers the dir listing is read as the dir', async () => {
    const root = await makeTempRoot();
    await mkdir(join(root, 'job'));
    await cp(join(JOB, 'chk-3'), join(root, 'job', 'chk-3'), { recursive: true });
    const server = await startFileServer(root, { listings: true });
    servers.push(server);
    const run = await runCli(['flink', 'ls', `${server.url}/job/chk-3`]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/Flink checkpoint 3, metadata v6/);
  });

  it('a URL that answers a web page and holds no _metadata says it is a web page and names the _metadata to try', async () => {
    const root = await makeTempRoot();
    await mkdir(join(root, 'job', 'empty'), { recursive: true });
    const server = await startFileServer(root, { listings: true });
    servers.push(server);
    const flink = await runCli(['flink', 'ls', `${server.url}/job/empty`]);
    expect(flink.code).toBe(2);
    expect(lines(flink.stderr)).toHaveLength(1);
    expect(flink.stderr).toContain(
      `the server answered a web page (HTML), not a Flink _metadata file; did you mean ${server.url}/job/empty/_metadata?`,
    );
    expect(flink.stderr).not.toMatch(/magic 0x3c/);
    const spwc = await runCli(['recover', `${server.url}/job/empty`, '--out', join(root, 'out')]);
    expect(spwc.code).toBe(2);
    expect(spwc.stderr).toContain('the server answered a web page (HTML), not a checkpoint file');
  });

  it('a moved checkpoint is refused with the exact --relocate to pass, and passing it recovers', async () => {
    const root = await makeTempRoot();
    const merging = join(repoRoot, 'test', 'fixtures', 'flink', '1.20.5-merging');
    const fixture = JSON.parse(await readFile(join(merging, 'fixture.json'), 'utf8')) as {
      checkpoint: string;
      originalJobDir: string;
    };
    const checkpoint = join(merging, fixture.checkpoint);
    const jobDir = dirname(checkpoint);
    const args = ['recover', checkpoint, '--operator', 'slow-join', '--subtask', '0'];
    const refused = await runCli([...args, '--out', join(root, 'refused')]);
    expect(refused.code).toBe(2);
    expect(lines(refused.stderr)).toHaveLength(1);
    const flag = `--relocate ${fixture.originalJobDir}=${jobDir}`;
    expect(refused.stderr).toContain(flag);
    const [name, value] = [flag.slice(0, 10), flag.slice(11)];
    const passed = await runCli([...args, name, value, '--out', join(root, 'out')]);
    expect(passed.code, passed.stderr).toBe(0);
  });
});
