/**
 * B6 (issue 34): nothing a checkpoint, a path or a server names can command the terminal. A
 * local Flink checkpoint under a directory whose name holds ESC sequences (retitle, clear), a
 * forged line (LF, CR), C1 controls, U+2028/U+2029 and the bidi overrides and isolates, with an
 * operator named the same way, is listed and recovered by the real CLI: every human-facing line
 * (the `flink ls` header and table, `recovered <path>`, `out <dir>`, errors) shows them as
 * escapes, and the `--json` output keeps the exact strings.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { oneLine } from '../../src/cli/terminal-text.ts';
import { buildFlinkMetadata, oneInputChannel, opId } from '../helpers/flink-metadata-builder.ts';
import { makeTempRoot, runCli } from './harness.ts';

/** What a terminal acts on: one of each kind the issue names. */
const HOSTILE = [
  '\u001b]0;pwned\u0007',
  '\u001b[2J',
  '\nspillway recover: forged line\r',
  '\u009b31m',
  '\u0085',
  '\u2028\u2029',
  '\u202a\u202b\u202c\u202d\u202e',
  '\u2066\u2067\u2068\u2069',
  '\u007f\u0000'.slice(0, 1),
].join('');
const UNSAFE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

const STATE = Buffer.from([0, 0, 0, 0, 0, 0, 0, 2, 7, 8]);
const operator = opId(0x66);

/** A checkpoint dir under a hostile name; its operator is named the same hostile way. */
async function hostileCheckpoint(root: string): Promise<string> {
  const chk = join(root, `job${HOSTILE}`, 'chk-1');
  await mkdir(chk, { recursive: true });
  await writeFile(join(chk, 'state'), STATE);
  const metadata = buildFlinkMetadata(
    oneInputChannel({
      version: 5,
      id: operator,
      name: `op${HOSTILE}`,
      uid: `uid${HOSTILE}`,
      payloadBytes: 2,
      delegate: { kind: 'relative', relativePath: 'state', size: STATE.length },
    }),
  );
  await writeFile(join(chk, '_metadata'), metadata);
  return chk;
}

/** Every line but its own line break is inert. */
function expectInert(text: string, where: string): void {
  for (const line of text.split('\n')) {
    expect(UNSAFE.test(line), `${where}: ${JSON.stringify(line)}`).toBe(false);
  }
  expect(text).not.toContain('\nspillway recover: forged line');
}

describe('B6 no terminal injection through a printed path, name or message', () => {
  it('oneLine escapes C0 (ESC, BEL, CR, LF), DEL, C1, U+2028/2029 and the bidi controls', () => {
    expect(UNSAFE.test(oneLine(HOSTILE))).toBe(false);
    expect(oneLine('a\u001b[2Jb\u202ec\u2066d\u0085e\n')).toBe(
      'a\\x1b[2Jb\\u202ec\\u2066d\\x85e\\n',
    );
    expect(oneLine('plain /path/ä €')).toBe('plain /path/ä €');
  });

  it('flink ls: the header and the table are inert; --json keeps the exact strings', async () => {
    const root = await makeTempRoot();
    const chk = await hostileCheckpoint(root);
    const ls = await runCli(['flink', 'ls', chk]);
    expect(ls.code, ls.stderr).toBe(0);
    expectInert(ls.stdout, 'flink ls');
    expect(ls.stdout).toContain('\\x1b]0;pwned\\x07');
    const json = await runCli(['flink', 'ls', chk, '--json']);
    expect(json.code, json.stderr).toBe(0);
    const listing = JSON.parse(json.stdout) as { operators: { name?: string; uid?: string }[] };
    expect(listing.operators[0]!.name).toBe(`op${HOSTILE}`);
    expect(listing.operators[0]!.uid).toBe(`uid${HOSTILE}`);
  }, 60_000);

  it('recover: `recovered <path>` and `out <dir>` are inert; --json keeps the exact paths', async () => {
    const root = await makeTempRoot();
    const chk = await hostileCheckpoint(root);
    const out = join(root, `out${HOSTILE}`);
    const args = ['--spill-root', root, '--operator', operator, '--subtask', '0'];
    const run = await runCli(['recover', chk, '--out', out, ...args]);
    expect(run.code, run.stderr).toBe(0);
    expectInert(run.stderr, 'recover');
    expect(run.stderr).toMatch(/recovered .*\\x1b\[2J/);
    const jsonOut = join(root, `json${HOSTILE}`);
    const json = await runCli(['recover', chk, '--out', jsonOut, '--json', ...args]);
    expect(json.code, json.stderr).toBe(0);
    const result = JSON.parse(json.stdout) as { checkpoint: string; out: string };
    expect(result.checkpoint).toBe(chk);
    expect(result.out).toBe(jsonOut);
  }, 60_000);

  it('errors naming a hostile path are one inert line', async () => {
    const root = await makeTempRoot();
    const chk = await hostileCheckpoint(root);
    const missing = join(chk, `nothing${HOSTILE}`);
    const run = await runCli(['recover', missing, '--out', join(root, 'o'), '--spill-root', root]);
    expect(run.code).toBe(2);
    expectInert(run.stderr, 'recover error');
    const ls = await runCli(['flink', 'ls', missing]);
    expect(ls.code).toBe(2);
    expectInert(ls.stderr, 'flink ls error');
  }, 60_000);
});
