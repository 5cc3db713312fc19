// nanomx-trace viewer: the track model (one layout row per process header, thread and counter,
// stacked from the top) and the mapping between time, rows and canvas pixels.
'use strict';

(function (viewer) {
  const { LABEL_WIDTH, AXIS_HEIGHT, LANE_HEIGHT, PROCESS_HEADER, COUNTER_HEIGHT, state, canvas } = viewer;

  function buildLayout() {
    const { meta, A } = state;
    const rows = [];
    let y = 0;
    let lastProcess = -1;
    for (let r = 0; r < meta.rows.length; r++) {
      const row = meta.rows[r];
      if (row.process !== lastProcess) {
        rows.push({ kind: 'process', y, height: PROCESS_HEADER, process: row.process });
        y += PROCESS_HEADER;
        lastProcess = row.process;
      }
      if (row.kind === 'thread') {
        const lanes = Math.max(1, row.lanes.length);
        rows.push({ kind: 'thread', y, height: lanes * LANE_HEIGHT + 2, data: row, index: r });
        y += lanes * LANE_HEIGHT + 2;
      } else {
        let max = 0, min = 0;
        for (let i = row.first; i < row.first + row.count; i++) {
          const v = A.counterValue[i];
          if (v > max) max = v;
          if (v < min) min = v;
        }
        rows.push({ kind: 'counter', y, height: COUNTER_HEIGHT, data: row, index: r, max, min });
        y += COUNTER_HEIGHT;
      }
    }
    state.rows = rows;
    state.contentHeight = y;
    const rowByIndex = new Map();
    for (const row of rows) if (row.index !== undefined) rowByIndex.set(row.index, row);
    state.rowByIndex = rowByIndex;
  }

  // ---------------------------------------------------------------- coordinates
  function plotWidth() { return Math.max(1, state.width - LABEL_WIDTH); }
  function xOf(t) { return LABEL_WIDTH + (t - state.view.t0) / (state.view.t1 - state.view.t0) * plotWidth(); }
  function tOf(x) { return state.view.t0 + (x - LABEL_WIDTH) / plotWidth() * (state.view.t1 - state.view.t0); }
  function yOf(row) { return AXIS_HEIGHT + row.y - state.scrollY; }

  function resize() {
    state.dpr = window.devicePixelRatio || 1;
    const rect = canvas.getBoundingClientRect();
    state.width = Math.max(200, rect.width);
    state.height = Math.max(100, rect.height);
    canvas.width = Math.round(state.width * state.dpr);
    canvas.height = Math.round(state.height * state.dpr);
    clampScroll();
  }

  function clampScroll() {
    const maxScroll = Math.max(0, state.contentHeight - (state.height - AXIS_HEIGHT));
    state.scrollY = Math.min(Math.max(0, state.scrollY), maxScroll);
  }

  // The whole trace, with a little room on either side.
  function fullRange() {
    const span = Math.max(state.meta.spanNs, 1000);
    return { t0: -span * 0.01, t1: span * 1.01 };
  }

  Object.assign(viewer, { buildLayout, plotWidth, xOf, tOf, yOf, resize, clampScroll, fullRange });
})(window.nanomxViewer);
