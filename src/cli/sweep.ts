/** `spillway sweep [--spill-root DIR] [--dry-run] [--json]` */
import { oneLine } from './terminal-text.ts';
import { join, resolve } from 'node:path';
import { listSpillRoot, type SpillRootListing } from '../services/spill-root/listing.ts';
import { resolveSpillRoot } from '../services/spill-root/spill-root.ts';
import { sweepSpillRoot } from '../services/spill-root/sweep.ts';
import { parse, stringOption } from './args.ts';
import { mib, printJson, table, type Io } from './io.ts';

export const usage = `usage: spillway sweep [--spill-root DIR] [--dry-run] [--json]

Removes the spill files of Spillway processes that are provably dead (killed with -9, OOM, a
reboot): another boot id, no such pid, or the same pid with another start time. Live
processes' files are never touched; symlinks are never followed.

  --spill-root DIR  the root to sweep (default SPILLWAY_SPILL_ROOT, then the OS temp dir)
  --dry-run         list the owners (pid, alive or dead and why, age), their task dirs, files
                    and bytes, and what a sweep would delete; delete nothing
  --json            one JSON object on stdout

Exit codes: 0 ok · 1 some entry could not be swept or listed · 2 bad usage or an unusable root
`;

function age(ms: number | undefined): string {
  if (ms === undefined) return '?';
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  return `${Math.round(s / 3600)} h`;
}

function describe(listing: SpillRootListing): string {
  const lines = [`${oneLine(listing.dir)}: ${listing.owners.length} owner(s)`];
  for (const o of listing.owners) {
    lines.push(
      `  ${o.alive ? 'alive' : 'DEAD '} pid ${o.pid}  age ${age(o.ageMs)}  ` +
        `${o.tasks.length} task dir(s), ${o.files} file(s), ${mib(o.bytes)}  ${oneLine(o.path)}`,
      `        ${o.reason}`,
    );
    for (const t of o.tasks) lines.push(`        ${t.path}: ${t.files} file(s), ${mib(t.bytes)}`);
  }
  lines.push(
    listing.wouldSweep.length === 0
      ? 'a sweep would delete nothing'
      : `a sweep would delete:\n${listing.wouldSweep.map((p) => `  ${p}`).join('\n')}`,
  );
  for (const e of listing.errors) lines.push(`error at ${e.path}: ${e.message}`);
  return `${lines.join('\n')}\n`;
}

export async function run(argv: string[], io: Io): Promise<number> {
  const { values } = parse(argv, {
    'spill-root': { type: 'string' },
    'dry-run': { type: 'boolean' },
    json: { type: 'boolean' },
  });
  if (values.help) {
    io.out.write(usage);
    return 0;
  }
  const root = resolveSpillRoot(stringOption(values, 'spill-root'));
  if (values['dry-run'] === true) {
    const listing = await listSpillRoot(root);
    if (values.json) printJson(io, listing);
    else io.err.write(describe(listing));
    return listing.errors.length > 0 ? 1 : 0;
  }
  const report = await sweepSpillRoot(root, {
    log: values.json ? () => undefined : (line) => io.err.write(`${line}\n`),
  });
  // The dir the sweep works in, named alike by the text and the JSON (and by --dry-run's
  // listing): Spillway writes only under <root>/spillway.
  const dir = join(resolve(root), 'spillway');
  if (values.json) printJson(io, { dir, ...report });
  else {
    io.err.write(
      `swept ${dir}\n` +
        table([
          ['swept', report.swept.length],
          ['kept', report.kept.length],
          ['errors', report.errors.length],
        ]),
    );
  }
  return report.errors.length > 0 ? 1 : 0;
}
