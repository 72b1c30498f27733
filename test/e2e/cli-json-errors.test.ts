/**
 * DESIGN §4: `--json` prints one JSON object on stdout on failure too,
 * `{ "error": { "code", "message", … } }`, with the same exit code as without it; a typo'd
 * command or flag gets "did you mean".
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeTempRoot, runCli } from './harness.ts';

describe('--json on failure', () => {
  it('a missing checkpoint with --json prints { error: { code, message } } on stdout, exit 2 as without it', async () => {
    const dir = await makeTempRoot();
    const args = ['recover', join(dir, 'missing.spwc'), '--out', join(dir, 'out')];
    const plain = await runCli(args);
    const json = await runCli([...args, '--json']);
    expect(plain.code).toBe(2);
    expect(json.code).toBe(plain.code);
    const parsed = JSON.parse(json.stdout) as { error: Record<string, unknown> };
    expect(parsed.error).toMatchObject({
      code: 'ERR_SPILLWAY_CHECKPOINT_PATH',
      errno: 'ENOENT',
      message: expect.stringContaining('missing.spwc'),
    });
    expect(json.stdout.trim().split('\n')).toHaveLength(1);
  });

  it('a corrupt checkpoint with --json names its file and offset, exit 2', async () => {
    const dir = await makeTempRoot();
    const bad = join(dir, 'bad.spwc');
    await writeFile(bad, Buffer.from('SPWX\0\0\0\x01'));
    const json = await runCli(['recover', bad, '--out', join(dir, 'out'), '--json']);
    expect(json.code).toBe(2);
    const parsed = JSON.parse(json.stdout) as { error: Record<string, unknown> };
    expect(parsed.error).toMatchObject({ code: 'ERR_SPILLWAY_CORRUPT_CHECKPOINT', offset: 0 });
  });

  it('a usage error with --json is a JSON object too, exit 2', async () => {
    const json = await runCli(['recover', '--outt', 'x', '--json']);
    expect(json.code).toBe(2);
    const parsed = JSON.parse(json.stdout) as { error: Record<string, unknown> };
    expect(parsed.error).toMatchObject({ code: 'ERR_SPILLWAY_USAGE' });
  });
});

describe('did you mean', () => {
  it("a typo'd command or flag names the closest one", async () => {
    const command = await runCli(['recovr']);
    expect(command.code).toBe(2);
    expect(command.stderr).toMatch(/unknown command 'recovr' \(did you mean 'recover'\?\)/);
    const flag = await runCli(['sweep', '--dry-runn']);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toMatch(/Unknown option '--dry-runn' \(did you mean '--dry-run'\?\)/);
  });
});

describe('help and usage say what is wrong', () => {
  it('recover --help describes --out, --spill-root and --max-spill-file-bytes with its suffixes', async () => {
    const help = await runCli(['recover', '--help']);
    expect(help.code).toBe(0);
    for (const option of ['--out DIR', '--spill-root DIR', '--max-spill-file-bytes N']) {
      expect(help.stdout).toMatch(new RegExp(`^  ${option}`, 'm'));
    }
    expect(help.stdout).toMatch(/4M, 512K, 1G/);
  });

  it("--mb -5 says a negative value is not accepted, not 'ambiguous'", async () => {
    const dir = await makeTempRoot();
    const run = await runCli(['checkpoint', 'make', '--out', join(dir, 'x.spwc'), '--mb', '-5']);
    expect(run.code).toBe(2);
    expect(run.stderr).not.toMatch(/ambiguous/);
    expect(run.stderr).toMatch(
      /--mb must be followed by its value; .*negative number.* not accepted/,
    );
  });

  it('sweep --spill-root of a missing dir is bad input: exit 2, text and JSON alike', async () => {
    const dir = await makeTempRoot();
    const missing = join(dir, 'nonexistent');
    const text = await runCli(['sweep', '--spill-root', missing]);
    const json = await runCli(['sweep', '--spill-root', missing, '--json']);
    expect(text.code).toBe(2);
    expect(json.code).toBe(2);
    expect(text.stderr).toContain(missing);
    const parsed = JSON.parse(json.stdout) as { error: Record<string, unknown> };
    expect(parsed.error).toMatchObject({ code: 'ERR_SPILLWAY_SPILL_ROOT' });
    expect(String(parsed.error.message)).toContain(missing);
  });
});

describe('demo --help', () => {
  it('keeps a space between every fault kind and its description', async () => {
    const help = await runCli(['demo', '--help']);
    expect(help.code).toBe(0);
    const rows = help.stdout.split('\n').filter((l) => /^ {2}[a-z]+(-[a-z]+)* +\S/.test(l));
    expect(rows.length).toBeGreaterThanOrEqual(12);
    expect(help.stdout).toMatch(/^ {2}cancel-after-failure {2,}cancel while a failure cleans up$/m);
  });
});
