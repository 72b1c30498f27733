// @ts-check
// How values read on the page: sizes, payload summaries, errors, state values.

/** @import { ErrorSummary } from '../protocol.ts' */

/** @param {number} n a byte count */
export function bytes(n) {
  if (!Number.isFinite(n)) return '–';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 ** 3) return `${(n / 1024 / 1024).toFixed(1)} MiB`;
  return `${(n / 1024 ** 3).toFixed(2)} GiB`;
}

/**
 * One line of any value, cut at `max` characters.
 *
 * @param {unknown} v
 * @param {number} [max]
 */
export function brief(v, max = 90) {
  if (v === undefined) return '';
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/**
 * `Name: message` of a sanitized error (protocol `ErrorSummary`), or the value in brief.
 *
 * @param {unknown} e
 */
export function errText(e) {
  if (e === null || typeof e !== 'object') return brief(e);
  const { name, message } = /** @type {Partial<ErrorSummary>} */ (e);
  return `${name || 'Error'}: ${message || ''}`;
}

/** The last segment of a state node id: `task.alive.restoring.gap` → `gap`. */
export const lastSeg = (/** @type {string} */ id) => id.slice(id.lastIndexOf('.') + 1);

/**
 * The active leaf of a state value as a dotted path: `{ alive: { restoring: 'gap' } }` →
 * `alive.restoring.gap`.
 *
 * @param {unknown} value
 * @returns {string}
 */
export function leafPath(value) {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value !== 'object') return '';
  const [key, sub] = Object.entries(value)[0] ?? [];
  if (key === undefined) return '';
  const rest = leafPath(sub);
  return rest ? `${key}.${rest}` : key;
}

/** The active leaf's own key: `{ alive: { restoring: 'gap' } }` → `gap`. */
export function leafOf(/** @type {unknown} */ value) {
  const p = leafPath(value);
  return p.slice(p.lastIndexOf('.') + 1);
}

/** An actor as the log names it: its path below the task, `task` for the root. */
export const actorName = (/** @type {string} */ path) => (path === '' ? 'task' : path);
