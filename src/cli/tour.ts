/**
 * `spillway tour`: what `npm start` shows a newcomer — the product on a real Flink checkpoint
 * (shipped in the package's `examples/flink-checkpoint/`), step by step: list what it holds in
 * flight, extract one subtask's input channels into files, look inside one, decode a few of its
 * records, then the commands to try next. Each step runs the real command's module, as `spillway COMMAND …` does.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from './args.ts';
import { METADATA_FILE_NAME } from '../services/formats/flink/metadata-file.ts';
import type { Io } from './io.ts';

export const usage = `usage: spillway tour

A short walk through a real Apache Flink 2.3.0 checkpoint shipped with Spillway (an unaligned
checkpoint taken under backpressure, so records were in flight): it lists what the checkpoint
holds in flight, extracts one subtask's input channels into files in a temp dir (removed at the
end), shows what one of those files holds, decodes a few of its records, and ends with the
commands to try next. It runs the
same commands you would type. 'npm start' runs it.

Exit codes: 0 ok · 1 a step failed (its error printed) · 128+n after signal n
`;

/** The shipped checkpoint: `examples/flink-checkpoint/chk-3` in the package (or the clone). */
export function tourCheckpoint(): string | undefined {
  for (
    let dir = dirname(fileURLToPath(import.meta.url));
    dir !== dirname(dir);
    dir = dirname(dir)
  ) {
    const found = join(dir, 'examples', 'flink-checkpoint', 'chk-3');
    if (existsSync(join(found, METADATA_FILE_NAME))) return found;
  }
  return undefined;
}

export async function run(argv: string[], io: Io): Promise<number> {
  const { values } = parse(argv, { help: { type: 'boolean', short: 'h' } });
  if (values.help === true) {
    io.out.write(usage);
    return 0;
  }
  const checkpoint = tourCheckpoint();
  if (checkpoint === undefined) {
    io.err.write('spillway tour: the example checkpoint (examples/flink-checkpoint) is missing\n');
    return 1;
  }
  const shown = relative(process.cwd(), checkpoint) || checkpoint;
  const say = (text: string) => io.out.write(`${text}\n`);
  const run = async ([command, ...args]: ['flink' | 'recover', ...string[]]): Promise<number> => {
    // Shown as a shell would take it: `Tuple2<Long,String>` quoted, or `<` would redirect.
    const quoted = [command, ...args].map((a) => (/[^\w./:=@,+-]/.test(a) ? `'${a}'` : a));
    say(`\n$ spillway ${quoted.join(' ')}`);
    // The commands' own modules, as the dispatcher loads them (main.ts loads this one).
    const module = command === 'flink' ? await import('./flink.ts') : await import('./recover.ts');
    return module.run(args, io);
  };
  // The extracted files live in a temp dir of the tour's own, gone at the end, and at exit too
  // (a signal during a step ends the step; the backstop covers an exit from anywhere).
  const temp = mkdtempSync(join(tmpdir(), 'spillway-tour-'));
  const removeTemp = () => rmSync(temp, { recursive: true, force: true });
  process.once('exit', removeTemp);
  try {
    say(
      'Spillway tour — a real Flink 2.3.0 checkpoint, written by a job whose join operator\n' +
        '(uid "slow-join", 3 subtasks) was backpressured, so records were in flight when it was taken.\n\n' +
        '1. What does the checkpoint hold in flight? Input channels per subtask, output\n' +
        '   subpartitions per upstream subtask, in bytes:',
    );
    let code = await run(['flink', 'ls', shown]);
    if (code !== 0) return code;

    const out = join(temp, 'slow-join-0');
    say(
      '\n2. Extract subtask 0 of slow-join: one file per input channel, exactly the bytes Flink\n' +
        '   would replay into it (published only once the whole recovery succeeded):',
    );
    code = await run(['recover', shown, '--operator', 'slow-join', '--subtask', '0', '--out', out]);
    if (code !== 0) return code;

    // Each file's size read once: listed, and the largest looked inside.
    const files = readdirSync(out)
      .sort()
      .map((name) => ({ name, size: statSync(join(out, name)).size }));
    say(`\n3. What is in them? ${files.length} file(s) in ${out}:`);
    for (const f of files) say(`     ${f.name}  ${f.size} bytes`);
    const largest = files.reduce((a, b) => (b.size > a.size ? b : a)).name;
    const bytes = readFileSync(join(out, largest));
    if (bytes.length >= 5) {
      const length = bytes.readInt32BE(0);
      say(
        `   ${largest} starts ${hex(bytes.subarray(0, 16))}:\n` +
          `   Flink's network framing — an int32 length (${length}), then a StreamElement (tag ` +
          `${bytes[4]}: ${TAGS[bytes[4]!] ?? 'see docs/flink.md'}), then the next frame.`,
      );
    }

    say(
      "\n4. Which records are those? Decoded with Flink's own serializers (the job's type is\n" +
        '   Tuple2<Long, String>, keyed by its first field), one JSON line per element:',
    );
    code = await run([
      'flink',
      'records',
      shown,
      '--operator',
      'slow-join',
      '--subtask',
      '0',
      '--type',
      'Tuple2<Long,String>',
      '--key',
      'long',
      '--limit',
      '3',
    ]);
    if (code !== 0) return code;

    say(
      '\nNext:\n' +
        `  spillway flink ls ${shown} --channels    one row per channel\n` +
        `  spillway flink report ${shown} --out report.html   a page to attach to a ticket\n` +
        `  spillway recover ${shown} --operator to-record-a --subtask 0 --output-state --out DIR\n` +
        "                                        an upstream subtask's output buffers\n" +
        `  spillway recover ${shown} --operator slow-join --subtask 0 --rescale 0/2 --key long --out DIR\n` +
        '                                        what new subtask 0 of 2 would get after rescaling\n' +
        '  spillway recover s3://bucket/job/chk-N --operator OP --subtask N --out DIR   (remote works too)\n' +
        '  spillway demo                         a pool of recoveries under injected faults, showing\n' +
        '                                        that no spill file survives any ending\n' +
        '  docs/flink.md                         the Flink walk-through; the README for the library',
    );
    return 0;
  } finally {
    removeTemp();
    process.off('exit', removeTemp);
  }
}

/** StreamElementSerializer's tags (docs/flink.md). */
const TAGS: Record<number, string> = {
  0: 'a record with a timestamp',
  1: 'a record without a timestamp',
  2: 'a watermark',
  3: 'a latency marker',
  4: 'a watermark status',
};

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join(' ');
}
