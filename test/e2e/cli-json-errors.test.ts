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
