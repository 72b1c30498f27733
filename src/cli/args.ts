/**
 * Argument parsing for every command: node's `util.parseArgs` in strict mode, with each
 * mistake turned into one `UsageError` line (exit code 2, never a stack trace).
 */
import { parseArgs } from 'node:util';
import { SpillwayError } from '../services/errors.ts';
import { closest } from '../services/did-you-mean.ts';

/** Bad command-line usage: printed as one line, exit code 2. */
export class UsageError extends SpillwayError {
  override readonly code = 'ERR_SPILLWAY_USAGE';
}

export type OptionSpec = Record<
  string,
  { type: 'string' | 'boolean'; short?: string; multiple?: boolean }
>;

export interface Parsed {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
}

/** Parses `argv` against `options`; `--help`/`-h` is always accepted. */
export function parse(argv: string[], options: OptionSpec, maxPositionals = 0): Parsed {
  try {
    const { values, positionals, tokens } = parseArgs({
      args: argv,
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
      tokens: true,
    });
    // parseArgs keeps the last of a repeated option: `--out a --out b` would silently drop a.
    const seen = new Set<string>();
    for (const token of tokens) {
      if (token.kind !== 'option' || options[token.name]?.type !== 'string') continue;
      if (options[token.name]?.multiple === true) continue;
      if (seen.has(token.name)) throw new UsageError(`--${token.name} given more than once`);
      seen.add(token.name);
    }
    if (positionals.length > maxPositionals) {
      throw new UsageError(`unexpected argument '${positionals[maxPositionals]}'`);
    }
    return { values: values as Parsed['values'], positionals };
  } catch (e) {
    if (e instanceof UsageError) throw e;
    // parseArgs' messages are one line already; drop its trailing advice about '--'.
    let line = (e as Error).message.split('\n')[0]!.replace(/\. To specify.*$/, '');
    // `--mb -5`: parseArgs calls a value that starts with '-' ambiguous; say what is wrong.
    const ambiguous = /^Option '(--[^' ]+)[^']*' argument is ambiguous/.exec(line)?.[1];
    if (ambiguous !== undefined) {
      line = `${ambiguous} must be followed by its value; a value starting with '-' (a negative number) is not accepted`;
    }
    // A misspelled flag: name the closest known one.
    const unknown = /^Unknown option '--([^']+)'/.exec(line)?.[1];
    const match =
      unknown === undefined ? undefined : closest(unknown, [...Object.keys(options), 'help']);
    throw new UsageError(match === undefined ? line : `${line} (did you mean '--${match}'?)`);
  }
}

/** A non-negative integer option (accepts 64M-style suffixes K, M, G for byte sizes). */
export function intOption(
  values: Parsed['values'],
  name: string,
  fallback: number,
  { min = 0, max = Number.MAX_SAFE_INTEGER }: { min?: number; max?: number } = {},
): number {
  const raw = values[name];
  if (raw === undefined) return fallback;
  const m = /^(\d+)([KMG]i?B?)?$/i.exec(String(raw));
  if (m === null) throw new UsageError(`--${name} must be a whole number, got '${raw}'`);
  const unit = (m[2] ?? '').charAt(0).toUpperCase();
  const scale = unit === 'K' ? 1024 : unit === 'M' ? 1024 ** 2 : unit === 'G' ? 1024 ** 3 : 1;
  const n = Number(m[1]) * scale;
  if (n < min || n > max)
    throw new UsageError(`--${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

/** A non-negative number option (fractions allowed). */
export function numberOption(values: Parsed['values'], name: string, fallback: number): number {
  const raw = values[name];
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0)
    throw new UsageError(`--${name} must be a number ≥ 0, got '${raw}'`);
  return n;
}

export function stringOption(values: Parsed['values'], name: string): string | undefined {
  const v = values[name];
  return typeof v === 'string' ? v : undefined;
}
