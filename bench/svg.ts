/**
 * The plot of `spillway bench --growth --svg FILE`: three small panels drawn as plain SVG (no
 * plotting dependency) — recover time and peak RSS against state size, peak RSS against
 * concurrent tasks, and time against the file-creation floor per channel count.
 */
import type { GrowthFigures } from './growth-figures.ts';

const W = 300;
const H = 200;
const PAD = 40;

interface Series {
  name: string;
  color: string;
  points: [number, number][];
}

function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;');
}

/** One panel at x offset `x0`: log-scaled x when `logX`, y from 0. */
function panel(x0: number, title: string, xLabel: string, series: Series[], logX: boolean): string {
  const xs = series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = series.flatMap((s) => s.points.map((p) => p[1]));
  const fx = (x: number) => (logX ? Math.log10(Math.max(x, 1)) : x);
  const xMin = Math.min(...xs.map(fx));
  const xMax = Math.max(...xs.map(fx));
  const yMax = Math.max(...ys, 1e-9) * 1.1;
  const px = (x: number) => x0 + PAD + ((fx(x) - xMin) / (xMax - xMin || 1)) * (W - 2 * PAD);
  const py = (y: number) => H - PAD + 10 - (y / yMax) * (H - 2 * PAD);
  let out = `<text x="${x0 + W / 2}" y="16" text-anchor="middle" font-weight="bold">${esc(title)}</text>`;
  out += `<line x1="${x0 + PAD}" y1="${H - PAD + 10}" x2="${x0 + W - PAD}" y2="${H - PAD + 10}" stroke="#888"/>`;
  out += `<line x1="${x0 + PAD}" y1="${PAD - 10}" x2="${x0 + PAD}" y2="${H - PAD + 10}" stroke="#888"/>`;
  out += `<text x="${x0 + W / 2}" y="${H - 4}" text-anchor="middle">${esc(xLabel)}</text>`;
  out += `<text x="${x0 + PAD - 4}" y="${PAD - 12}" text-anchor="end">${yMax.toPrecision(2)}</text>`;
  for (const x of [...new Set(xs)]) {
    out += `<text x="${px(x)}" y="${H - PAD + 22}" text-anchor="middle">${x}</text>`;
  }
  series.forEach((s, k) => {
    const d = s.points.map(
      (p, i) => `${i === 0 ? 'M' : 'L'}${px(p[0]).toFixed(1)},${py(p[1]).toFixed(1)}`,
    );
    out += `<path d="${d.join(' ')}" fill="none" stroke="${s.color}" stroke-width="2"/>`;
    for (const p of s.points) {
      out += `<circle cx="${px(p[0]).toFixed(1)}" cy="${py(p[1]).toFixed(1)}" r="3" fill="${s.color}"/>`;
    }
    out += `<text x="${x0 + PAD + 6}" y="${PAD + 4 + 14 * k}" fill="${s.color}">${esc(s.name)}</text>`;
  });
  return out;
}

/**
 * The SVG text of the growth figures.
 *
 * @example
 * ```ts
 * await writeFile('docs/bench-growth.svg', growthSvg(figures));
 * ```
 */
export function growthSvg(g: GrowthFigures): string {
  const body = [
    panel(
      0,
      'state size (MiB)',
      'MiB of state (log)',
      [
        { name: 'ms per GiB', color: '#1f77b4', points: g.state.map((s) => [s.mb, s.msPerGiB]) },
        {
          name: 'peak RSS MiB ×10',
          color: '#d62728',
          points: g.state.map((s) => [s.mb, s.peakRssMiB * 10]),
        },
      ],
      true,
    ),
    panel(
      W,
      'concurrent tasks',
      'tasks in one process (log)',
      [
        {
          name: 'peak RSS MiB',
          color: '#d62728',
          points: g.tasks.map((t) => [t.tasks, t.peakRssMiB]),
        },
        {
          name: 'RSS per task MiB',
          color: '#9467bd',
          points: g.tasks.map((t) => [t.tasks, t.rssPerTaskMiB]),
        },
      ],
      true,
    ),
    panel(
      2 * W,
      'channels (one byte each)',
      'channels (log)',
      [
        {
          name: 'recover ÷ file-creation floor',
          color: '#2ca02c',
          points: g.channels.map((c) => [c.channels, c.vsFloor]),
        },
        {
          name: 'peak RSS MiB ÷ 100',
          color: '#d62728',
          points: g.channels.map((c) => [c.channels, c.peakRssMiB / 100]),
        },
      ],
      true,
    ),
  ].join('\n');
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${3 * W}" height="${H + 10}" ` +
    `font-family="sans-serif" font-size="10">\n<rect width="100%" height="100%" fill="white"/>\n${body}\n</svg>\n`
  );
}
