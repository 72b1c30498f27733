/**
 * Real-Flink oracle trees: find the committed fixtures (test/fixtures/flink/<release>-<variant>/)
 * and compare what Spillway wrote with what Flink's own classes read (the `expected/` tree the Java
 * harness in interop/flink wrote). Used by the fixture tests and by the live real-Flink test.
 *
 * An expected tree holds `ls.json` (DESIGN §7 `flink ls --json`), per operator/subtask with channel
 * state `<op>/subtask-<n>/gate-<g>-channel-<c>.bin` and `partition-<p>-subpartition-<s>.bin`, and
 * for the keyed operator `<op>/rescale-<I>-of-<P>/gate-<g>-channel-<c>.bin` + `keygroups.json`.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FlinkCheckpointListing } from '../../src/services/formats/flink/list.ts';
import { cutCompletions } from './cut-completions.ts';

/** The committed real-Flink fixtures' root. */
export const FLINK_FIXTURES_DIR = resolve(
  dirname(fileURLToPath(import.meta.url)),
  '../fixtures/flink',
);

/** One committed fixture, as its fixture.json describes it (paths made absolute). */
export interface FlinkFixture {
  /** `<release>-<variant>`, e.g. `1.20.5-file`. */
  readonly name: string;
  /** The fixture's directory. */
  readonly dir: string;
  /** Flink release that wrote it, e.g. `2.3.0`. */
  readonly flink: string;
  /** `file` (channel state in files), `inline` (in _metadata) or `merging` (file-merging on). */
  readonly variant: string;
  readonly metadataVersion: number;
  /** The checkpoint directory (holds `_metadata`) inside the fixture. */
  readonly checkpoint: string;
  /** The job directory (`<job-id>`, parent of chk-N) inside the fixture. */
  readonly jobDir: string;
  /** Where the checkpoint was when Flink wrote it (absolute handles name this place). */
  readonly originalCheckpointDir: string;
  readonly originalJobDir: string;
  /** The keyed operator's id (32 hex digits): the one with rescale-* expectations. */
  readonly keyedOperator: string;
  /** `--key` for rescaling (`long`). */
  readonly key: string;
  /** The `I/P` pairs the oracle wrote rescale expectations for. */
  readonly rescale: readonly string[];
  /** The oracle's expected tree. */
  readonly expected: string;
}

/**
 * The fixtures under `root` (default: the committed ones), sorted by name.
 *
 * @example
 * for (const f of listFlinkFixtures()) console.log(f.name, f.checkpoint);
 */
export function listFlinkFixtures(root: string = FLINK_FIXTURES_DIR): FlinkFixture[] {
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .filter((name) => existsSync(join(root, name, 'fixture.json')))
    .sort()
    .map((name) => readFlinkFixture(join(root, name)));
}

/** Reads one fixture directory's fixture.json. */
export function readFlinkFixture(dir: string): FlinkFixture {
  const raw = JSON.parse(readFileSync(join(dir, 'fixture.json'), 'utf8')) as Record<
    string,
    unknown
  >;
  const checkpoint = join(dir, String(raw.checkpoint));
  return {
    name: dir.split(/[\\/]/).pop()!,
    dir,
    flink: String(raw.flink),
    variant: String(raw.variant),
    metadataVersion: Number(raw.metadataVersion),
    checkpoint,
    jobDir: dirname(checkpoint),
    originalCheckpointDir: String(raw.originalCheckpointDir),
    originalJobDir: String(raw.originalJobDir),
    keyedOperator: String(raw.keyedOperator),
    key: String(raw.key),
    rescale: (raw.rescale as string[]) ?? [],
    expected: join(dir, 'expected'),
  };
}

/** The oracle's `flink ls --json` document. */
export interface ExpectedLs {
  version: number;
  checkpointId: number;
  operators: Array<{
    id: string;
    name?: string;
    uid?: string;
    parallelism: number;
    maxParallelism: number;
    subtasks: Array<{
      index: number;
      finished: boolean;
      inputChannels: number;
      inputBytes: number;
      outputSubpartitions: number;
      outputBytes: number;
    }>;
  }>;
}

export function readExpectedLs(expected: string): ExpectedLs {
  return JSON.parse(readFileSync(join(expected, 'ls.json'), 'utf8')) as ExpectedLs;
}

/**
 * The oracle's listing with the totals `flink ls --json` adds (DESIGN §8), each the sum of Flink's
 * own per-subtask figures: per operator `inputBytes`/`outputBytes`, per checkpoint those and the
 * channel and subpartition counts. Keys in the order Spillway prints them.
 */
export function withFlinkTotals(ls: ExpectedLs): FlinkCheckpointListing {
  const sum = <T>(xs: readonly T[], f: (x: T) => number) => xs.reduce((t, x) => t + f(x), 0);
  const operators = ls.operators.map(({ subtasks, ...op }) => ({
    ...op,
    inputBytes: sum(subtasks, (s) => s.inputBytes),
    outputBytes: sum(subtasks, (s) => s.outputBytes),
    subtasks,
  }));
  const subtasks = ls.operators.flatMap((o) => o.subtasks);
  return {
    version: ls.version,
    checkpointId: ls.checkpointId,
    inputBytes: sum(subtasks, (s) => s.inputBytes),
    outputBytes: sum(subtasks, (s) => s.outputBytes),
    inputChannels: sum(subtasks, (s) => s.inputChannels),
    outputSubpartitions: sum(subtasks, (s) => s.outputSubpartitions),
    operators,
  };
}

/** One operator/subtask with channel state, and the files `recover` must write for it. */
export interface ExpectedSubtask {
  readonly operator: string;
  readonly subtask: number;
  /** `expected/<op>/subtask-<n>` */
  readonly dir: string;
  /** `gate-<g>-channel-<c>.bin` names. */
  readonly inputFiles: readonly string[];
  /** `partition-<p>-subpartition-<s>.bin` names. */
  readonly outputFiles: readonly string[];
}

const INPUT_FILE = /^gate-\d+-channel-\d+\.bin$/;
const OUTPUT_FILE = /^partition-\d+-subpartition-\d+\.bin$/;

/**
 * Every operator/subtask the oracle wrote channel files for.
 *
 * @example
 * for (const s of expectedSubtasks(f.expected)) {
 *   // spillway recover CHK --operator s.operator --subtask s.subtask --out DIR --output-state
 * }
 */
export function expectedSubtasks(expected: string): ExpectedSubtask[] {
  const out: ExpectedSubtask[] = [];
  for (const op of readdirSync(expected).sort()) {
    const opDir = join(expected, op);
    if (!statSync(opDir).isDirectory()) continue;
    for (const entry of readdirSync(opDir)) {
      const m = /^subtask-(\d+)$/.exec(entry);
      if (!m) continue;
      const dir = join(opDir, entry);
      const files = readdirSync(dir).sort();
      out.push({
        operator: op,
        subtask: Number(m[1]),
        dir,
        inputFiles: files.filter((f) => INPUT_FILE.test(f)),
        outputFiles: files.filter((f) => OUTPUT_FILE.test(f)),
      });
    }
  }
  return out.sort((a, b) => a.operator.localeCompare(b.operator) || a.subtask - b.subtask);
}

/** One rescale expectation: `expected/<op>/rescale-<I>-of-<P>/`. */
export interface ExpectedRescale {
  readonly operator: string;
  readonly index: number;
  readonly parallelism: number;
  readonly dir: string;
  /** `gate-<g>-channel-<c>.bin` names (an empty file: no record of that channel is kept). */
  readonly files: readonly string[];
}

export function expectedRescales(expected: string): ExpectedRescale[] {
  const out: ExpectedRescale[] = [];
  for (const op of readdirSync(expected).sort()) {
    const opDir = join(expected, op);
    if (!statSync(opDir).isDirectory()) continue;
    for (const entry of readdirSync(opDir)) {
      const m = /^rescale-(\d+)-of-(\d+)$/.exec(entry);
      if (!m) continue;
      const dir = join(opDir, entry);
      out.push({
        operator: op,
        index: Number(m[1]),
        parallelism: Number(m[2]),
        dir,
        files: readdirSync(dir)
          .filter((f) => INPUT_FILE.test(f))
          .sort(),
      });
    }
  }
  return out.sort(
    (a, b) =>
      a.operator.localeCompare(b.operator) || a.parallelism - b.parallelism || a.index - b.index,
  );
}

/** The oracle's key-group listing for one rescale (for an independent key-group check). */
export interface ExpectedKeyGroups {
  operatorId: string;
  maxParallelism: number;
  index: number;
  parallelism: number;
  key: string;
  keptRecords: number;
  droppedRecords: number;
  channels: Array<{
    oldSubtask: number;
    gate: number;
    channel: number;
    droppedRecords: number;
    /** Non-record elements by class, `:kept` or `:dropped` (Flink's filter keeps watermarks). */
    otherElements: Record<string, number>;
    /** Bytes of a record cut at the end of this virtual channel (its rest is upstream). */
    trailingBytes: number;
    /** `[key, keyGroup]` of each kept record, in stream order. */
    kept: Array<[number, number]>;
  }>;
}

export function readExpectedKeyGroups(rescaleDir: string): ExpectedKeyGroups {
  return JSON.parse(readFileSync(join(rescaleDir, 'keygroups.json'), 'utf8')) as ExpectedKeyGroups;
}

export interface CompareOptions {
  /** Compare `gate-*` files (default true). */
  readonly input?: boolean;
  /** Compare `partition-*` files too (recover `--output-state`; default false). */
  readonly output?: boolean;
  /**
   * An expected file that is empty may be absent from the actual dir (default false). Rescale
   * outputs: a channel none of whose records is kept may or may not get a file.
   */
  readonly absentEqualsEmpty?: boolean;
}

/**
 * Compares the channel files of an expected dir with those in `actual` (same names, same bytes).
 * Only `gate-<g>-channel-<c>.bin` (and with `output`, `partition-<p>-subpartition-<s>.bin`) names
 * take part; other files in either dir are ignored. Returns the differences, one readable line
 * each (empty: equal), so a test can `expect(diff).toEqual([])` and see every mismatch at once.
 *
 * @example
 * expect(await compareChannelFiles(s.dir, outDir, { output: true })).toEqual([]);
 */
export async function compareChannelFiles(
  expectedDir: string,
  actual: string,
  options: CompareOptions = {},
): Promise<string[]> {
  const wanted = (f: string): boolean =>
    ((options.input ?? true) && INPUT_FILE.test(f)) ||
    ((options.output ?? false) && OUTPUT_FILE.test(f));
  const expectedFiles = (await readdir(expectedDir)).filter(wanted).sort();
  const actualFiles = existsSync(actual) ? (await readdir(actual)).filter(wanted).sort() : [];
  const diffs: string[] = [];
  for (const f of expectedFiles) {
    const want = await readFile(join(expectedDir, f));
    if (!actualFiles.includes(f)) {
      if (!(options.absentEqualsEmpty && want.length === 0)) {
        diffs.push(`${f}: missing (expected ${want.length} bytes)`);
      }
      continue;
    }
    const got = await readFile(join(actual, f));
    if (!got.equals(want)) diffs.push(`${f}: ${describeMismatch(want, got)}`);
  }
  for (const f of actualFiles) {
    if (!expectedFiles.includes(f)) diffs.push(`${f}: not expected (Flink has no such channel)`);
  }
  return diffs;
}

function describeMismatch(want: Buffer, got: Buffer): string {
  const n = Math.min(want.length, got.length);
  let i = 0;
  while (i < n && want[i] === got[i]) i++;
  return `${got.length} bytes, expected ${want.length}; first difference at byte ${i}`;
}

/**
 * The old subtasks Flink's restore hands new subtask I of P from the fixtures' 3 old subtasks
 * of the keyed operator, written out from `SubtaskStateMapper.RANGE`'s own javadoc (old 0 →
 * [0;43), 1 → [43;87), 2 → [87;128); new 0 of 2 → [0;64], 1 of 2 → [64;128): new 0 recovers
 * old 0 + 1, new 1 old 1 + 2) — written here, not computed by the code under test.
 */
export const FLINK_RANGE_FROM_3: Record<string, readonly number[]> = {
  '0/2': [0, 1],
  '1/2': [1, 2],
  '0/3': [0],
  '1/3': [1],
  '2/3': [2],
};

/**
 * The oracle's rescale output cut down to what a real Flink restore delivers to new subtask I:
 * the oracle keeps every old subtask's watermarks; Flink reads only the old subtasks in
 * `assigned`. Each `.bin` is split into its old subtasks' frames by the oracle's own counts
 * (keygroups.json: kept records and kept elements per old subtask, ascending) and the frames of
 * unassigned old subtasks are left out; the records cut at the end of an assigned old subtask's
 * channel follow, completed from the upstream's output state (cut-completions.ts). Writes the
 * files into `into`.
 */
export async function restoredRescale(
  r: ExpectedRescale,
  assigned: readonly number[],
  into: string,
): Promise<void> {
  const kg = JSON.parse(await readFile(join(r.dir, 'keygroups.json'), 'utf8')) as ExpectedKeyGroups;
  const completions = await cutCompletions(dirname(dirname(r.dir)), r, kg, assigned);
  for (const file of r.files) {
    const [, gate, channel] = /^gate-(\d+)-channel-(\d+)\.bin$/.exec(file)!.map(Number);
    const bytes = await readFile(join(r.dir, file));
    const parts: Buffer[] = [];
    let at = 0;
    const segments = kg.channels
      .filter((c) => c.gate === gate && c.channel === channel)
      .sort((a, b) => a.oldSubtask - b.oldSubtask);
    for (const c of segments) {
      const frames =
        c.kept.length +
        Object.entries(c.otherElements)
          .filter(([k]) => k.endsWith(':kept'))
          .reduce((n, [, v]) => n + v, 0);
      const start = at;
      for (let k = 0; k < frames; k++) at += 4 + bytes.readInt32BE(at);
      if (assigned.includes(c.oldSubtask)) parts.push(bytes.subarray(start, at));
    }
    if (at !== bytes.length) throw new Error(`${r.dir}/${file}: frames do not add up`);
    // The records cut at the end of an assigned old subtask's channel, completed from the
    // upstream's output state as the restore completes them: after the channel's other
    // records, old subtasks ascending (Spillway's order; Flink's is not fixed).
    for (const done of completions) {
      if (done.gate === gate && done.channel === channel && done.kept) parts.push(done.framed!);
    }
    await writeFile(join(into, file), Buffer.concat(parts));
  }
}
