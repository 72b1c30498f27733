/**
 * `spillway flink SUBCOMMAND` (DESIGN §7, §8): the dispatcher; each subcommand is its own module
 * (`flink-<cmd>.ts`), loaded when it runs.
 */
import { UsageError } from './args.ts';
import type { Io } from './io.ts';

export const usage = `usage: spillway flink SUBCOMMAND …

  ls CHECKPOINT        what the checkpoint holds in flight, largest first (--help for flags)
  records CHECKPOINT   one subtask's in-flight elements as JSON Lines, decoded (--help for flags)
  report CHECKPOINT --out FILE.html
                       one offline HTML page: bars, heat map, top channels, skew
  rewrite CHECKPOINT   a new checkpoint without the elements named (--help for flags)

'spillway flink SUBCOMMAND --help' prints that subcommand's flags.
`;

export async function run(argv: string[], io: Io): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === '--help' || sub === '-h') {
    if (sub === undefined) throw new UsageError("missing subcommand (try 'spillway flink ls')");
    io.out.write(usage);
    return 0;
  }
  if (sub === 'ls') return (await import('./flink-ls.ts')).ls(rest, io);
  if (sub === 'records') return (await import('./flink-records.ts')).run(rest, io);
  if (sub === 'report') return (await import('./flink-report.ts')).run(rest, io);
  if (sub === 'rewrite') return (await import('./flink-rewrite.ts')).run(rest, io);
  throw new UsageError(`unknown subcommand 'flink ${sub}' (try 'spillway flink ls')`);
}
