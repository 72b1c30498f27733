/** `spillway sweep [--spill-root DIR] [--json]` */
import { resolveSpillRoot } from '../services/spill-root/spill-root.ts';
import { sweepSpillRoot } from '../services/spill-root/sweep.ts';
import { parse, stringOption } from './args.ts';
import { printJson, table, type Io } from './io.ts';

export const usage = `usage: spillway sweep [--spill-root DIR] [--json]

Removes the spill files of Spillway processes that are provably dead (killed with -9, OOM, a
reboot): another boot id, no such pid, or the same pid with another start time. Live
processes' files are never touched; symlinks are never followed.
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const { values } = parse(argv, { 'spill-root': { type: 'string' }, json: { type: 'boolean' } });
  if (values.help) {
    io.out.write(usage);
    return 0;
  }
  const root = resolveSpillRoot(stringOption(values, 'spill-root'));
  const report = await sweepSpillRoot(root, {
    log: values.json ? () => undefined : (line) => io.err.write(`${line}\n`),
  });
  if (values.json) printJson(io, report);
  else {
    io.err.write(
      `swept ${root}\n` +
        table([
          ['swept', report.swept.length],
          ['kept', report.kept.length],
          ['errors', report.errors.length],
        ]),
    );
  }
  return report.errors.length > 0 ? 1 : 0;
}
