// nanomx-trace viewer: a canvas timeline for one trace, embedded in the page by `nanomx-trace view`.
// Rules every viewer script keeps: nothing is fetched from outside the page; every string from
// the trace reaches the DOM through textContent (or canvas fillText), never as HTML; drawing cost
// depends on the number of pixels, not the number of events (level of detail by binary search).
//
// The viewer is several classic scripts that embed_viewer.cmake inlines into the page in the
// order viewer.html lists them (the page is one file opened from file://, where ES modules
// cannot import one another). This first one makes the one global, window.nanomxViewer; each
// later script takes from it what earlier ones defined and adds its own. main.js, the last,
// starts the page.
'use strict';

(function () {
  const LABEL_WIDTH = 230;
  const AXIS_HEIGHT = 22;
  const LANE_HEIGHT = 18;
  const PROCESS_HEADER = 20;
  const COUNTER_HEIGHT = 40;
  const MIN_LABEL_PX = 36;

  // What the scripts share and change, with the scripts that set each.
  const state = {
    meta: null,             // main.js: the JSON part of the embedded data
    A: null,                // main.js: its typed arrays, by section name
    strings: null,          // main.js: meta.strings
    rows: [],               // layout.js: layout rows: {kind, y, height, ...}
    rowByIndex: new Map(),  // layout.js: meta.rows index -> layout row
    contentHeight: 0,       // layout.js
    width: 0,               // layout.js (resize): the canvas in CSS pixels, and its pixel ratio
    height: 0,
    dpr: 1,
    view: { t0: 0, t1: 1 },  // main.js, interaction.js, search.js: the time range shown
    scrollY: 0,             // layout.js (clampScroll), interaction.js, search.js
    selection: null,        // details.js: {type: 'slice'|'instant'|'counter', index, row}
    matchName: null,        // search.js: Uint8Array over strings, 1 where the name matches the search
    path: null,             // critical_path.js: typed arrays over the segments, and onPath over the slices
    showPath: true,         // critical_path.js
  };

  const statusEl = document.getElementById('status');
  const canvas = document.getElementById('timeline');
  const ctx = canvas.getContext('2d');

  function fail(message) {
    statusEl.textContent = 'error: ' + message;
    statusEl.dataset.error = message;
    console.error('nanomx-trace viewer: ' + message);
  }

  // First index in [lo, hi) with array[i] >= value.
  function lowerBound(array, lo, hi, value) {
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (array[mid] < value) lo = mid + 1; else hi = mid;
    }
    return lo;
  }
  // First slice in the lane [lo, hi) that ends at or after t (lanes never overlap, so ends are
  // sorted too).
  function firstEndingAfter(lo, hi, t) {
    const start = state.A.sliceStart, dur = state.A.sliceDur;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (start[mid] + dur[mid] < t) lo = mid + 1; else hi = mid;
    }
    return lo;
  }

  // 1234567 -> "1,234,567" (toLocaleString would load Intl, which costs the first frame ~100 ms).
  function groupDigits(value) {
    const text = String(Math.round(value * 1000) / 1000);
    const [whole, fraction] = text.split('.');
    const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
    return fraction ? grouped + '.' + fraction : grouped;
  }

  function formatTime(ns) {
    const a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toFixed(3) + ' s';
    if (a >= 1e6) return (ns / 1e6).toFixed(3) + ' ms';
    if (a >= 1e3) return (ns / 1e3).toFixed(3) + ' µs';
    return ns.toFixed(0) + ' ns';
  }

  window.nanomxViewer = {
    LABEL_WIDTH, AXIS_HEIGHT, LANE_HEIGHT, PROCESS_HEADER, COUNTER_HEIGHT, MIN_LABEL_PX, state,
    statusEl, canvas, ctx, fail, lowerBound, firstEndingAfter, groupDigits, formatTime,
  };
})();
