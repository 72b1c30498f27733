// @ts-check
// Spillway inspector page: native ES modules, no build step, no dependencies, nothing loaded
// from anywhere but the relay that served it. The relay sends self-describing records (see
// inspector/protocol.ts); model.js folds them into a model, each panel module draws one part
// of it, and this entry wires them: controls change the store, the render loop draws it.

import { renderActors } from './actors.js';
import { connect } from './connection.js';
import { installControls } from './controls.js';
import { focusTask, renderFollow } from './focus.js';
import { renderHeader } from './header.js';
import { renderLane, renderLegend } from './lane.js';
import { renderLog } from './log.js';
import { store, view } from './model.js';
import { renderPlot } from './plot.js';
import { renderChart } from './statechart.js';
import { renderTasks } from './task-list.js';

function draw() {
  store.dirty = false;
  const m = view();
  const focus = focusTask(m);
  renderHeader(m);
  renderTasks(m, focus);
  renderChart(focus);
  renderFollow(focus);
  renderActors(focus);
  renderLane(focus);
  renderPlot(m);
  renderLog(m);
}

// The stream redraws at most ~12 times a second, so a busy run cannot peg the browser's CPU;
// what a person does (pause, step, filter) is drawn at once.
const FRAME_MS = 80;
let lastFrame = 0;
/** @param {number} now */
function render(now) {
  if (store.dirty && now - lastFrame >= FRAME_MS) {
    lastFrame = now;
    draw();
  }
  requestAnimationFrame(render);
}

installControls();
for (const type of ['pointerdown', 'keydown', 'input', 'change', 'click']) {
  // After the handlers installControls registered (bubbling phase, registered last).
  document.addEventListener(type, () => {
    if (store.dirty) draw();
  });
}

renderLegend();
connect();
requestAnimationFrame(render);
