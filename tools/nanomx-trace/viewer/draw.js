// nanomx-trace viewer: drawing a frame of the timeline: the rows (process headers, threads'
// slices, counters' step charts), then overlays.js's markers, arrows and path, then the axis.
'use strict';

(function (viewer) {
  const { LABEL_WIDTH, AXIS_HEIGHT, LANE_HEIGHT, MIN_LABEL_PX, state, statusEl, ctx, lowerBound,
    firstEndingAfter, groupDigits, formatTime, plotWidth, xOf, tOf, yOf, drawInstants, drawFlows,
    PATH_COLOR, drawPath } = viewer;

  const colorCache = new Map();

  function colorFor(nameId) {
    let color = colorCache.get(nameId);
    if (color === undefined) {
      const s = state.strings[nameId];
      let h = 2166136261;
      for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); }
      const hue = (h >>> 0) % 360;
      const light = 50 + ((h >>> 9) % 3) * 7;
      color = 'hsl(' + hue + ',55%,' + light + '%)';
      colorCache.set(nameId, color);
    }
    return color;
  }

  let drawPending = false;
  function requestDraw() {
    if (drawPending) return;
    drawPending = true;
    requestAnimationFrame(() => { drawPending = false; draw(); });
  }

  function draw() {
    const drawStart = performance.now();
    drawOnce();
    // Exposed for the benchmark: how long the last frame took to draw.
    statusEl.dataset.lastDrawMs = (performance.now() - drawStart).toFixed(1);
  }

  function drawOnce() {
    const { width, height, dpr } = state;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, width, height);
    ctx.font = '11px system-ui, sans-serif';
    ctx.textBaseline = 'middle';

    ctx.save();
    ctx.beginPath();
    ctx.rect(0, AXIS_HEIGHT, width, height - AXIS_HEIGHT);
    ctx.clip();
    for (const row of state.rows) {
      const y = yOf(row);
      if (y + row.height < AXIS_HEIGHT || y > height) continue;
      if (row.kind === 'process') drawProcessHeader(row, y);
      else if (row.kind === 'thread') drawThread(row, y);
      else drawCounter(row, y);
    }
    drawInstants();
    drawFlows();
    drawPath();
    ctx.restore();
    drawAxis();
  }

  function drawAxis() {
    const { view, width } = state;
    ctx.fillStyle = '#f6f6f6';
    ctx.fillRect(0, 0, width, AXIS_HEIGHT);
    ctx.strokeStyle = '#ccc';
    ctx.beginPath();
    ctx.moveTo(0, AXIS_HEIGHT - 0.5);
    ctx.lineTo(width, AXIS_HEIGHT - 0.5);
    ctx.stroke();
    const span = view.t1 - view.t0;
    const rough = span / Math.max(1, plotWidth() / 110);
    const power = Math.pow(10, Math.floor(Math.log10(Math.max(rough, 1e-3))));
    let step = power;
    for (const m of [1, 2, 5, 10]) { if (power * m >= rough) { step = power * m; break; } }
    ctx.fillStyle = '#444';
    ctx.strokeStyle = '#e4e4e4';
    const first = Math.ceil(view.t0 / step) * step;
    for (let t = first; t <= view.t1; t += step) {
      const x = Math.round(xOf(t)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(x, AXIS_HEIGHT - 6);
      ctx.lineTo(x, AXIS_HEIGHT);
      ctx.stroke();
      ctx.fillText(formatTime(t), x + 3, AXIS_HEIGHT / 2);
    }
    ctx.fillStyle = '#f6f6f6';
    ctx.fillRect(0, 0, LABEL_WIDTH, AXIS_HEIGHT);
    ctx.fillStyle = '#444';
    ctx.fillText(formatTime(span) + ' shown', 6, AXIS_HEIGHT / 2);
  }

  function drawLabel(text, y, h, bold) {
    ctx.fillStyle = bold ? '#eceff3' : '#fafafa';
    ctx.fillRect(0, y, LABEL_WIDTH, h);
    ctx.fillStyle = '#222';
    ctx.font = (bold ? 'bold ' : '') + '11px system-ui, sans-serif';
    fitText(text, 6, y + Math.min(h, LANE_HEIGHT) / 2 + 1, LABEL_WIDTH - 10);
    ctx.font = '11px system-ui, sans-serif';
  }

  function fitText(text, x, y, maxWidth) {
    if (maxWidth < 8) return;
    if (ctx.measureText(text).width <= maxWidth) { ctx.fillText(text, x, y); return; }
    let lo = 0, hi = text.length;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (ctx.measureText(text.slice(0, mid) + '…').width <= maxWidth) lo = mid; else hi = mid - 1;
    }
    if (lo > 0) ctx.fillText(text.slice(0, lo) + '…', x, y);
  }

  function drawProcessHeader(row, y) {
    const process = state.meta.processes[row.process];
    drawLabel(process.name + '  (pid ' + process.pid + ')', y, row.height, true);
    ctx.fillStyle = '#eceff3';
    ctx.fillRect(LABEL_WIDTH, y, state.width - LABEL_WIDTH, row.height);
  }

  function drawThread(row, y) {
    const { A, strings, view, width, height, matchName, selection, path, showPath } = state;
    const data = row.data;
    drawLabel(data.name, y, row.height, false);
    ctx.strokeStyle = '#eee';
    ctx.beginPath();
    ctx.moveTo(0, y + row.height - 0.5);
    ctx.lineTo(width, y + row.height - 0.5);
    ctx.stroke();
    const start = A.sliceStart, dur = A.sliceDur, names = A.sliceName;
    const searching = matchName !== null;
    for (let lane = 0; lane < data.lanes.length; lane++) {
      const [offset, count] = data.lanes[lane];
      const end = offset + count;
      const ly = y + 1 + lane * LANE_HEIGHT;
      if (ly + LANE_HEIGHT < AXIS_HEIGHT || ly > height) continue;
      let i = firstEndingAfter(offset, end, view.t0);
      while (i < end && start[i] <= view.t1) {
        const x0 = xOf(start[i]);
        const x1 = xOf(start[i] + dur[i]);
        const faded = searching && !matchName[names[i]];
        ctx.fillStyle = faded ? '#e2e2e2' : colorFor(names[i]);
        if (x1 - x0 < 1) {
          // Sub-pixel slices: one pixel column stands for all of them; skip to the next column.
          const px = Math.floor(Math.max(x0, LABEL_WIDTH));
          ctx.fillRect(px, ly, 1, LANE_HEIGHT - 1);
          const next = lowerBound(start, i + 1, end, tOf(px + 1));
          i = next > i ? next : i + 1;
          continue;
        }
        const left = Math.max(x0, LABEL_WIDTH);
        const right = Math.min(x1, width);
        ctx.fillRect(left, ly, Math.max(1, right - left - (x1 - x0 > 3 ? 0.5 : 0)), LANE_HEIGHT - 1);
        if (right - left > MIN_LABEL_PX) {
          ctx.fillStyle = faded ? '#999' : '#111';
          fitText(strings[names[i]], left + 3, ly + LANE_HEIGHT / 2, right - left - 6);
        }
        if (path && showPath && path.onPath[i]) {
          ctx.strokeStyle = PATH_COLOR;
          ctx.lineWidth = 2;
          ctx.strokeRect(left + 1, ly + 1, Math.max(1, right - left - 2), LANE_HEIGHT - 3);
          ctx.lineWidth = 1;
        }
        if (selection && selection.type === 'slice' && selection.index === i) {
          ctx.strokeStyle = '#000';
          ctx.lineWidth = 2;
          ctx.strokeRect(left + 1, ly + 1, Math.max(1, right - left - 2), LANE_HEIGHT - 3);
          ctx.lineWidth = 1;
        }
        i++;
      }
    }
  }

  function drawCounter(row, y) {
    const { A, view, width } = state;
    const data = row.data;
    drawLabel(state.strings[data.name], y, row.height, false);
    const ts = A.counterTs, values = A.counterValue;
    const lo = data.first, hi = data.first + data.count;
    const range = row.max - row.min || 1;
    const base = y + row.height - 3;
    const scale = (row.height - 8) / range;
    const yValue = (v) => base - (v - row.min) * scale;
    ctx.fillStyle = 'rgba(70,120,200,0.35)';
    ctx.strokeStyle = 'rgb(50,95,175)';
    let i = Math.max(lo, lowerBound(ts, lo, hi, view.t0) - 1);
    ctx.beginPath();
    let started = false;
    let lastX = -Infinity;
    let columnMax = 0;
    const path = [];
    for (; i < hi; i++) {
      const x = Math.max(LABEL_WIDTH, xOf(ts[i]));
      if (x > width) break;
      if (started && Math.floor(x) === Math.floor(lastX)) {
        // Several samples in one pixel column: keep the largest, the step chart's envelope.
        columnMax = Math.max(columnMax, values[i]);
        path[path.length - 1][1] = columnMax;
        continue;
      }
      columnMax = values[i];
      path.push([x, values[i]]);
      started = true;
      lastX = x;
    }
    if (path.length === 0) return;
    ctx.moveTo(path[0][0], base);
    let prevY = yValue(path[0][1]);
    ctx.lineTo(path[0][0], prevY);
    for (let k = 1; k < path.length; k++) {
      ctx.lineTo(path[k][0], prevY);
      prevY = yValue(path[k][1]);
      ctx.lineTo(path[k][0], prevY);
    }
    const lastTs = i < hi ? width : Math.min(width, xOf(ts[hi - 1]) + 1);
    ctx.lineTo(Math.max(lastTs, path[path.length - 1][0]), prevY);
    ctx.lineTo(Math.max(lastTs, path[path.length - 1][0]), base);
    ctx.closePath();
    ctx.fill();
    ctx.stroke();
    ctx.fillStyle = '#333';
    ctx.fillText('max ' + groupDigits(row.max), LABEL_WIDTH + 4, y + 8);
  }

  Object.assign(viewer, { requestDraw, draw });
})(window.nanomxViewer);
