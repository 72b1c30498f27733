// @ts-check
// The actors panel: the focused task's actor tree with kind and state, and the task context
// (what it owns, what the registry closed, spilled and delivered bytes, checkpoints, cause).

/** @import { ActorView, TaskView } from './model.js' */
/** @import { OwnersRecord } from '../protocol.ts' */

import { $, esc, setHTML } from './dom.js';
import { bytes, errText, leafOf, leafPath } from './format.js';
import { C, ownerColor } from './palette.js';

/** @param {TaskView | undefined} task */
export function renderActors(task) {
  if (!task) {
    setHTML($('actor-tree'), '');
    setHTML($('context'), '');
    return;
  }
  setHTML($('actor-tree'), actorTree(task));
  setHTML($('context'), contextHtml(task));
}

/** @param {TaskView} task */
function actorTree(task) {
  /** @type {Map<string, ActorView[]>} */
  const kids = new Map();
  for (const a of task.actors.values()) {
    if (a.parent === null) continue;
    const list = kids.get(a.parent);
    if (list) list.push(a);
    else kids.set(a.parent, [a]);
  }
  for (const list of kids.values()) list.sort((x, y) => x.i - y.i);
  /** @type {string[]} */
  const rows = [];
  /** @type {(a: ActorView, prefix: string, last: boolean, depth: number) => void} */
  const row = (a, prefix, last, depth) => {
    const glyph = depth === 0 ? '' : `${prefix}${last ? '└ ' : '├ '}`;
    let state = '';
    if (a.kind === 'machine' || a.value !== undefined) {
      state = `<b title="${esc(leafPath(a.value))}">${esc(leafOf(a.value) || '·')}</b>`;
      if (a.status !== 'active') state += ` · ${esc(a.status)}`;
    } else {
      state = esc(a.status);
      if (a.status === 'error' && a.error) state += ` · ${esc(errText(a.error))}`;
    }
    const name = a.path === '' ? task.key : a.id;
    rows.push(
      `<div class="actor" data-actor="${esc(a.path)}" data-status="${esc(a.status)}"><span class="aname"><span class="tree">${esc(glyph)}</span><span class="dot ${esc(a.status)}"></span>${esc(name)}</span><span class="kind">${esc(a.kind)}</span><span class="astate">${state}</span></div>`,
    );
    const children = kids.get(a.path) || [];
    const nextPrefix = depth === 0 ? '' : `${prefix}${last ? '  ' : '│ '}`;
    children.forEach((c, k) => row(c, nextPrefix, k === children.length - 1, depth + 1));
  };
  const root = task.actors.get('');
  if (root) row(root, '', true, 0);
  return rows.join('');
}

/** @param {TaskView} task */
function contextHtml(task) {
  const ctx = task.ctx;
  const live = task.owners;
  const own = Object.entries(ctx.ownership || {});
  const ownHtml = own.length
    ? own
        .map(([r, o]) => `${esc(r)}→<span style="color:${ownerColor(o)}">${esc(o)}</span>`)
        .join(', ')
    : '<span class="muted">nothing owned</span>';
  const closed = ctx.closedByRegistry || [];
  const fetch = ctx.fetch;
  const drain = ctx.drain;
  const none = '<span class="muted">—</span>';
  /** @type {[string, string][]} */
  const items = [
    ['owns', ownHtml],
    [
      'closed by registry',
      closed.length ? `<span style="color:${C.failed}">${esc(closed.join(', '))}</span>` : none,
    ],
    [
      'spilled',
      fetch
        ? `${esc(fetch.spillFiles)} files · ${esc(bytes(fetch.spilledBytes))}`
        : live && live.spillFiles > 0
          ? `${esc(live.spillFiles)} files · ${esc(bytes(live.spilled))}`
          : none,
    ],
    ['delivered', deliveredHtml(task) || none],
    ['checkpoints', `${esc(ctx.checkpoints ?? 0)} · trigger ${esc(ctx.trigger ?? '—')}`],
  ];
  if (ctx.cause) items.push(['cause', `<span class="bad">${esc(errText(ctx.cause))}</span>`]);
  if (live?.about) items.unshift(...aboutItems(live.about));
  // Values wrap rather than being cut (a path keeps one line and shows its end).
  const rows = items.map(
    ([k, v]) =>
      `<span class="k">${esc(k)}</span><span class="v${k === 'cause' ? ' bad' : ''}">${v}</span>`,
  );
  // A watched recovery's channel files first: on a short screen they are what the user looks for.
  return rows.join('') + (live ? channelsHtml(live) + ownersHtml(live) : '');
}

/**
 * What a watched recovery reads and where it writes (`recover --inspect` says): the checkpoint,
 * and for Flink the operator, subtask and side, each on a line of its own so none is cut.
 *
 * @param {NonNullable<OwnersRecord['about']>} about
 * @returns {[string, string][]}
 */
function aboutItems(about) {
  /** @type {[string, string][]} */
  const items = [
    [
      'checkpoint',
      `<span class="path" title="${esc(about.checkpoint)}" data-about="checkpoint"><bdi>${esc(about.checkpoint)}</bdi></span>`,
    ],
  ];
  if (about.operator !== undefined) {
    const where = [
      `<b data-about="operator">${esc(about.operator)}</b>`,
      about.subtask !== undefined
        ? `subtask <b data-about="subtask">${esc(about.subtask)}</b>`
        : '',
      about.side ? esc(about.side) : '',
      about.rescale ? `rescaled to ${esc(about.rescale)}` : '',
    ].filter((x) => x !== '');
    items.push(['operator', where.join(' · ')]);
  } else if (about.rescale) {
    items.push(['rescale', esc(about.rescale)]);
  }
  if (about.out)
    items.push([
      'out',
      `<span class="path" title="${esc(about.out)}"><bdi>${esc(about.out)}</bdi></span>`,
    ]);
  return items;
}

/**
 * The bytes of each channel's file as it grows (`recover --inspect`), a bar each, scaled to the
 * largest; what is beyond the listed files summed in one line.
 *
 * @param {OwnersRecord} live
 */
function channelsHtml(live) {
  const files = live.channelFiles;
  if (!files) return '';
  const max = Math.max(1, ...files.map((f) => f.bytes));
  const rows = files
    .map((f) => {
      const name = f.name.replace(/\.bin$/, '');
      const pct = ((f.bytes / max) * 100).toFixed(1);
      return `<div class="chan" data-channel="${esc(name)}" data-bytes="${esc(f.bytes)}"><span class="cname" title="${esc(f.name)}">${esc(name)}</span><span class="cbar"><i style="width:${pct}%"></i></span><span class="cbytes">${esc(bytes(f.bytes))}</span></div>`;
    })
    .join('');
  const more = live.moreChannelFiles
    ? `<div class="chan muted">… ${esc(live.moreChannelFiles.files)} more · ${esc(bytes(live.moreChannelFiles.bytes))}</div>`
    : '';
  const total = files.reduce((n, f) => n + f.bytes, 0) + (live.moreChannelFiles?.bytes ?? 0);
  return `<div id="channels">
    <div class="ohead">channels <span class="muted">· ${esc(files.length + (live.moreChannelFiles?.files ?? 0))} files · ${esc(bytes(total))} written</span></div>
    ${rows || '<div class="chan muted">no channel file yet</div>'}${more}
  </div>`;
}

/**
 * Bytes delivered: live from a watched task's readings while the drain runs (the context has
 * the drain's report only at its end), with the share of the payload.
 *
 * @param {TaskView} task
 */
function deliveredHtml(task) {
  const live = task.owners;
  const drain = task.ctx.drain;
  if (live && (live.delivered > 0 || !drain)) {
    if (live.delivered === 0 && live.payload === undefined) return '';
    // "of X" only while it differs: at the end the share says it (one line on a short panel).
    const of =
      live.payload !== undefined && live.payload > 0
        ? `${live.delivered < live.payload ? ` of ${esc(bytes(live.payload))}` : ''} · ${((live.delivered / live.payload) * 100).toFixed(0)} %`
        : '';
    const channels =
      live.channels !== undefined
        ? ` · ${esc(live.channelsFinished)}/${esc(live.channels)} ch`
        : '';
    return `<span data-delivered="${esc(live.delivered)}">${esc(bytes(live.delivered))}${of}${channels}</span>`;
  }
  return drain ? `${esc(bytes(drain.bytes))} · ${esc(drain.buffers)} buffers` : '';
}

/**
 * Per owner what it holds — each resource with its files and bytes — the task dir, and its
 * spill files one by one.
 *
 * @param {OwnersRecord} live
 */
function ownersHtml(live) {
  const owners = live.owners
    .map((o) =>
      o.resources
        .map((r, k) => {
          const parts = [`<b>${esc(r.resource)}</b>`];
          if (r.files !== undefined) parts.push(`${esc(r.files)} files`);
          if (r.bytes !== undefined)
            parts.push(`${esc(bytes(r.bytes))}${r.resource === 'drainer' ? ' to deliver' : ''}`);
          const name = k === 0 ? esc(o.owner) : '';
          return `<div class="owner" data-owner="${esc(o.owner)}" data-resource="${esc(r.resource)}"><span class="oname" style="color:${ownerColor(o.owner)}">${name}</span><span class="ores">${parts.join(' · ')}</span></div>`;
        })
        .join(''),
    )
    .join('');
  const files = (live.files || [])
    .map(
      (f) =>
        `<span class="file" data-bytes="${esc(f.bytes)}"><span class="fname">${esc(f.name)}</span><span class="fbytes">${esc(bytes(f.bytes))}</span></span>`,
    )
    .join('');
  const more = live.moreFiles
    ? `<span class="file muted">… ${esc(live.moreFiles.files)} more · ${esc(bytes(live.moreFiles.bytes))}</span>`
    : '';
  return `<div id="owners">
    <div class="ohead">per owner${live.owners.length ? '' : ' <span class="muted">· nothing owned</span>'}</div>
    ${owners}
    ${live.dir ? `<div class="odir" title="${esc(live.dir)}"><span class="k">task dir</span><span class="path"><bdi>${esc(live.dir)}</bdi></span></div>` : ''}
    ${files || more ? `<div class="files">${files}${more}</div>` : ''}
  </div>`;
}
