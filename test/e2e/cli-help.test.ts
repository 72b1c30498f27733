/**
 * The first minutes with the command line (issue 32): the top-level help leads with what a
 * Flink user does, `spillway help COMMAND` works as `COMMAND --help` does, an unknown command
 * points at the help that exists, and usage lines name every flag.
 */
import { describe, expect, it } from 'vitest';
import { runCli } from './harness.ts';

describe('help that leads a newcomer', () => {
  it('the top-level help leads with the Flink commands, before the demo and the bench', async () => {
    const help = await runCli(['--help']);
    expect(help.code).toBe(0);
    const text = help.stdout;
    expect(text).toMatch(/Apache Flink checkpoint/);
    const flink = text.indexOf('\n  flink ');
    const recover = text.indexOf('\n  recover ');
    expect(flink).toBeGreaterThan(0);
    expect(recover).toBeGreaterThan(0);
    for (const later of ['\n  demo ', '\n  bench ', '\n  soak ']) {
      expect(text.indexOf(later)).toBeGreaterThan(Math.max(flink, recover));
    }
  });

  for (const command of ['recover', 'flink', 'sweep', 'inspect', 'checkpoint']) {
    it(`spillway help ${command} prints the same usage as spillway ${command} --help`, async () => {
      const [viaHelp, viaFlag] = await Promise.all([
        runCli(['help', command]),
        runCli([command, '--help']),
      ]);
      expect(viaHelp.code, viaHelp.stderr).toBe(0);
      expect(viaHelp.stdout).toMatch(new RegExp(`^usage: spillway ${command}`));
      expect(viaHelp.stdout).toBe(viaFlag.stdout);
    });
  }

  it('an unknown command names the closest one and points at spillway --help', async () => {
    const run = await runCli(['bogus']);
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split('\n')).toEqual([
      "spillway: unknown command 'bogus' (see 'spillway --help')",
    ]);
    const typo = await runCli(['help', 'recovr']);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain("unknown command 'recovr' (did you mean 'recover'?)");
    expect(typo.stderr).toContain("(see 'spillway --help')");
  });

  it("inspect's usage line lists --wait-for-page", async () => {
    const help = await runCli(['inspect', '--help']);
    const synopsis = help.stdout.slice(0, help.stdout.indexOf('\n\n'));
    expect(synopsis).toContain('--wait-for-page');
  });
});
