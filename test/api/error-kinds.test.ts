/**
 * DESIGN §5, the error codes as one list: every exported error class carries a code from
 * `ERROR_CODES` (src/services/errors/codes.ts) and the kind that list gives it; the CLI's exit
 * code follows the kind (input 2, environment and internal 1, a foreign error 1); the README's
 * table names every code and no other, with the exit code the kind gives; and no file in src/
 * or inspector/ spells an error code but where a class declares its own.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import * as errors from '../../src/services/errors.ts';
import { ERROR_CODES, SpillwayError, type ErrorKind } from '../../src/services/errors.ts';
import { UsageError } from '../../src/cli/args.ts';
import { exitCodeOf, reportError } from '../../src/cli/errors.ts';
import { InjectedFaultError } from '../../src/pool/faults.ts';
import { InspectorServerError } from '../../inspector/page-files.ts';
import { repo, sourcesUnder } from '../architecture/sources.ts';

const KINDS: readonly ErrorKind[] = ['input', 'environment', 'internal'];
const EXIT_OF_KIND: Record<ErrorKind, number> = { input: 2, environment: 1, internal: 1 };

const eio = Object.assign(new Error('EIO: i/o error'), { code: 'EIO', syscall: 'write' });

/**
 * One instance of each concrete error class, by class name. A new class exported without an
 * entry here fails the first test, so none escapes the checks below.
 */
const MAKE: Record<string, () => SpillwayError> = {
  SpillwayError: () => new SpillwayError('base'),
  CorruptCheckpointError: () => new errors.CorruptCheckpointError('cp.spwc', 24, 'crc32 mismatch'),
  TypeSpecError: () => new errors.TypeSpecError('Tuple<', 7, 'expected a type'),
  UnknownOperatorError: () => new errors.UnknownOperatorError('_metadata', 'sink'),
  CheckpointPathError: () => new errors.CheckpointPathError('/tmp', 'is a directory'),
  CheckpointChangedError: () => new errors.CheckpointChangedError('s3://b/k', 1, '"a"', '"b"'),
  RemoteNotFoundError: () => new errors.RemoteNotFoundError('s3://b/k', 'no such key'),
  RemoteAccessError: () => new errors.RemoteAccessError('s3://b/k', 'access denied'),
  RemoteError: () => new errors.RemoteError('s3://b/k', 'gave up', 8),
  RemoteUnsupportedError: () => new errors.RemoteUnsupportedError('http://h/k', 'gzip'),
  RemoteTimeoutError: () => new errors.RemoteTimeoutError('http://h/k', 'deadline passed', 0),
  CheckpointDeclinedError: () => new errors.CheckpointDeclinedError(7, 'not ready'),
  AbortedError: () => new errors.AbortedError('fenced'),
  RejectedError: () => new errors.RejectedError('closed'),
  MisuseError: () => new errors.MisuseError('out of order'),
  RegistryClosedError: () => new errors.RegistryClosedError('closed'),
  SpillEOFError: () => new errors.SpillEOFError('short'),
  SpillCorruptError: () => new errors.SpillCorruptError('crc'),
  CleanupError: () => new errors.CleanupError('left behind'),
  SpillRootError: () => new errors.SpillRootError('/nonexistent: missing'),
  OutputDirError: () => new errors.OutputDirError('out', 'is a file'),
  OutputExistsError: () => new errors.OutputExistsError('out', 'gate-0-channel-0.bin'),
  RewriteRefusedError: () => new errors.RewriteRefusedError('no-match', 'matches nothing'),
  CheckpointOutError: () => new errors.CheckpointOutError('cp.spwc', 'EEXIST', 'exists'),
  ConsumerAbandonedError: () => new errors.ConsumerAbandonedError('abandoned'),
  CancelledError: () => new errors.CancelledError('cancelled'),
  ConsumerError: () => new errors.ConsumerError(new Error('quota')),
  IoError: () => new errors.IoError(eio),
  InternalError: () => new errors.InternalError('bug'),
  UsageError: () => new UsageError('unknown flag'),
  InjectedFaultError: () => new InjectedFaultError('injected'),
  InspectorServerError: () => new InspectorServerError('port in use'),
};

/** The concrete error classes the errors module exports (abstract ones cannot be built). */
const exportedClasses = Object.entries(errors)
  .filter(
    ([, v]) =>
      typeof v === 'function' && (v === SpillwayError || v.prototype instanceof SpillwayError),
  )
  .map(([name]) => name)
  .filter((name) => !['RemoteLocationError', 'RetriedRemoteError'].includes(name));

/** A sink that keeps what the CLI wrote. */
function memoryIo() {
  const out = new PassThrough();
  const err = new PassThrough();
  return { io: { out, err }, text: () => String(err.read() ?? '') };
}

describe('error codes and kinds, one list', () => {
  it('every exported error class carries a code from ERROR_CODES and that code’s kind', () => {
    expect(exportedClasses.filter((name) => !(name in MAKE))).toEqual([]);
    for (const [name, make] of Object.entries(MAKE)) {
      const error = make();
      expect(Object.keys(ERROR_CODES), name).toContain(error.code);
      expect(KINDS, name).toContain(error.errorKind);
      expect(error.errorKind, name).toBe(ERROR_CODES[error.code]);
    }
  });

  it('every code in the list is carried by a class', () => {
    const carried = new Set(Object.values(MAKE).map((make) => make().code));
    expect(Object.keys(ERROR_CODES).filter((code) => !carried.has(code as never))).toEqual([]);
  });

  it('a spill root the file system refused is the environment, a missing one the input', () => {
    const refused = new errors.SpillRootError('/r: cannot write', { cause: eio });
    expect(refused.errorKind).toBe('environment');
    const missing = Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
    expect(new errors.SpillRootError('/r: missing', { cause: missing }).errorKind).toBe('input');
  });

  it("the CLI's exit code follows the kind, and a foreign error is 1", () => {
    const cases: [string, unknown, number][] = Object.entries(MAKE).map(([name, make]) => {
      const error = make();
      return [name, error, EXIT_OF_KIND[error.errorKind]];
    });
    cases.push(
      ['SpillRootError (EIO)', new errors.SpillRootError('/r', { cause: eio }), 1],
      ['a foreign Error', new Error('boom'), 1],
      ['a foreign errno error', eio, 1],
      ['a string', 'thrown string', 1],
    );
    for (const [name, error, exit] of cases) {
      expect(exitCodeOf(error), name).toBe(exit);
      const { io, text } = memoryIo();
      expect(reportError(io, error, 'recover'), name).toBe(exit);
      // Bad input is one line, never "failed:"; a failure says it failed.
      expect(text().startsWith('spillway recover: failed:'), name).toBe(exit === 1);
    }
  });

  it("the README's error table names every code, no other, with its kind and its kind's exit code", async () => {
    const readme = await readFile(join(repo, 'README.md'), 'utf8');
    const rows = readme.split('\n').filter((l) => /^\| `(ERR_SPILLWAY|ABORT_ERR)/.test(l));
    const named = new Set<string>();
    const problems: string[] = [];
    for (const row of rows) {
      const cells = row.split('|').map((c) => c.trim());
      const codes = [...cells[1]!.matchAll(/`([A-Z_]+)`/g)].map((m) => m[1]!);
      const kinds = cells[3]!.split(', ');
      const exit = /exit (\d)/.exec(row)?.[1];
      codes.forEach((code, i) => {
        named.add(code);
        if (!(code in ERROR_CODES)) return void problems.push(`${code}: not in ERROR_CODES`);
        const kind = ERROR_CODES[code as keyof typeof ERROR_CODES];
        if (!(kinds[i] ?? kinds[0])!.startsWith(kind))
          problems.push(`${code}: README kind is not ${kind}`);
        if (exit !== undefined && Number(exit) !== EXIT_OF_KIND[kind])
          problems.push(`${code}: README says exit ${exit}`);
      });
    }
    for (const code of Object.keys(ERROR_CODES)) {
      if (!named.has(code)) problems.push(`${code}: missing from the README`);
    }
    expect(problems).toEqual([]);
  });

  it('no file in src/ or inspector/ spells an error code but a class declaring its own', async () => {
    const codes = new RegExp(`'(${Object.keys(ERROR_CODES).join('|')})'`);
    const found: string[] = [];
    for (const file of [
      ...sourcesUnder(join(repo, 'src')),
      ...sourcesUnder(join(repo, 'inspector')),
    ]) {
      if (file.endsWith(join('errors', 'codes.ts'))) continue;
      const lines = (await readFile(file, 'utf8')).split('\n');
      lines.forEach((line, i) => {
        const code = line.trim();
        if (code.startsWith('*') || code.startsWith('//')) return; // documentation
        if (/^(override )?readonly code(: \w+)? = '/.test(code)) return; // a class's own code
        if (codes.test(line)) found.push(`${file.slice(repo.length + 1)}:${i + 1}: ${code}`);
      });
    }
    expect(found).toEqual([]);
  });
});
