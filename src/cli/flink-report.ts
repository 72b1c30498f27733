/** `spillway flink report CHECKPOINT --out FILE.html` (DESIGN §8): a page to attach to a ticket. */
import { resolve } from 'node:path';
import { formatBytes } from '../services/human-bytes.ts';
import { redactLocation } from '../services/locations/redact.ts';
import { listFlinkMetadata } from '../services/formats/flink/list.ts';
import { countFlinkElements } from '../services/formats/flink/records/count.ts';
import { readFlinkMetadata } from '../services/formats/flink/metadata.ts';
import { reportModel } from '../services/formats/flink/report/model.ts';
import { reportHtml } from '../services/formats/flink/report/html.ts';
import { writeFileAtomic } from '../services/outputs/write-file-atomic.ts';
import { VERSION } from '../version.ts';
import { parse, stringOption, UsageError } from './args.ts';
import { countFromArgs, countUsage } from './flink-count-args.ts';
import { reportError } from './errors.ts';
import { type Io } from './io.ts';
import { remoteOptionsFromEnv } from './remote-env.ts';
import { oneLine } from './terminal-text.ts';

export const usage = `usage: spillway flink report CHECKPOINT --out FILE.html [--type SPEC]
                           [--key long|int|bytes:K] [--allow-path DIR]… [--relocate FROM=TO]…
                           [--s3-endpoint URL]

Writes one self-contained HTML page about a Flink checkpoint's in-flight data, to open offline
or attach to a ticket (inline CSS; nothing is fetched from a network): the totals, per operator
and subtask the input and output bytes as bars, a subtask × channel heat map, the largest
channels, and the skew per operator (the largest subtask's in-flight bytes ÷ the median's);
with --type or --key also the record and watermark counts per operator, subtask and channel.
CHECKPOINT is as for 'spillway flink ls'. FILE.html appears whole or not at all (written beside
itself, then renamed); an existing file is replaced.

  --out FILE.html    where to write the page (required)
${countUsage}  --s3-endpoint URL  an S3-compatible store for s3:// (path-style)

Exit codes: 0 ok · 1 failed (a read or write error) · 2 bad input or usage (a malformed
_metadata or, counting, a value that does not parse: one line naming the file and the byte
offset; nothing is written)
`;

/** `spillway flink report …`; the exit code. */
export async function run(argv: string[], io: Io): Promise<number> {
  try {
    const { values, positionals } = parse(
      argv,
      {
        out: { type: 'string' },
        's3-endpoint': { type: 'string' },
        type: { type: 'string' },
        key: { type: 'string' },
        'allow-path': { type: 'string', multiple: true },
        relocate: { type: 'string', multiple: true },
      },
      1,
    );
    if (values.help) {
      io.out.write(usage);
      return 0;
    }
    const checkpoint = positionals[0];
    if (checkpoint === undefined) throw new UsageError('missing CHECKPOINT');
    const out = stringOption(values, 'out');
    if (out === undefined) throw new UsageError('missing --out FILE.html');
    const count = countFromArgs(values);
    const remote = remoteOptionsFromEnv(process.env, stringOption(values, 's3-endpoint'));
    const meta = await readFlinkMetadata(checkpoint, { remote });
    const counts =
      count === undefined ? undefined : await countFlinkElements(meta, { ...count, remote });
    const model = reportModel(listFlinkMetadata(meta, { channels: true, counts }));
    const shown = redactLocation(meta.location);
    await writeFileAtomic(out, Buffer.from(reportHtml(model, shown, `spillway ${VERSION}`)));
    io.out.write(
      `${oneLine(`wrote ${resolve(out)}`)}: checkpoint ${model.checkpointId}, ` +
        `${formatBytes(model.inputBytes + model.outputBytes)} in flight in ` +
        `${model.operators.length} operator(s)` +
        (model.counts !== undefined
          ? `, ${model.counts.records} record(s) and ${model.counts.watermarks} watermark(s)`
          : '') +
        '\n',
    );
    return 0;
  } catch (error) {
    return reportError(io, error, 'flink report');
  }
}
