// @ts-check
// The spill plot: files, bytes and live tasks on disk over the last minute, from the metrics
// the demo and `recover --inspect` publish.

/** @import { MetricsRecord } from '../protocol.ts' */
/** @import { Model } from './model.js' */

import { byId, esc, setHTML, sizeOf } from './dom.js';
import { bytes } from './format.js';
import { C } from './palette.js';

const WINDOW_MS = 60000;

/** @param {Model} m */
export function renderPlot(m) {
  const svg = byId('plot', SVGSVGElement);
  const { W, H } = sizeOf(svg);
  const pts = m.metrics;
  if (pts.length === 0 || W < 50) {
    setHTML(
      svg,
      `<text x="4" y="16">no spill metrics yet</text><text x="4" y="34">(published while a recovery runs)</text>`,
    );
    return;
  }
  const last = pts[pts.length - 1];
  const t1 = last.t;
  const t0 = Math.max(pts[0].t, t1 - WINDOW_MS);
  const shown = pts.filter((p) => p.t >= t0);
  const maxB = niceBytes(Math.max(1, ...shown.map((p) => p.bytes)));
  const maxF = niceCount(Math.max(1, ...shown.map((p) => Math.max(p.files, p.liveTasks))));
  // Room for the widest axis label (~6.2 px a character at 10 px), so none is cut off: the
  // quarters may be wider than the top (`1.50 GiB` under `2 GiB`).
  const widest = Math.max(...[0, 1, 2, 3, 4].map((g) => axisBytes((maxB * g) / 4).length));
  const L = 12 + Math.ceil(widest * 6.2);
  const R = 12 + Math.ceil(String(maxF).length * 6.2);
  const T = 62;
  const B = 20;
  const span = Math.max(1000, t1 - t0);
  const x = (/** @type {number} */ t) => L + ((t - t0) / span) * (W - L - R);
  const yB = (/** @type {number} */ v) => T + (1 - v / maxB) * (H - T - B);
  const yF = (/** @type {number} */ v) => T + (1 - v / maxF) * (H - T - B);
  const out = [];
  // A short panel (a 720 px screen) has room for the legend's values only: they are what is
  // on disk now; a chart squeezed into a few pixels would draw its labels over each other.
  const room = H - T - B;
  const grid = room >= 80 ? 4 : room >= 36 ? 2 : 0;
  for (let g = 0; g <= grid && grid > 0; g++) {
    const y = T + (g / grid) * room;
    out.push(`<line class="grid" x1="${L}" x2="${W - R}" y1="${y}" y2="${y}"/>`);
    out.push(
      `<text class="axis" x="${L - 6}" y="${y + 4}" text-anchor="end">${esc(axisBytes(maxB * (1 - g / grid)))}</text>`,
    );
    out.push(
      `<text class="axis" x="${W - R + 6}" y="${y + 4}">${esc(Math.round(maxF * (1 - g / grid)))}</text>`,
    );
  }
  if (grid === 0) {
    legendOf(out, last);
    svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
    setHTML(svg, out.join(''));
    return;
  }
  const secs = Math.round(span / 1000);
  out.push(`<text class="axis" x="${L}" y="${H - 5}">−${secs}s</text>`);
  out.push(`<text class="axis" x="${W - R}" y="${H - 5}" text-anchor="end">now</text>`);
  /** A step line through the samples: a value holds until the next sample. */
  const stepPath = (/** @type {(p: MetricsRecord) => number} */ f) => {
    let d = '';
    shown.forEach((p, k) => {
      const xx = x(p.t).toFixed(1);
      const yy = f(p).toFixed(1);
      d += k === 0 ? `M${xx},${yy}` : `H${xx}V${yy}`;
    });
    return d + `H${x(t1).toFixed(1)}`;
  };
  const areaD = `${stepPath((p) => yB(p.bytes))}V${yB(0)}H${x(shown[0].t).toFixed(1)}Z`;
  out.push(`<path d="${areaD}" fill="${C.fetch}" fill-opacity="0.18" stroke="none"/>`);
  out.push(
    `<path d="${stepPath((p) => yB(p.bytes))}" fill="none" stroke="${C.fetch}" stroke-width="1.6" data-series="bytes"/>`,
  );
  out.push(
    `<path d="${stepPath((p) => yF(p.files))}" fill="none" stroke="${C.gap}" stroke-width="1.6" data-series="files"/>`,
  );
  out.push(
    `<path d="${stepPath((p) => yF(p.liveTasks))}" fill="none" stroke="${C.drain}" stroke-width="1.2" stroke-dasharray="4 3" data-series="live"/>`,
  );
  legendOf(out, last);
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  setHTML(svg, out.join(''));
}

/**
 * The legend with the latest values: what is on disk right now.
 *
 * @param {string[]} out
 * @param {MetricsRecord} last
 */
function legendOf(out, last) {
  const legend = [
    [bytes(last.bytes), 'spilled bytes', C.fetch],
    [String(last.files), 'spill files', C.gap],
    [String(last.liveTasks), 'live tasks', C.drain],
  ];
  legend.forEach(([value, name, color], k) => {
    const y = 4 + k * 17;
    out.push(`<rect x="4" y="${y + 3}" width="10" height="10" rx="2" fill="${color}"/>`);
    out.push(
      `<text x="20" y="${y + 12}"><tspan style="fill:${C.text};font-weight:600" data-metric="${esc(name)}">${esc(value)}</tspan>  ${esc(name)}</text>`,
    );
  });
}

/**
 * An axis label: the size without a `.0` (`400 MiB`, `1.5 GiB`).
 *
 * @param {number} v
 */
const axisBytes = (v) => bytes(v).replace(/\.0+ /, ' ');

/**
 * An axis top in whole units of the largest fitting binary unit: 4 MiB, 10 MiB, 200 KiB.
 *
 * @param {number} v
 */
function niceBytes(v) {
  const unit = v >= 1024 ** 3 ? 1024 ** 3 : v >= 1024 ** 2 ? 1024 ** 2 : v >= 1024 ? 1024 : 1;
  const x = v / unit;
  const p = 10 ** Math.floor(Math.log10(x));
  for (const f of [1, 2, 4, 8, 10]) if (f * p >= x) return f * p * unit;
  return 10 * p * unit;
}

/**
 * An axis top whose quarters are whole numbers.
 *
 * @param {number} v
 * @returns {number}
 */
function niceCount(v) {
  for (let p = 1; ; p *= 10) {
    for (const f of [4, 8, 12, 20, 40, 60, 80]) if (f * p >= v) return f * p;
  }
}
