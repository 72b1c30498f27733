/**
 * The `flink report` page: one self-contained HTML file (inline CSS, no script, no font, no
 * image or link to fetch) that a user can attach to a ticket and open offline. Bars are CSS
 * widths, the heat map a table whose cells are shaded by bytes; every figure also carries its
 * exact byte count in a tooltip.
 */
import { formatBytes } from '../../../human-bytes.ts';
import type { FlinkElementCounts } from '../records/element-counts.ts';
import {
  channelLabel,
  operatorLabel,
  type FlinkReportModel,
  type ReportOperator,
} from './model.ts';

/** Heat maps wider or taller than this are cut (the page says how much was left out). */
export const HEAT_MAX_COLUMNS = 40;
export const HEAT_MAX_ROWS = 64;

const escape = (text: string): string =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );

const bytesCell = (n: number): string =>
  `<span title="${n.toLocaleString('en-US')} bytes">${escape(formatBytes(n))}</span>`;

const count = (n: number): string => n.toLocaleString('en-US');

/** `1,234 records · 56 watermarks` (+ other elements and partial pieces when there are any). */
function countsText(c: FlinkElementCounts): string {
  return [
    `${count(c.records)} records`,
    `${count(c.watermarks)} watermarks`,
    ...(c.otherElements > 0 ? [`${count(c.otherElements)} other elements`] : []),
    ...(c.partial > 0 ? [`${count(c.partial)} partial records`] : []),
  ].join(' · ');
}

const pct = (part: number, whole: number): string =>
  whole > 0 ? `${((100 * part) / whole).toFixed(part === whole ? 0 : 1)}%` : '0%';

const CSS = `
:root{--in:#2f6fbf;--out:#d9822b;--ink:#1d2430;--muted:#5b6575;--line:#d9dee6;--bg:#f6f7f9}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:var(--bg)}
main{max-width:1200px;margin:0 auto;padding:20px 24px 40px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px}h3{font-size:15px;margin:18px 0 6px}
.sub{color:var(--muted);overflow-wrap:anywhere}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin:16px 0}
.card{background:#fff;border:1px solid var(--line);border-radius:8px;padding:10px 14px;min-width:150px}
.card b{display:block;font-size:20px}.card .label{color:var(--muted);font-size:12px}
section.op{background:#fff;border:1px solid var(--line);border-radius:8px;padding:4px 16px 16px;margin:16px 0}
.op h2{margin-top:14px;overflow-wrap:anywhere}
.meta{color:var(--muted);font-size:13px;overflow-wrap:anywhere}
.bars{display:grid;grid-template-columns:max-content 1fr max-content;gap:4px 10px;align-items:center;margin:8px 0}
.bar{height:10px;border-radius:2px}.in{background:var(--in)}.out{background:var(--out)}
.track{display:flex;flex-direction:column;gap:2px}
.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
.legend{font-size:12px;color:var(--muted)}.legend i{display:inline-block;width:10px;height:10px;margin:0 4px 0 10px;border-radius:2px}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}
th,td{padding:3px 8px;border-bottom:1px solid var(--line);text-align:right;white-space:nowrap}
th:first-child,td:first-child,.t{text-align:left}
table.heat td{font-size:11px;padding:3px 5px;min-width:56px}
table.heat th{font-size:11px;padding:3px 5px}
.note{color:var(--muted);font-size:12px}
.skew{font-weight:600}
`;

function bars(op: ReportOperator): string {
  const max = Math.max(1, ...op.subtasks.flatMap((s) => [s.inputBytes, s.outputBytes]));
  const rows = op.subtasks.map(
    (s) =>
      `<div>subtask ${s.index}</div><div class="track">` +
      `<div class="bar in" style="width:${((100 * s.inputBytes) / max).toFixed(2)}%"></div>` +
      `<div class="bar out" style="width:${((100 * s.outputBytes) / max).toFixed(2)}%"></div></div>` +
      `<div class="num">${bytesCell(s.inputBytes)} in · ${bytesCell(s.outputBytes)} out` +
      `${s.counts !== undefined ? ` · ${countsText(s.counts)}` : ''}</div>`,
  );
  return `<div class="bars">${rows.join('')}</div>`;
}

function heatMap(op: ReportOperator): string {
  if (op.channels.length === 0) return '';
  const cols = op.channels.slice(0, HEAT_MAX_COLUMNS);
  const rows = op.heat.slice(0, HEAT_MAX_ROWS);
  const max = Math.max(1, ...op.heat.flat());
  const head = `<tr><th>subtask</th>${cols.map((c) => `<th>${escape(c)}</th>`).join('')}</tr>`;
  const body = rows
    .map((row, subtask) => {
      const cells = row.slice(0, HEAT_MAX_COLUMNS).map((bytes) => {
        const alpha = bytes === 0 ? 0 : 0.12 + (0.88 * bytes) / max;
        const ink = alpha > 0.55 ? '#fff' : 'var(--ink)';
        return (
          `<td style="background:rgba(47,111,191,${alpha.toFixed(3)});color:${ink}">` +
          `${bytes === 0 ? '·' : bytesCell(bytes)}</td>`
        );
      });
      return `<tr><th>${subtask}</th>${cells.join('')}</tr>`;
    })
    .join('');
  const cut: string[] = [];
  if (op.channels.length > cols.length) cut.push(`${op.channels.length - cols.length} channels`);
  if (op.heat.length > rows.length) cut.push(`${op.heat.length - rows.length} subtasks`);
  return (
    `<h3>Subtask × channel</h3><p class="note">in g/c: input gate g, channel c · out p/s: ` +
    `result partition p, subpartition s · darker is larger</p>` +
    `<div class="scroll"><table class="heat">${head}${body}</table></div>` +
    (cut.length > 0 ? `<p class="note">Not drawn: ${cut.join(' and ')}.</p>` : '')
  );
}

function operatorSection(op: ReportOperator, total: number): string {
  const names = [
    ...(op.name !== undefined ? [`name ${op.name}`] : []),
    ...(op.uid !== undefined ? [`uid ${op.uid}`] : []),
  ];
  const skew =
    op.skew === undefined
      ? `skew: median subtask holds 0 B (max ${formatBytes(op.maxSubtaskBytes)})`
      : `skew ${op.skew.toFixed(2)}× (max ${formatBytes(op.maxSubtaskBytes)} ÷ median ` +
        `${formatBytes(op.medianSubtaskBytes)})`;
  return (
    `<section class="op"><h2>${escape(operatorLabel(op))}</h2>` +
    `<div class="meta">id ${op.id}${names.length > 0 ? ` · ${escape(names.join(' · '))}` : ''}` +
    ` · parallelism ${op.parallelism}</div>` +
    `<p>In flight ${bytesCell(op.inputBytes + op.outputBytes)} ` +
    `(${pct(op.inputBytes + op.outputBytes, total)} of the checkpoint): input ` +
    `${bytesCell(op.inputBytes)}, output ${bytesCell(op.outputBytes)} · ` +
    `<span class="skew">${escape(skew)}</span></p>` +
    (op.counts !== undefined ? `<p class="counts">Elements: ${countsText(op.counts)}</p>` : '') +
    `<div class="legend"><i class="in"></i>input bytes<i class="out"></i>output bytes</div>` +
    bars(op) +
    heatMap(op) +
    `</section>`
  );
}

/**
 * The whole page for `model`; `location` is shown as given (already redacted by the caller).
 *
 * @example
 * ```ts
 * const html = reportHtml(reportModel(listing), 'chk-3', 'spillway 1.0.0');
 * ```
 */
export function reportHtml(model: FlinkReportModel, location: string, generator: string): string {
  const total = model.inputBytes + model.outputBytes;
  const counted = model.counts !== undefined;
  const cards = [
    ['in flight', bytesCell(total)],
    ['input', `${bytesCell(model.inputBytes)} · ${model.inputChannels} channels`],
    ['output', `${bytesCell(model.outputBytes)} · ${model.outputSubpartitions} subpartitions`],
    ['operators with state', `${model.operators.length} (${model.emptyOperators} without)`],
    ...(model.counts !== undefined
      ? [
          ['records', count(model.counts.records)],
          ['watermarks', count(model.counts.watermarks)],
        ]
      : []),
  ]
    .map(
      ([label, value]) =>
        `<div class="card"><div class="label">${label}</div><b>${value}</b></div>`,
    )
    .join('');
  const top = model.topChannels
    .map(
      (t, i) =>
        `<tr><td>${i + 1}</td><td class="t">${escape(t.operatorLabel)}</td><td>${t.subtask}</td>` +
        `<td class="t">${escape(channelLabel(t.channel))}</td><td>${bytesCell(t.channel.bytes)}</td>` +
        `<td>${t.channel.entries}</td>` +
        (counted
          ? `<td>${count(t.channel.records ?? 0)}</td><td>${count(t.channel.watermarks ?? 0)}</td>`
          : '') +
        `<td>${pct(t.channel.bytes, total)}</td></tr>`,
    )
    .join('');
  const countHeads = counted ? '<th>records</th><th>watermarks</th>' : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>Flink checkpoint ${model.checkpointId}: in-flight data</title>
<style>${CSS}</style></head>
<body><main>
<h1>Flink checkpoint ${model.checkpointId}: what is in flight</h1>
<div class="sub">${escape(location)} · metadata v${model.version} · ${escape(generator)}</div>
<div class="cards">${cards}</div>
<h2>Largest channels</h2>
<div class="scroll"><table><tr><th>#</th><th class="t">operator</th><th>subtask</th><th class="t">channel</th><th>bytes</th><th>buffers</th>${countHeads}<th>share</th></tr>${top}</table></div>
${model.operators.map((op) => operatorSection(op, total)).join('\n')}
<p class="note">Bytes as Flink counts them (each entry's 4-byte length included). Skew is the
largest subtask's in-flight bytes divided by the median subtask's.${
    counted
      ? ' Elements are counted per channel from its own bytes, as spillway flink records ' +
        'reads them; a record cut at a channel’s end or start is a partial record on each side.'
      : ''
  }</p>
</main></body></html>
`;
}
