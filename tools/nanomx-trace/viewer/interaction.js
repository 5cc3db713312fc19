// nanomx-trace viewer: zoom, pan and scroll with the wheel, mouse and keyboard, and a click's
// selection (hitTest finds what lies under the pointer).
'use strict';

(function (viewer) {
  const { LABEL_WIDTH, AXIS_HEIGHT, LANE_HEIGHT, state, canvas, lowerBound, firstEndingAfter,
    plotWidth, tOf, yOf, clampScroll, fullRange, requestDraw, select, searchEl, nextMatch } = viewer;

  function zoomAt(x, factor) {
    const view = state.view;
    const t = tOf(Math.min(Math.max(x, LABEL_WIDTH), state.width));
    const span = Math.max((view.t1 - view.t0) * factor, 10);  // 10 ns across the screen at most
    const ratio = (t - view.t0) / (view.t1 - view.t0);
    view.t0 = t - ratio * span;
    view.t1 = view.t0 + span;
    requestDraw();
  }

  function pan(dx) {
    const view = state.view;
    const dt = dx / plotWidth() * (view.t1 - view.t0);
    view.t0 += dt;
    view.t1 += dt;
    requestDraw();
  }

  let mouseX = -1;
  canvas.addEventListener('wheel', (event) => {
    event.preventDefault();
    if (event.ctrlKey || event.metaKey) {
      zoomAt(event.offsetX, Math.exp(event.deltaY * 0.002));
    } else if (event.shiftKey || Math.abs(event.deltaX) > Math.abs(event.deltaY)) {
      pan(event.shiftKey ? event.deltaY : event.deltaX);
    } else {
      state.scrollY += event.deltaY;
      clampScroll();
      requestDraw();
    }
  }, { passive: false });

  let drag = null;
  canvas.addEventListener('mousedown', (event) => {
    drag = { x: event.offsetX, y: event.offsetY, moved: false };
    canvas.focus();
  });
  window.addEventListener('mousemove', (event) => {
    const rect = canvas.getBoundingClientRect();
    mouseX = event.clientX - rect.left;
    if (!drag) return;
    const x = event.clientX - rect.left, y = event.clientY - rect.top;
    if (Math.abs(x - drag.x) + Math.abs(y - drag.y) > 3) drag.moved = true;
    if (drag.moved) {
      pan(drag.x - x);
      state.scrollY += drag.y - y;
      clampScroll();
      drag.x = x;
      drag.y = y;
    }
  });
  window.addEventListener('mouseup', (event) => {
    if (drag && !drag.moved) {
      const rect = canvas.getBoundingClientRect();
      select(hitTest(event.clientX - rect.left, event.clientY - rect.top));
    }
    drag = null;
  });

  document.addEventListener('keydown', (event) => {
    if (event.target === searchEl) {
      if (event.key === 'Enter') { event.preventDefault(); nextMatch(event.shiftKey ? -1 : 1); }
      if (event.key === 'Escape') { searchEl.blur(); canvas.focus(); }
      return;
    }
    if (event.target instanceof HTMLSelectElement) return;
    const center = mouseX > LABEL_WIDTH ? mouseX : LABEL_WIDTH + plotWidth() / 2;
    const step = plotWidth() * 0.15;
    switch (event.key) {
      case 'w': case 'W': case '+': case '=': zoomAt(center, 0.7); break;
      case 's': case 'S': case '-': case '_': zoomAt(center, 1 / 0.7); break;
      case 'a': case 'A': case 'ArrowLeft': pan(-step); break;
      case 'd': case 'D': case 'ArrowRight': pan(step); break;
      case 'ArrowUp': state.scrollY -= 40; clampScroll(); requestDraw(); break;
      case 'ArrowDown': state.scrollY += 40; clampScroll(); requestDraw(); break;
      case '0': case 'f': case 'F': state.view = fullRange(); requestDraw(); break;
      case '/': event.preventDefault(); searchEl.focus(); return;
      case 'Escape': select(null); break;
      default: return;
    }
    event.preventDefault();
  });

  function hitTest(x, y) {
    if (x < LABEL_WIDTH || y < AXIS_HEIGHT) return null;
    const { A, view } = state;
    const t = tOf(x);
    const slop = (view.t1 - view.t0) / plotWidth() * 2;  // two pixels
    for (const row of state.rows) {
      const top = yOf(row);
      if (y < top || y >= top + row.height) continue;
      // Markers first: they are drawn over the slices.
      const ts = A.instantTs;
      let i = lowerBound(ts, 0, ts.length, t - slop * 2);
      for (; i < ts.length && ts[i] <= t + slop * 2; i++) {
        if (A.instantRow[i] === row.index && y < top + 12) return { type: 'instant', index: i, row };
      }
      if (row.kind === 'thread') {
        const lane = Math.floor((y - top - 1) / LANE_HEIGHT);
        if (lane < 0 || lane >= row.data.lanes.length) return null;
        const [offset, count] = row.data.lanes[lane];
        const end = offset + count;
        let k = firstEndingAfter(offset, end, t - slop);
        if (k < end && A.sliceStart[k] <= t + slop) return { type: 'slice', index: k, row, lane };
        return null;
      }
      if (row.kind === 'counter') {
        const lo = row.data.first, hi = lo + row.data.count;
        const k = lowerBound(A.counterTs, lo, hi, t + 1e-9) - 1;
        if (k >= lo) return { type: 'counter', index: k, row };
      }
      return null;
    }
    return null;
  }
})(window.nanomxViewer);
