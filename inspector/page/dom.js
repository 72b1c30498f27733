// @ts-check
// DOM helpers shared by every panel: typed element lookup, HTML escaping, and innerHTML that
// is only replaced when it changed.

/**
 * The element with this id, checked to be of the kind the caller draws into: a renamed id in
 * index.html fails loudly at start instead of a panel silently staying empty.
 *
 * @template {Element} T
 * @param {string} id
 * @param {{ new (): T; prototype: T }} kind e.g. `HTMLInputElement`, `SVGSVGElement`
 * @returns {T}
 */
export function byId(id, kind) {
  const el = document.getElementById(id);
  if (!(el instanceof kind)) throw new Error(`#${id}: expected a ${kind.name}, found ${el}`);
  return el;
}

/** Any element of the page, when only its text or attributes are set. */
export const $ = (/** @type {string} */ id) => byId(id, HTMLElement);

/** @type {Record<string, string>} */
const ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text or an attribute value made safe for HTML: records carry names chosen by user code. */
export const esc = (/** @type {unknown} */ s) => String(s).replace(/[&<>"']/g, (c) => ESC[c]);

/** What each element was last given, so an unchanged redraw touches nothing. */
const shown = new WeakMap();

/**
 * Replaces an element's content only when it changed: no DOM churn, no lost hover or click.
 *
 * @param {Element} el
 * @param {string} html
 */
export function setHTML(el, html) {
  if (shown.get(el) !== html) {
    shown.set(el, html);
    el.innerHTML = html;
  }
}

/**
 * The drawing size of an SVG that fills its wrapper (a fresh SVG may not be laid out yet).
 *
 * @param {SVGSVGElement} svg
 */
export function sizeOf(svg) {
  const parent = svg.parentElement;
  return {
    W: svg.clientWidth || (parent ? parent.clientWidth : 0),
    H: svg.clientHeight || (parent ? parent.clientHeight : 0),
  };
}
