// Spillway inspector page. Plain browser JavaScript, no dependencies, nothing loaded from
// anywhere but the relay that served it. The relay sends self-describing records (see
// inspector/protocol.ts); this page folds them into a model and draws it. Pausing freezes the
// model at a record; the slider and the event log move that record, so the whole run can be
// looked back over after it ended.
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);
  const ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ESC[c]);
  /** Replaces an element's content only when it changed: no DOM churn, no lost hover or click. */
  const setHTML = (el, html) => {
    if (el.__html !== html) {
      el.__html = html;
      el.innerHTML = html;
    }
  };

  const MAX_RECORDS = 60000;
  const MAX_TASKS = 400;
  const MAX_LOG = 6000;
  const LOG_ROWS = 300;
  const HOLD_ENDED_MS = 1500;

  // Mirrors style.css: SVG presentation attributes cannot read CSS variables.
  const C = {
    fetch: '#4ea1ff',
    gap: '#e3a93b',
    drain: '#3ccf7a',
    checkpoint: '#b48cff',
    task: '#8a9bb0',
    running: '#2cc2c9',
    finished: '#3ccf7a',
    failed: '#ff5d5d',
    cancelled: '#ff9a3c',
    active: '#2cc2c9',
    line: '#243041',
    faint: '#56657a',
    muted: '#8494a8',
    text: '#e3e9f1',
  };

  const ownerColor = (owner) => {
    if (!owner) return C.faint;
    if (owner.startsWith('checkpoint')) return C.checkpoint;
    return C[owner] || C.task;
  };

  /** Color of a state: by stage for the task machine, by machine for the stage machines. */
  const stateColor = (machine, key) => {
    const byTask = {
      fetching: C.fetch,
      gap: C.gap,
      draining: C.drain,
      running: C.running,
      finished: C.finished,
      failed: C.failed,
      cancelled: C.cancelled,
    };
    if (machine === 'task') return byTask[key] || C.active;
    if (machine === 'fetch') return C.fetch;
    if (machine === 'gap') return C.gap;
    if (machine === 'drain') return C.drain;
    return C.active;
  };

  // ------------------------------------------------------------------------------------------
  // state
  // ------------------------------------------------------------------------------------------
  const S = {
    server: null,
    dropped: 0,
    conn: 'connecting',
    records: [],
    lastI: 0,
    defs: new Map(),
    /** Invoked actor id → machine definition key, learnt from any task. */
    idToDef: new Map(),
    live: newModel(),
    cursor: null, // null = live; else an index into records
    view: null,
    filter: '',
    focus: '',
    showInternal: false,
    t0: null,
    dirty: true,
    newWhilePaused: 0,
  };

  function newModel() {
    return { tasks: new Map(), metrics: [], log: [], events: 0, firstT: null, lastT: null };
  }

  const leafPath = (value) => {
    if (value === undefined || value === null) return '';
    if (typeof value === 'string') return value;
    const key = Object.keys(value)[0];
    if (key === undefined) return '';
    const rest = leafPath(value[key]);
    return rest ? `${key}.${rest}` : key;
  };
  const leafOf = (value) => {
    const p = leafPath(value);
    return p.slice(p.lastIndexOf('.') + 1);
  };

  function getTask(m, key, r) {
    let t = m.tasks.get(key);
    if (t === undefined) {
      t = {
        key,
        label: key.replace(/^task-/, ''),
        firstT: r.t,
        firstI: r.i,
        lastT: r.t,
        lastI: r.i,
        actors: new Map(),
        steps: [],
        status: 'active',
        value: undefined,
        ctx: undefined,
        leaf: '',
        events: 0,
        endedWall: 0,
      };
      m.tasks.set(key, t);
      if (m.tasks.size > MAX_TASKS) {
        for (const [k, old] of m.tasks) {
          if (old.status !== 'active' && k !== S.filter) {
            m.tasks.delete(k);
            break;
          }
        }
      }
    }
    t.lastT = r.t;
    t.lastI = r.i;
    return t;
  }

  /** Folds one record into a model. `live` marks the model that follows the stream. */
  function apply(m, r, live) {
    if (m.firstT === null) m.firstT = r.t;
    m.lastT = r.t;
    switch (r.k) {
      case 'def':
        S.defs.set(r.def.key, r.def);
        return;
      case 'metrics':
        m.metrics.push(r);
        return;
      case 'actor': {
        const t = getTask(m, r.task, r);
        const prev = t.actors.get(r.path);
        t.actors.set(r.path, {
          path: r.path,
          id: r.id,
          parent: r.parent,
          kind: r.kind,
          def: r.def,
          status: 'active',
          value: prev ? prev.value : undefined,
          i: r.i,
        });
        if (r.def) S.idToDef.set(r.id, r.def);
        return;
      }
      case 'snap': {
        const t = getTask(m, r.task, r);
        let a = t.actors.get(r.path);
        if (a === undefined) {
          const slash = r.path.lastIndexOf('/');
          a = {
            path: r.path,
            id: r.path === '' ? r.task : r.path.slice(slash + 1),
            parent: r.path === '' ? null : slash < 0 ? '' : r.path.slice(0, slash),
            kind: r.value !== undefined ? 'machine' : 'actor',
            status: 'active',
            i: r.i,
          };
          t.actors.set(r.path, a);
        }
        a.status = r.status;
        if (r.value !== undefined) a.value = r.value;
        if (r.context !== undefined) a.ctx = r.context;
        if (r.output !== undefined) a.output = r.output;
        if (r.error !== undefined) a.error = r.error;
        if (r.path === '') {
          const before = t.leaf;
          t.status = r.status;
          t.value = r.value;
          t.ctx = r.context || {};
          t.leaf = leafOf(r.value);
          t.steps.push({
            i: r.i,
            t: r.t,
            leaf: t.leaf,
            ownership: t.ctx.ownership || {},
            closed: t.ctx.closedByRegistry || [],
            cause: r.cause,
          });
          if (before !== t.leaf) {
            pushLog(m, {
              k: 'state',
              i: r.i,
              t: r.t,
              task: r.task,
              from: before,
              to: t.leaf,
              status: r.status,
              cause: r.cause,
              error: t.ctx.cause,
            });
          }
          if (r.status !== 'active' && live && !t.endedWall) t.endedWall = performance.now();
        }
        return;
      }
      case 'event': {
        m.events++;
        const t = getTask(m, r.task, r);
        t.events++;
        pushLog(m, r);
        return;
      }
      default:
        return;
    }
  }

  function pushLog(m, row) {
    m.log.push(row);
    if (m.log.length > MAX_LOG) m.log.splice(0, MAX_LOG / 6);
  }

  function build(upTo) {
    const m = newModel();
    for (let k = 0; k <= upTo && k < S.records.length; k++) apply(m, S.records[k], false);
    return m;
  }

  function reset() {
    S.records = [];
    S.lastI = 0;
    S.live = newModel();
    S.cursor = null;
    S.view = null;
    S.t0 = null;
    S.focus = '';
    S.newWhilePaused = 0;
    S.dirty = true;
  }

  function ingest(records) {
    for (const r of records) {
      if (r.i <= S.lastI) continue; // a replay after a reconnect
      S.lastI = r.i;
      if (S.t0 === null && r.k !== 'def') S.t0 = r.t;
      S.records.push(r);
      apply(S.live, r, true);
      if (S.cursor !== null) S.newWhilePaused++;
    }
    if (S.records.length > MAX_RECORDS) {
      const cut = MAX_RECORDS / 6;
      S.records.splice(0, cut);
      S.live = build(S.records.length - 1);
      if (S.cursor !== null) {
        S.cursor = Math.max(0, S.cursor - cut);
        S.view = build(S.cursor);
      }
    }
    S.dirty = true;
  }

  const view = () => (S.cursor === null ? S.live : S.view);

  // ------------------------------------------------------------------------------------------
  // connection
  // ------------------------------------------------------------------------------------------
  let backoff = 500;
  function connect() {
    const ws = new WebSocket(`ws://${location.host}/ws`);
    ws.onopen = () => {
      backoff = 500;
    };
    ws.onmessage = (message) => {
      const msg = JSON.parse(message.data);
      if (msg.type === 'hello') {
        // Every (re)connect replays the whole history: start over.
        reset();
        S.server = msg.server;
        S.dropped = msg.dropped;
        setConn('live');
      } else if (msg.type === 'batch') {
        ingest(msg.records);
      } else if (msg.type === 'bye') {
        setConn('closed');
      }
    };
    ws.onclose = () => {
      setConn('closed');
      // The page stays useful without a server: it shows what it recorded, and it reconnects
      // if a server comes back (a new server id then resets the page).
      setTimeout(connect, backoff);
      backoff = Math.min(backoff * 2, 10000);
    };
  }

  function setConn(state) {
    S.conn = state;
    S.dirty = true;
  }

  // ------------------------------------------------------------------------------------------
  // controls
  // ------------------------------------------------------------------------------------------
  function pause(at) {
    if (S.records.length === 0) return;
    S.cursor =
      at === undefined ? S.records.length - 1 : Math.max(0, Math.min(at, S.records.length - 1));
    S.view = build(S.cursor);
    S.newWhilePaused = 0;
    S.dirty = true;
  }
  function resume() {
    S.cursor = null;
    S.view = null;
    S.dirty = true;
  }
  const isStep = (r) =>
    ((r.k === 'event' && (S.showInternal || !INTERNAL(r.type))) ||
      (r.k === 'snap' && r.path === '')) &&
    (!S.filter || r.task === S.filter);
  function step(dir) {
    if (S.cursor === null) pause();
    let k = S.cursor + dir;
    while (k >= 0 && k < S.records.length && !isStep(S.records[k])) k += dir;
    if (k >= 0 && k < S.records.length) pause(k);
  }
  function indexOfSeq(i) {
    let lo = 0;
    let hi = S.records.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const v = S.records[mid].i;
      if (v === i) return mid;
      if (v < i) lo = mid + 1;
      else hi = mid - 1;
    }
    return Math.max(0, lo - 1);
  }

  $('pause').addEventListener('click', () => (S.cursor === null ? pause() : resume()));
  $('live').addEventListener('click', resume);
  $('step-back').addEventListener('click', () => step(-1));
  $('step-fwd').addEventListener('click', () => step(1));
  $('cursor').addEventListener('input', (e) => pause(Number(e.target.value)));
  $('task-filter').addEventListener('change', (e) => {
    S.filter = e.target.value;
    S.dirty = true;
  });
  $('show-internal').addEventListener('change', (e) => {
    S.showInternal = e.target.checked;
    S.dirty = true;
  });
  // pointerdown, not click: a live list is redrawn often, and a click needs the same element
  // under both halves of the press.
  $('task-list').addEventListener('pointerdown', (e) => {
    const li = e.target.closest('li[data-task]');
    if (!li) return;
    const key = li.dataset.task;
    S.filter = S.filter === key ? '' : key;
    S.dirty = true;
  });
  $('log').addEventListener('pointerdown', (e) => {
    const row = e.target.closest('[data-seq]');
    if (!row) return;
    // Show the state *after* the event: the target's snapshot that it caused, if one follows.
    let at = indexOfSeq(Number(row.dataset.seq));
    const r = S.records[at];
    if (r && r.k === 'event') {
      for (let k = at + 1; k < Math.min(S.records.length, at + 400); k++) {
        const n = S.records[k];
        if (n.k === 'snap' && n.task === r.task && n.path === r.path && n.cause === r.type) {
          at = k;
          break;
        }
      }
    }
    pause(at);
  });
  document.addEventListener('keydown', (e) => {
    if (e.target instanceof HTMLSelectElement || e.target instanceof HTMLInputElement) return;
    if (e.key === ' ') {
      e.preventDefault();
      if (S.cursor === null) pause();
      else resume();
    } else if (e.key === 'ArrowLeft') step(-1);
    else if (e.key === 'ArrowRight') step(1);
  });
  window.addEventListener('resize', () => (S.dirty = true));
  // Releases the hold on an ended task in follow mode.
  setInterval(() => {
    if (S.cursor === null && !S.filter) S.dirty = true;
  }, 500);

  // ------------------------------------------------------------------------------------------
  // formatting
  // ------------------------------------------------------------------------------------------
  const bytes = (n) => {
    if (!Number.isFinite(n)) return '–';
    if (n < 1024) return `${n} B`;
    if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
    if (n < 1024 ** 3) return `${(n / 1024 / 1024).toFixed(1)} MiB`;
    return `${(n / 1024 ** 3).toFixed(2)} GiB`;
  };
  const rel = (t) => (S.t0 === null ? '' : `${((t - S.t0) / 1000).toFixed(3)}s`);
  const shortEvent = (e) => {
    if (e.startsWith('xstate.done.actor.')) return 'done';
    if (e.startsWith('xstate.error.actor.')) return 'error';
    if (e.startsWith('xstate.after')) return 'after';
    return e;
  };
  const lastSeg = (id) => id.slice(id.lastIndexOf('.') + 1);
  const actorName = (task, path) => (path === '' ? 'task' : path);
  const brief = (v, max = 90) => {
    if (v === undefined) return '';
    const s = typeof v === 'string' ? v : JSON.stringify(v);
    return s.length > max ? `${s.slice(0, max - 1)}…` : s;
  };
  const errText = (e) =>
    e && typeof e === 'object' ? `${e.name || 'Error'}: ${e.message || ''}` : brief(e);

  // ------------------------------------------------------------------------------------------
  // focus
  // ------------------------------------------------------------------------------------------
  function focusTask(m) {
    if (S.filter && m.tasks.has(S.filter)) return m.tasks.get(S.filter);
    if (S.cursor !== null) {
      const r = S.records[S.cursor];
      if (r && r.task && m.tasks.has(r.task)) return m.tasks.get(r.task);
    }
    const cur = S.focus ? m.tasks.get(S.focus) : undefined;
    if (cur && cur.status === 'active') return cur;
    let newest;
    for (const t of m.tasks.values()) {
      if (t.status === 'active' && (!newest || t.firstI > newest.firstI)) newest = t;
    }
    // An ending stays on screen for a moment, unless a task started after it: then that one.
    if (cur && S.cursor === null) {
      const startedSince = newest && newest.firstI > cur.lastI;
      if (!startedSince && (!newest || performance.now() - cur.endedWall < HOLD_ENDED_MS)) {
        return cur;
      }
    }
    let best = newest;
    if (!best) for (const t of m.tasks.values()) best = t;
    S.focus = best ? best.key : '';
    return best;
  }

  // ------------------------------------------------------------------------------------------
  // header, scrubber, task list
  // ------------------------------------------------------------------------------------------
  function renderHeader(m) {
    let live = 0;
    for (const t of m.tasks.values()) if (t.status === 'active') live++;
    $('stat-tasks').textContent = m.tasks.size;
    $('stat-live').textContent = live;
    $('stat-events').textContent = m.events.toLocaleString('en-US');
    const conn = $('conn');
    const state = S.cursor !== null ? 'paused' : S.conn;
    conn.dataset.conn = state;
    conn.textContent =
      state === 'paused'
        ? `paused${S.newWhilePaused ? ` · ${S.newWhilePaused} new` : ''}`
        : state === 'live'
          ? 'live'
          : state === 'closed'
            ? 'disconnected · recorded history'
            : 'connecting…';
    conn.title = S.dropped
      ? `${S.dropped} early records were trimmed from the server's history`
      : '';
    const btn = $('pause');
    btn.dataset.paused = String(S.cursor !== null);
    btn.textContent = S.cursor !== null ? '▶ Resume' : '❚❚ Pause';

    const scrub = $('scrubber');
    scrub.hidden = S.cursor === null;
    if (S.cursor !== null) {
      const slider = $('cursor');
      slider.max = String(Math.max(0, S.records.length - 1));
      slider.value = String(S.cursor);
      const r = S.records[S.cursor];
      const what =
        r.k === 'event'
          ? `${r.source ?? '·'} → ${actorName(r.task, r.path)}  ${r.type}`
          : r.k === 'snap'
            ? `${actorName(r.task, r.path)} ${leafPath(r.value) || r.status}`
            : r.k;
      $('cursor-label').textContent = `#${S.cursor + 1}/${S.records.length} · +${rel(r.t)}`;
      $('cursor-label').title = `${r.task || ''} · ${what}`;
    }

    const select = $('task-filter');
    const keys = [...S.live.tasks.keys()].reverse().slice(0, 300);
    const sig = keys.join('|') + '#' + S.filter;
    if (select.dataset.sig !== sig) {
      select.dataset.sig = sig;
      select.innerHTML =
        `<option value="">All tasks · follow</option>` +
        keys.map((k) => `<option value="${esc(k)}">${esc(k)}</option>`).join('');
      select.value = S.filter;
    }
  }

  const outcomeColor = (t) =>
    t.status === 'active'
      ? stateColor('task', t.leaf) || C.active
      : C[t.leaf] || (t.status === 'error' ? C.failed : C.muted);

  function renderTasks(m, focus) {
    const counts = {};
    for (const t of m.tasks.values()) {
      const k = t.status === 'active' ? 'running' : t.leaf || t.status;
      counts[k] = (counts[k] || 0) + 1;
    }
    setHTML(
      $('outcomes'),
      ['running', 'finished', 'failed', 'cancelled']
        .filter((k) => counts[k])
        .map(
          (k) =>
            `<span><b style="color:${k === 'running' ? C.active : C[k]}">${counts[k]}</b> ${k === 'running' ? 'live' : k}</span>`,
        )
        .join(''),
    );
    const items = [...m.tasks.values()].reverse().slice(0, 150);
    if (items.length === 0) {
      setHTML($('task-list'), `<li class="empty">waiting for tasks…</li>`);
      return;
    }
    setHTML(
      $('task-list'),
      items
        .map((t) => {
          const runs = [];
          for (const s of t.steps) {
            const last = runs[runs.length - 1];
            if (last && last.leaf === s.leaf) last.n++;
            else runs.push({ leaf: s.leaf, n: 1 });
          }
          const total = runs.reduce((a, r) => a + r.n, 0) || 1;
          const bar = runs
            .map(
              (r) =>
                `<span style="width:${((r.n / total) * 100).toFixed(2)}%;background:${stateColor('task', r.leaf)}" title="${esc(r.leaf)}"></span>`,
            )
            .join('');
          const color = outcomeColor(t);
          const label = t.status === 'active' ? t.leaf || 'starting' : t.leaf || t.status;
          return `<li data-task="${esc(t.key)}" data-status="${esc(t.status)}" data-leaf="${esc(t.leaf)}" class="${focus && focus.key === t.key ? 'selected' : ''}">
          <div class="row"><span class="dot ${esc(t.status)}" style="background:${color}"></span><span class="label" title="${esc(t.key)}">${esc(t.label)}</span><span class="chip" style="color:${color}">${esc(label)}</span></div>
          <div class="phasebar">${bar}</div></li>`;
        })
        .join(''),
    );
  }

  // ------------------------------------------------------------------------------------------
  // statechart: nested boxes drawn from the machine definitions
  // ------------------------------------------------------------------------------------------
  /** The ids of the active state nodes for a state value. */
  function activeIds(rootId, value) {
    const ids = new Set([rootId]);
    const walk = (prefix, v) => {
      if (v === undefined || v === null) return;
      if (typeof v === 'string') {
        ids.add(`${prefix}.${v}`);
        return;
      }
      for (const [k, sub] of Object.entries(v)) {
        ids.add(`${prefix}.${k}`);
        walk(`${prefix}.${k}`, sub);
      }
    };
    walk(rootId, value);
    return ids;
  }

  const within = (id, ancestor) => id === ancestor || id.startsWith(`${ancestor}.`);

  function subtreeTransitions(node, out = []) {
    for (const t of node.transitions) out.push(t);
    for (const c of node.states) subtreeTransitions(c, out);
    return out;
  }

  /**
   * Draws one machine as nested boxes. Compound children flow left to right with an arrow
   * wherever a transition leads from one subtree into the next; transitions not drawn as
   * arrows are listed as chips in their source state. Final states of a root sit in a column
   * at its end. Invoked machines are not nested here: they get a strip each below.
   */
  function renderMachine(def, env) {
    return renderState(def.root, { ...env, machine: def.key, covered: new Set(), isRoot: true });
  }

  function renderState(node, env) {
    const isActive = env.active.has(node.id);
    const isLeaf = node.states.length === 0;
    const classes = ['st', node.type];
    if (isActive) classes.push('active');
    if (isActive && isLeaf) classes.push('leaf');
    if (isActive && env.status === 'stopped') classes.push('was');
    if (env.grow) classes.push('grow');
    const color = stateColor(env.machine, node.key);

    let head = `<span class="st-name">${esc(node.key)}</span>`;
    if (env.isRoot) head += `<span class="st-type">${esc(env.machine)} machine</span>`;

    const heads = [];
    const notes = [];
    const hoisted = [];
    for (const inv of node.invoke) {
      const path = env.path ? `${env.path}/${inv.id}` : inv.id;
      const actor = env.task.actors.get(path);
      const st = actor ? actor.status : '';
      // Invoked machines are drawn as strips below the chart; only other actors get a chip.
      if ((actor && actor.def) || S.idToDef.has(inv.id)) continue;
      heads.push(
        `<span class="inv" title="invokes ${esc(inv.src)}${actor ? ` (${esc(actor.status)})` : ''}"><span class="dot ${esc(st)}"></span>${esc(inv.id)}</span>`,
      );
    }
    if (env.isRoot && !env.child) {
      // Actors spawned by transitions (checkpoint writers) are in no invoke list.
      for (const a of env.task.actors.values()) {
        if (a.parent === '' && /^checkpoint-/.test(a.id)) {
          heads.push(
            `<span class="inv spawned" title="checkpoint writer (spawned)"><span class="dot ${esc(a.status)}"></span>${esc(a.id)}</span>`,
          );
        }
      }
    }

    let body = '';
    if (!isLeaf) {
      const finals = env.isRoot ? node.states.filter((c) => c.type === 'final') : [];
      const flow = node.states.filter((c) => !finals.includes(c));
      // Arrows first: the transitions they draw are then left out of the chips below.
      const arrows = flow.map((c, k) => {
        if (k === 0) return '';
        const links = subtreeTransitions(flow[k - 1]).filter((t) =>
          t.targets.some((id) => within(id, c.id)),
        );
        for (const t of links) env.covered.add(t);
        const label = [...new Set(links.map((t) => shortEvent(t.event)))].join(' · ');
        return `<div class="arrow${links.length ? '' : ' none'}"><span class="al">${esc(label)}</span><span class="ah">→</span></div>`;
      });
      // A transition every child shares (each stage's `error → failed`) is shown once, here.
      if (flow.length > 1) {
        const keyOf = (t) => `${shortEvent(t.event)}→${t.targets.join(',')}`;
        const shared = new Map();
        flow.forEach((c, k) => {
          for (const t of c.transitions) {
            if (env.covered.has(t) || t.targets.length === 0) continue;
            const key = keyOf(t);
            if (!shared.has(key)) shared.set(key, { t, hits: new Set() });
            shared.get(key).hits.add(k);
          }
        });
        for (const { t, hits } of shared.values()) {
          if (hits.size !== flow.length) continue;
          for (const c of flow)
            for (const u of c.transitions) if (keyOf(u) === keyOf(t)) env.covered.add(u);
          hoisted.push(
            `<span class="tchip" title="from each of: ${esc(flow.map((c) => c.key).join(', '))}"><b>${esc(shortEvent(t.event))}</b> → ${esc(t.targets.map(lastSeg).join(', '))} <i>from any</i></span>`,
          );
        }
      }
      const parts = [];
      flow.forEach((c, k) => {
        parts.push(arrows[k]);
        parts.push(renderState(c, { ...env, isRoot: false, grow: c.states.length > 0 }));
      });
      if (finals.length) {
        parts.push(
          `<div class="arrow"><span class="al">ends</span><span class="ah">→</span></div>`,
        );
        parts.push(
          `<div class="st-col">${finals.map((c) => renderState(c, { ...env, isRoot: false, grow: false })).join('')}</div>`,
        );
      }
      body = `<div class="st-body">${parts.join('')}</div>`;
    }

    notes.push(...hoisted);
    const own = node.transitions.filter((t) => !env.covered.has(t));
    const selfEvents = [...new Set(own.filter((t) => t.targets.length === 0).map((t) => t.event))];
    const seen = new Set();
    for (const t of own) {
      if (t.targets.length === 0) continue;
      const text = `<b>${esc(shortEvent(t.event))}</b> → ${esc(t.targets.map(lastSeg).join(', '))}`;
      if (seen.has(text)) continue;
      seen.add(text);
      const title = `${t.event}${t.guard ? ` [${t.guard}]` : ''}${t.description ? ` — ${t.description}` : ''}`;
      notes.push(
        `<span class="tchip${t.guard ? ' guarded' : ''}" title="${esc(title)}">${text}</span>`,
      );
    }
    if (node.exit.length) {
      notes.push(
        `<span class="tchip exit" title="exit actions">exit: ${esc(node.exit.join(', '))}</span>`,
      );
    }
    if (selfEvents.length) {
      notes.push(
        `<span class="tchip on" title="handled here without leaving the state">${selfEvents.map((e) => esc(e)).join(' · ')}</span>`,
      );
    }
    const notesHtml = notes.length ? `<div class="st-notes">${notes.join('')}</div>` : '';
    const attrs = `data-machine="${esc(env.machine)}" data-state="${esc(node.key)}" data-id="${esc(node.id)}"`;
    const title = node.description ? ` title="${esc(node.description)}"` : '';
    return `<div class="${classes.join(' ')}" style="--sc:${color}" ${attrs}${title}><div class="st-head">${head}${heads.join('')}</div>${notesHtml}${body}</div>`;
  }

  /** Invoked machines in definition order, depth first: fetch, gap, drain for a task. */
  function invokedMachines(node, path, out = []) {
    for (const inv of node.invoke) {
      if (S.idToDef.has(inv.id))
        out.push({ id: inv.id, path: path ? `${path}/${inv.id}` : inv.id, within: node });
    }
    for (const c of node.states) invokedMachines(c, path, out);
    return out;
  }

  /** One invoked machine as a strip: its states in a row, the active one lit. */
  function renderStrip(task, entry) {
    const def = S.defs.get(S.idToDef.get(entry.id));
    if (!def) return '';
    const actor = task.actors.get(entry.path);
    const status = actor ? actor.status : '';
    const active = actor ? activeIds(def.root.id, actor.value) : new Set();
    const env = {
      task,
      path: entry.path,
      active,
      status,
      machine: def.key,
      covered: new Set(),
      child: true,
    };
    const states = def.root.states.length ? def.root.states : [def.root];
    const parts = [];
    states.forEach((c, k) => {
      if (k > 0) {
        const links = subtreeTransitions(states[k - 1]).filter((t) =>
          t.targets.some((id) => within(id, c.id)),
        );
        const label = [...new Set(links.map((t) => shortEvent(t.event)))].join(' · ');
        parts.push(
          `<div class="arrow small${links.length ? '' : ' none'}"><span class="al">${esc(label)}</span><span class="ah">→</span></div>`,
        );
      }
      parts.push(renderStripState(c, env));
    });
    const statusText = actor ? status : 'not started';
    return `<div class="strip" data-machine="${esc(def.key)}" data-status="${esc(status || 'idle')}" style="--sc:${stateColor(def.key, '')}">
      <div class="strip-head" title="${esc(def.description || '')}"><span class="dot ${esc(status)}"></span><b>${esc(entry.id)}</b><span class="st-type">${esc(statusText)}</span></div>
      <div class="strip-body">${parts.join('')}</div></div>`;
  }

  function renderStripState(node, env) {
    const isActive = env.active.has(node.id);
    const classes = ['st', 'mini', node.type];
    if (isActive) classes.push('active', 'leaf');
    if (isActive && env.status === 'stopped') classes.push('was');
    if (isActive && env.status === 'error') classes.push('errored');
    // The actor each state invokes (the stage's promise body), as a status dot.
    const dots = node.invoke
      .map((inv) => {
        const a = env.task.actors.get(`${env.path}/${inv.id}`);
        return `<span class="dot ${esc(a ? a.status : '')}" title="${esc(inv.id)}${a ? `: ${esc(a.status)}` : ''}"></span>`;
      })
      .join('');
    const attrs = `data-machine="${esc(env.machine)}" data-state="${esc(node.key)}" data-id="${esc(node.id)}"`;
    const title = node.description ? ` title="${esc(node.description)}"` : '';
    return `<div class="${classes.join(' ')}" ${attrs}${title}><div class="st-head">${dots}<span class="st-name">${esc(node.key)}</span></div></div>`;
  }

  function renderChart(task) {
    const host = $('task-chart');
    $('chart-task').textContent = task ? task.key : '';
    const root = task && task.actors.get('');
    const def = root && S.defs.get(root.def);
    if (!task || !def) {
      setHTML(
        host,
        `<div class="empty">${task ? 'no definition received for this task' : 'waiting for a task…'}</div>`,
      );
      setHTML($('state-desc'), '');
      return;
    }
    const active = activeIds(def.root.id, task.value);
    const chart = renderMachine(def, { task, path: '', active, status: task.status, child: false });
    const strips = invokedMachines(def.root, '')
      .map((entry) => renderStrip(task, entry))
      .join('');
    setHTML(host, `${chart}<div class="strips">${strips}</div>`);
    const leafId = [...active].pop();
    const node = findState(def.root, leafId);
    const ctx = task.ctx || {};
    let text = `<b>${esc(task.leaf || '…')}</b>`;
    if (node && node.description) text += ` — ${esc(node.description)}`;
    if (task.status !== 'active' && ctx.cause) {
      text += ` · <span style="color:${C.failed}">${esc(errText(ctx.cause))}</span>`;
    }
    setHTML($('state-desc'), text);
  }

  function findState(node, id) {
    if (node.id === id) return node;
    for (const c of node.states) {
      const f = findState(c, id);
      if (f) return f;
    }
    return undefined;
  }

  // ------------------------------------------------------------------------------------------
  // actor tree + context
  // ------------------------------------------------------------------------------------------
  function renderActors(task) {
    const host = $('actor-tree');
    if (!task) {
      setHTML(host, '');
      setHTML($('context'), '');
      return;
    }
    const kids = new Map();
    for (const a of task.actors.values()) {
      if (a.parent === null) continue;
      if (!kids.has(a.parent)) kids.set(a.parent, []);
      kids.get(a.parent).push(a);
    }
    for (const list of kids.values()) list.sort((x, y) => x.i - y.i);
    const rows = [];
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
    setHTML(host, rows.join(''));

    const ctx = task.ctx || {};
    const own = Object.entries(ctx.ownership || {});
    const ownHtml = own.length
      ? own
          .map(([r, o]) => `${esc(r)}→<span style="color:${ownerColor(o)}">${esc(o)}</span>`)
          .join(', ')
      : '<span class="muted">nothing owned</span>';
    const closed = ctx.closedByRegistry || [];
    const fetch = ctx.fetch;
    const drain = ctx.drain;
    const items = [
      ['owns', ownHtml],
      [
        'closed by registry',
        closed.length
          ? `<span style="color:${C.failed}">${esc(closed.join(', '))}</span>`
          : '<span class="muted">—</span>',
      ],
      [
        'spilled',
        fetch
          ? `${esc(fetch.spillFiles)} files · ${esc(bytes(fetch.spilledBytes))}`
          : '<span class="muted">—</span>',
      ],
      [
        'delivered',
        drain
          ? `${esc(bytes(drain.bytes))} · ${esc(drain.buffers)} buffers`
          : '<span class="muted">—</span>',
      ],
      ['checkpoints', `${esc(ctx.checkpoints ?? 0)} · trigger ${esc(ctx.trigger ?? '—')}`],
    ];
    if (ctx.cause) items.push(['cause', `<span class="bad">${esc(errText(ctx.cause))}</span>`]);
    setHTML(
      $('context'),
      items
        .map(
          ([k, v]) =>
            `<span class="k">${esc(k)}</span><span class="v${k === 'cause' ? ' bad' : ''}">${v}</span>`,
        )
        .join(''),
    );
  }

  // ------------------------------------------------------------------------------------------
  // ownership lane
  // ------------------------------------------------------------------------------------------
  const OWNERSHIP_CAUSES = new Set([
    'SPILL.OWNED',
    'FETCH.HANDOFF',
    'DRAINER.READY',
    'SNAPSHOT.OWNED',
    'SPILL.RELEASED',
  ]);

  function renderLegend() {
    const items = [
      ['fetch', C.fetch],
      ['gap', C.gap],
      ['drain', C.drain],
      ['checkpoint-N', C.checkpoint],
      ['closed by registry', C.failed],
    ];
    setHTML(
      $('owner-legend'),
      items.map(([n, c]) => `<span><i style="background:${c}"></i>${esc(n)}</span>`).join(''),
    );
  }

  function renderLane(task) {
    const svg = $('lane');
    const W = svg.clientWidth || svg.parentElement.clientWidth;
    const H = svg.clientHeight || svg.parentElement.clientHeight;
    if (!task || task.steps.length === 0 || W < 50) {
      setHTML(
        svg,
        `<text x="12" y="22">${task ? 'no snapshots yet' : 'waiting for a task…'}</text>`,
      );
      return;
    }
    const steps = task.steps;
    const full = S.live.tasks.get(task.key);
    const total = Math.max(steps.length, full ? full.steps.length : 0);
    const order = (r) =>
      r === 'taskDir'
        ? 0
        : r === 'fetchedState'
          ? 1
          : r === 'drainer'
            ? 2
            : 3 + (Number(r.split('-')[1]) || 0);
    const resources = new Set(['taskDir', 'fetchedState', 'drainer']);
    for (const s of steps) {
      for (const r of Object.keys(s.ownership)) resources.add(r);
      for (const r of s.closed) resources.add(r);
    }
    const rows = [...resources].sort((a, b) => order(a) - order(b));
    const L = 112;
    const R = 130;
    const top = 6;
    const stateH = 20;
    const bottom = 18;
    const n = rows.length;
    const rowH = Math.max(16, Math.min(28, (H - top - stateH - 8 - bottom) / n));
    const colW = (W - L - R) / Math.max(total, 1);
    const x = (k) => L + k * colW;
    const out = [];

    // Phase band: the task's state at each step.
    let k0 = 0;
    for (let k = 1; k <= steps.length; k++) {
      if (k === steps.length || steps[k].leaf !== steps[k0].leaf) {
        const leaf = steps[k0].leaf;
        const w = x(k) - x(k0);
        out.push(
          `<rect x="${x(k0) + 0.5}" y="${top}" width="${Math.max(1, w - 1)}" height="${stateH}" rx="3" fill="${stateColor('task', leaf)}" fill-opacity="0.22" stroke="${stateColor('task', leaf)}" stroke-opacity="0.6" data-phase="${esc(leaf)}"><title>${esc(leaf)}</title></rect>`,
        );
        if (w > 40) {
          out.push(
            `<text x="${x(k0) + 6}" y="${top + 14}" style="fill:${stateColor('task', leaf)};font-weight:600">${esc(leaf)}</text>`,
          );
        }
        k0 = k;
      }
    }
    out.push(`<text class="rowlbl" x="8" y="${top + 14}">state</text>`);

    const y0 = top + stateH + 8;
    rows.forEach((res, ri) => {
      const y = y0 + ri * rowH;
      out.push(
        `<line class="grid" x1="${L}" x2="${W - R}" y1="${y + rowH / 2}" y2="${y + rowH / 2}" stroke-dasharray="2 4"/>`,
      );
      out.push(`<text class="rowlbl" x="8" y="${y + rowH / 2 + 4}">${esc(res)}</text>`);
      const h = rowH - 6;
      let start = -1;
      let owner = null;
      const flushSeg = (end) => {
        if (owner === null) return;
        const w = x(end) - x(start);
        const fill = ownerColor(owner);
        out.push(
          `<rect x="${x(start) + 1}" y="${y + 3}" width="${Math.max(2, w - 2)}" height="${h}" rx="4" fill="${fill}" data-resource="${esc(res)}" data-owner="${esc(owner)}" data-from="${start}" data-to="${end}"><title>${esc(res)} owned by ${esc(owner)} (steps ${start + 1}–${end})</title></rect>`,
        );
        if (w > owner.length * 7 + 10) {
          out.push(
            `<text class="lbl" x="${x(start) + 7}" y="${y + 3 + h / 2 + 4}">${esc(owner)}</text>`,
          );
        }
      };
      for (let k = 0; k < steps.length; k++) {
        const o = steps[k].ownership[res] ?? null;
        if (o !== owner) {
          flushSeg(k);
          if (owner !== null && o === null) {
            // The resource is gone at step k: closed by the registry, handed on, or released.
            const cx = x(k) + 7;
            const cy = y + rowH / 2;
            if (steps[k].closed.includes(res)) {
              out.push(
                `<g data-closed-by-registry="${esc(res)}"><line x1="${cx - 5}" y1="${cy - 5}" x2="${cx + 5}" y2="${cy + 5}" stroke="${C.failed}" stroke-width="2.5"/><line x1="${cx - 5}" y1="${cy + 5}" x2="${cx + 5}" y2="${cy - 5}" stroke="${C.failed}" stroke-width="2.5"/><text x="${cx + 9}" y="${cy + 4}" style="fill:${C.failed};font-weight:600">closed by registry</text><title>${esc(res)}: closed by the task's registry when the task ended</title></g>`,
              );
            } else if (res === 'taskDir' && steps[k].cause === 'FETCH.HANDOFF') {
              out.push(
                `<text x="${cx + 4}" y="${cy + 4}" style="fill:${C.muted}">↳ fetchedState</text>`,
              );
            } else {
              out.push(
                `<circle cx="${cx}" cy="${cy}" r="4" fill="none" stroke="${C.muted}" stroke-width="1.5" data-released="${esc(res)}"><title>${esc(res)} released by its owner</title></circle>`,
              );
            }
          }
          start = k;
          owner = o;
        }
      }
      // Still owned at the last step shown: the segment runs to the cursor.
      if (owner !== null) flushSeg(steps.length);
    });

    // Steps where ownership moved, labeled by the event that moved it.
    const yAxis = y0 + n * rowH + 12;
    let lastEnd = -Infinity;
    for (let k = 0; k < steps.length; k++) {
      if (!OWNERSHIP_CAUSES.has(steps[k].cause) && steps[k].closed.length === 0) continue;
      const xx = x(k);
      out.push(
        `<line x1="${xx}" x2="${xx}" y1="${y0}" y2="${y0 + n * rowH}" stroke="${C.line}" stroke-width="1"/>`,
      );
      const label =
        steps[k].closed.length && !OWNERSHIP_CAUSES.has(steps[k].cause)
          ? 'registry closes'
          : steps[k].cause;
      const wLabel = label.length * 6.2;
      if (xx - 2 > lastEnd) {
        out.push(`<text class="axis" x="${xx + 2}" y="${yAxis}">${esc(label)}</text>`);
        lastEnd = xx + 2 + wLabel;
      }
    }
    // Where the cursor is when looking back; the rest of the task is still to come.
    if (total > steps.length) {
      const xc = x(steps.length);
      out.push(
        `<line x1="${xc}" x2="${xc}" y1="${top}" y2="${y0 + n * rowH}" stroke="${C.gap}" stroke-width="2"/>`,
      );
    }
    svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
    setHTML(svg, out.join(''));
  }

  // ------------------------------------------------------------------------------------------
  // spill plot
  // ------------------------------------------------------------------------------------------
  function renderPlot(m) {
    const svg = $('plot');
    const W = svg.clientWidth || svg.parentElement.clientWidth;
    const H = svg.clientHeight || svg.parentElement.clientHeight;
    const pts = m.metrics;
    if (pts.length === 0 || W < 50) {
      setHTML(
        svg,
        `<text x="4" y="16">no spill metrics yet</text><text x="4" y="34">(the demo publishes them)</text>`,
      );
      return;
    }
    const last = pts[pts.length - 1];
    const windowMs = 60000;
    const t1 = last.t;
    const t0 = Math.max(pts[0].t, t1 - windowMs);
    const shown = pts.filter((p) => p.t >= t0);
    const L = 54;
    const R = 26;
    const T = 62;
    const B = 20;
    const span = Math.max(1000, t1 - t0);
    const x = (t) => L + ((t - t0) / span) * (W - L - R);
    const maxB = niceBytes(Math.max(1, ...shown.map((p) => p.bytes)));
    const maxF = niceCount(Math.max(1, ...shown.map((p) => Math.max(p.files, p.liveTasks))));
    const yB = (v) => T + (1 - v / maxB) * (H - T - B);
    const yF = (v) => T + (1 - v / maxF) * (H - T - B);
    const out = [];
    for (let g = 0; g <= 4; g++) {
      const y = T + (g / 4) * (H - T - B);
      out.push(`<line class="grid" x1="${L}" x2="${W - R}" y1="${y}" y2="${y}"/>`);
      out.push(
        `<text class="axis" x="${L - 6}" y="${y + 4}" text-anchor="end">${esc(bytes(maxB * (1 - g / 4)))}</text>`,
      );
      out.push(
        `<text class="axis" x="${W - R + 6}" y="${y + 4}">${esc(Math.round(maxF * (1 - g / 4)))}</text>`,
      );
    }
    const secs = Math.round(span / 1000);
    out.push(`<text class="axis" x="${L}" y="${H - 5}">−${secs}s</text>`);
    out.push(`<text class="axis" x="${W - R}" y="${H - 5}" text-anchor="end">now</text>`);
    const stepPath = (f) => {
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
    // Legend with the latest values: what is on disk right now.
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
    svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
    setHTML(svg, out.join(''));
  }

  /** An axis top in whole units of the largest fitting binary unit: 4 MiB, 10 MiB, 200 KiB. */
  function niceBytes(v) {
    const unit = v >= 1024 ** 3 ? 1024 ** 3 : v >= 1024 ** 2 ? 1024 ** 2 : v >= 1024 ? 1024 : 1;
    const x = v / unit;
    const p = 10 ** Math.floor(Math.log10(x));
    for (const f of [1, 2, 4, 8, 10]) if (f * p >= x) return f * p * unit;
    return 10 * p * unit;
  }

  /** An axis top whose quarters are whole numbers. */
  function niceCount(v) {
    for (let p = 1; ; p *= 10)
      for (const f of [4, 8, 12, 20, 40, 60, 80]) if (f * p >= v) return f * p;
  }

  // ------------------------------------------------------------------------------------------
  // event log
  // ------------------------------------------------------------------------------------------
  const INTERNAL = (type) =>
    type.startsWith('xstate.') &&
    !type.startsWith('xstate.done.actor.') &&
    !type.startsWith('xstate.error.actor.');

  function detailOf(r) {
    const d = r.data || {};
    switch (r.type) {
      case 'SPILL.OWNED':
        return `${d.resource} → ${d.owner}${d.detail ? ` · ${String(d.detail).split('/').slice(-1)[0]}` : ''}`;
      case 'FETCH.HANDOFF':
        return `fetchedState → gap · ${d.spillFiles} files, ${bytes(d.spilledBytes)}`;
      case 'DRAINER.READY':
        return 'drainer → gap';
      case 'TRIGGER.INSTALLED':
        return 'checkpoints now cut the spill state';
      case 'SNAPSHOT.OWNED':
        return `snapshot-${d.checkpointId} → checkpoint-${d.checkpointId}`;
      case 'SPILL.RELEASED':
        return `${d.resource} released`;
      case 'own':
      case 'disown':
        return `${r.type} ${d.resource}`;
      case 'CHECKPOINT':
        return `#${d.checkpointId}`;
      case 'CANCEL':
        return d.reason ? String(d.reason) : '';
      case 'FAIL':
        return errText(d.error);
      default:
        if (r.type.startsWith('xstate.error.actor.')) return errText(d.error);
        if (r.type.startsWith('xstate.done.actor.')) return brief(d.output, 90);
        return r.data ? brief(d, 90) : '';
    }
  }

  function renderLog(m, focus) {
    const host = $('log');
    let atSeq = S.cursor !== null ? S.records[S.cursor].i : -1;
    if (S.cursor !== null && S.records[S.cursor].k === 'snap') {
      // The cursor sits on a snapshot: mark the event that caused it.
      const snap = S.records[S.cursor];
      for (let k = S.cursor - 1; k >= Math.max(0, S.cursor - 400); k--) {
        const r = S.records[k];
        if (
          r.k === 'event' &&
          r.task === snap.task &&
          r.path === snap.path &&
          r.type === snap.cause
        ) {
          atSeq = r.i;
          break;
        }
      }
      if (snap.path === '' && atSeq === snap.i) atSeq = snap.i;
    }
    const rows = [];
    for (let k = m.log.length - 1; k >= 0 && rows.length < LOG_ROWS; k--) {
      const r = m.log[k];
      if (S.filter && r.task !== S.filter) continue;
      if (r.k === 'event' && !S.showInternal && INTERNAL(r.type)) continue;
      const task = r.task.replace(/^task-/, '');
      const at = r.i === atSeq ? ' at' : '';
      if (r.k === 'state') {
        const err = r.to === 'failed' ? ' err' : '';
        rows.push(
          `<div class="ev state${err}${at}" data-seq="${r.i}"><span class="time">${esc(rel(r.t))}</span><span class="task">${esc(task)}</span><span class="route">task</span><span class="type">⟶ ${esc(r.to || r.status)}</span><span class="detail">${esc(r.from ? `from ${r.from}` : 'started')}${r.to === 'failed' && r.error ? ` · ${esc(errText(r.error))}` : ''}</span></div>`,
        );
        continue;
      }
      const src = r.source === null ? '·' : r.source === '' ? 'task' : r.source;
      const internal = INTERNAL(r.type) ? ' internal' : '';
      const own = OWNERSHIP_CAUSES.has(r.type);
      const color = own
        ? ` style="color:${ownerColor(r.type === 'SPILL.RELEASED' ? 'task' : r.source || 'task')}"`
        : '';
      const err = r.type.startsWith('xstate.error.actor.') || r.type === 'FAIL' ? ' err' : '';
      rows.push(
        `<div class="ev${err}${at}" data-seq="${r.i}" data-type="${esc(r.type)}"><span class="time">${esc(rel(r.t))}</span><span class="task">${esc(task)}</span><span class="route"><span class="src${r.inferred ? ' inferred' : ''}"${r.inferred ? ' title="sent from a promise body; source inferred from the event"' : ''}>${esc(src)}</span> <span class="to">→</span> ${esc(actorName(r.task, r.path))}</span><span class="type${internal}"${color}>${esc(r.type)}</span><span class="detail" title="${esc(brief(r.data, 400))}">${esc(detailOf(r))}</span></div>`,
      );
    }
    setHTML(host, rows.length ? rows.join('') : `<div class="empty">no events yet</div>`);
    if (S.cursor !== null) {
      const cur = host.querySelector('.ev.at');
      if (cur) cur.scrollIntoView({ block: 'nearest' });
    }
  }

  // ------------------------------------------------------------------------------------------
  // render loop
  // ------------------------------------------------------------------------------------------
  function draw() {
    S.dirty = false;
    const m = view();
    const focus = focusTask(m);
    renderHeader(m);
    renderTasks(m, focus);
    renderChart(focus);
    renderActors(focus);
    renderLane(focus);
    renderPlot(m);
    renderLog(m, focus);
  }

  // The stream redraws at most ~12 times a second, so a busy run cannot peg the browser's CPU;
  // what a person does (pause, step, filter) is drawn at once.
  const FRAME_MS = 80;
  let lastFrame = 0;
  function render(now) {
    if (S.dirty && now - lastFrame >= FRAME_MS) {
      lastFrame = now;
      draw();
    }
    requestAnimationFrame(render);
  }
  for (const type of ['pointerdown', 'keydown', 'input', 'change', 'click']) {
    // After the handlers above have run (bubbling phase, registered last).
    document.addEventListener(type, () => {
      if (S.dirty) draw();
    });
  }

  renderLegend();
  connect();
  requestAnimationFrame(render);
})();
