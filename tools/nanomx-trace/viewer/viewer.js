// nanomx-trace viewer: a canvas timeline for one trace, embedded in the page by `nanomx-trace view`.
// Rules this file keeps: nothing is fetched from outside the page; every string from the trace
// reaches the DOM through textContent (or canvas fillText), never as HTML; drawing cost depends
// on the number of pixels, not the number of events (level of detail by binary search).
'use strict';

(function () {
  const LABEL_WIDTH = 230;
  const AXIS_HEIGHT = 22;
  const LANE_HEIGHT = 18;
  const PROCESS_HEADER = 20;
  const COUNTER_HEIGHT = 40;
  const MIN_LABEL_PX = 36;

  const statusEl = document.getElementById('status');
  const canvas = document.getElementById('timeline');
  const ctx = canvas.getContext('2d');

  function fail(message) {
    statusEl.textContent = 'error: ' + message;
    statusEl.dataset.error = message;
    console.error('nanomx-trace viewer: ' + message);
  }

  // ---------------------------------------------------------------- data
  async function decodeData() {
    const text = document.getElementById('trace-data').textContent.trim();
    const raw = atob(text);
    const bytes = new Uint8Array(raw.length);
    for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
    // The first 4 bytes give the decompressed size, so the chunks go straight into one buffer
    // (faster than collecting them with Response.arrayBuffer()).
    const size = new DataView(bytes.buffer).getUint32(0, true);
    const inflate = new DecompressionStream('gzip');
    const writer = inflate.writable.getWriter();
    writer.write(bytes.subarray(4));
    writer.close();
    const reader = inflate.readable.getReader();
    const out = new Uint8Array(size);
    let filled = 0;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      if (filled + value.length > size) throw new Error('embedded data is larger than its header says');
      out.set(value, filled);
      filled += value.length;
    }
    if (filled !== size) throw new Error('embedded data is cut short: ' + filled + ' of ' + size + ' bytes');
    const buffer = out.buffer;
    const metaLength = new DataView(buffer).getUint32(0, true);
    const meta = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 4, metaLength)));
    let base = 4 + metaLength;
    base += (8 - (base % 8)) % 8;
    const arrays = {};
    for (const [name, [offset, count, type]] of Object.entries(meta.sections)) {
      const Type = type === 'u32' ? Uint32Array : Float64Array;
      const array = new Type(buffer, base + offset, count);
      if (type === 'f64d') {  // stored as differences from the previous element
        for (let i = 1; i < count; i++) array[i] += array[i - 1];
      }
      arrays[name] = array;
    }
    return { meta, arrays };
  }

  // ---------------------------------------------------------------- state
  let meta, A, strings;
  let rows = [];          // layout rows: {kind, y, height, ...}
  let contentHeight = 0;
  let view = { t0: 0, t1: 1 };
  let scrollY = 0;
  let selection = null;   // {type: 'slice'|'instant'|'counter', index, row}
  let matchName = null;   // Uint8Array over strings, 1 where the name matches the search
  let matchList = null;   // matching slice indices in time order
  let matchCursor = -1;
  let width = 0, height = 0, dpr = 1;
  const colorCache = new Map();

  function colorFor(nameId) {
    let color = colorCache.get(nameId);
    if (color === undefined) {
      const s = strings[nameId];
      let h = 2166136261;
      for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); }
      const hue = (h >>> 0) % 360;
      const light = 50 + ((h >>> 9) % 3) * 7;
      color = 'hsl(' + hue + ',55%,' + light + '%)';
      colorCache.set(nameId, color);
    }
    return color;
  }

  function buildLayout() {
    rows = [];
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
    contentHeight = y;
    rowByIndex = new Map();
    for (const row of rows) if (row.index !== undefined) rowByIndex.set(row.index, row);
  }
  let rowByIndex = new Map();

  // ---------------------------------------------------------------- coordinates
  function plotWidth() { return Math.max(1, width - LABEL_WIDTH); }
  function xOf(t) { return LABEL_WIDTH + (t - view.t0) / (view.t1 - view.t0) * plotWidth(); }
  function tOf(x) { return view.t0 + (x - LABEL_WIDTH) / plotWidth() * (view.t1 - view.t0); }
  function yOf(row) { return AXIS_HEIGHT + row.y - scrollY; }

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
    const start = A.sliceStart, dur = A.sliceDur;
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

  // ---------------------------------------------------------------- drawing
  function resize() {
    dpr = window.devicePixelRatio || 1;
    const rect = canvas.getBoundingClientRect();
    width = Math.max(200, rect.width);
    height = Math.max(100, rect.height);
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(height * dpr);
    clampScroll();
  }

  function clampScroll() {
    const maxScroll = Math.max(0, contentHeight - (height - AXIS_HEIGHT));
    scrollY = Math.min(Math.max(0, scrollY), maxScroll);
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
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, width, height);
    ctx.font = '11px system-ui, sans-serif';
    ctx.textBaseline = 'middle';

    ctx.save();
    ctx.beginPath();
    ctx.rect(0, AXIS_HEIGHT, width, height - AXIS_HEIGHT);
    ctx.clip();
    for (const row of rows) {
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
    const process = meta.processes[row.process];
    drawLabel(process.name + '  (pid ' + process.pid + ')', y, row.height, true);
    ctx.fillStyle = '#eceff3';
    ctx.fillRect(LABEL_WIDTH, y, width - LABEL_WIDTH, row.height);
  }

  function drawThread(row, y) {
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
    const data = row.data;
    drawLabel(strings[data.name], y, row.height, false);
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

  function drawInstants() {
    const ts = A.instantTs, rowsOf = A.instantRow, scope = A.instantScope;
    let i = lowerBound(ts, 0, ts.length, view.t0);
    const lastX = new Map();
    for (; i < ts.length && ts[i] <= view.t1; i++) {
      const x = xOf(ts[i]);
      if (scope[i] === 103) {  // 'g': a global marker is a line across every row
        ctx.strokeStyle = 'rgba(200,40,40,0.7)';
        ctx.beginPath();
        ctx.moveTo(Math.round(x) + 0.5, AXIS_HEIGHT);
        ctx.lineTo(Math.round(x) + 0.5, height);
        ctx.stroke();
        continue;
      }
      const row = rowByIndex.get(rowsOf[i]);
      if (!row) continue;
      const px = Math.floor(x);
      if (lastX.get(rowsOf[i]) === px) continue;
      lastX.set(rowsOf[i], px);
      const y = yOf(row);
      if (y + row.height < AXIS_HEIGHT || y > height) continue;
      ctx.fillStyle = selection && selection.type === 'instant' && selection.index === i ? '#000' : '#c0392b';
      ctx.beginPath();
      ctx.moveTo(x, y + 2);
      ctx.lineTo(x - 4, y + 10);
      ctx.lineTo(x + 4, y + 10);
      ctx.closePath();
      ctx.fill();
    }
  }

  // The deepest sync slice of a thread row enclosing t gives an arrow end its height.
  function laneAt(row, t) {
    const data = row.data;
    let best = 0;
    for (let lane = 0; lane < data.syncLanes; lane++) {
      const [offset, count] = data.lanes[lane];
      const i = firstEndingAfter(offset, offset + count, t);
      if (i < offset + count && A.sliceStart[i] <= t) best = lane;
    }
    return best;
  }

  function drawFlows() {
    const ts = A.flowTs, ids = A.flowId, rowsOf = A.flowRow;
    if (ts.length < 2) return;
    // Count first: past a few thousand arrows the picture is a grey smear, so ask for a closer
    // look instead of drawing them.
    let visible = 0;
    for (let i = 0; i < ts.length; i++) if (ts[i] >= view.t0 && ts[i] <= view.t1) visible++;
    if (visible > 8000) {
      ctx.fillStyle = '#555';
      ctx.fillText('zoom in to see the ' + groupDigits(visible >> 1) + ' flow arrows here', LABEL_WIDTH + 6, height - 10);
      return;
    }
    ctx.strokeStyle = 'rgba(60,60,60,0.55)';
    ctx.fillStyle = 'rgba(60,60,60,0.75)';
    for (let i = 0; i + 1 < ts.length; i++) {
      if (ids[i] !== ids[i + 1]) continue;
      const a = ts[i], b = ts[i + 1];
      if (Math.max(a, b) < view.t0 || Math.min(a, b) > view.t1) continue;
      const ra = rowByIndex.get(rowsOf[i]), rb = rowByIndex.get(rowsOf[i + 1]);
      if (!ra || !rb) continue;
      const x0 = xOf(a), x1 = xOf(b);
      const y0 = yOf(ra) + (ra.kind === 'thread' ? laneAt(ra, a) : 0) * LANE_HEIGHT + LANE_HEIGHT / 2;
      const y1 = yOf(rb) + (rb.kind === 'thread' ? laneAt(rb, b) : 0) * LANE_HEIGHT + LANE_HEIGHT / 2;
      ctx.beginPath();
      ctx.moveTo(x0, y0);
      ctx.bezierCurveTo((x0 + x1) / 2, y0, (x0 + x1) / 2, y1, x1, y1);
      ctx.stroke();
      const angle = Math.atan2(0, x1 - x0 || 1);
      ctx.beginPath();
      ctx.moveTo(x1, y1);
      ctx.lineTo(x1 - 6 * Math.cos(angle - 0.4), y1 - 6 * Math.sin(angle - 0.4));
      ctx.lineTo(x1 - 6 * Math.cos(angle + 0.4), y1 - 6 * Math.sin(angle + 0.4));
      ctx.closePath();
      ctx.fill();
    }
  }

  // ---------------------------------------------------------------- interaction
  function fullRange() {
    const span = Math.max(meta.spanNs, 1000);
    return { t0: -span * 0.01, t1: span * 1.01 };
  }

  function zoomAt(x, factor) {
    const t = tOf(Math.min(Math.max(x, LABEL_WIDTH), width));
    const span = Math.max((view.t1 - view.t0) * factor, 10);  // 10 ns across the screen at most
    const ratio = (t - view.t0) / (view.t1 - view.t0);
    view.t0 = t - ratio * span;
    view.t1 = view.t0 + span;
    requestDraw();
  }

  function pan(dx) {
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
      scrollY += event.deltaY;
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
      scrollY += drag.y - y;
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
      case 'ArrowUp': scrollY -= 40; clampScroll(); requestDraw(); break;
      case 'ArrowDown': scrollY += 40; clampScroll(); requestDraw(); break;
      case '0': case 'f': case 'F': view = fullRange(); requestDraw(); break;
      case '/': event.preventDefault(); searchEl.focus(); return;
      case 'Escape': select(null); break;
      default: return;
    }
    event.preventDefault();
  });

  function hitTest(x, y) {
    if (x < LABEL_WIDTH || y < AXIS_HEIGHT) return null;
    const t = tOf(x);
    const slop = (view.t1 - view.t0) / plotWidth() * 2;  // two pixels
    for (const row of rows) {
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

  const detailsTable = document.getElementById('details-table');
  const detailsArgs = document.getElementById('details-args');
  const detailsEmpty = document.getElementById('details-empty');

  function addDetail(label, value) {
    const tr = document.createElement('tr');
    const a = document.createElement('td');
    const b = document.createElement('td');
    a.textContent = label;
    b.textContent = value;
    tr.append(a, b);
    detailsTable.append(tr);
  }

  function threadLabel(row) {
    const process = meta.processes[row.data.process];
    return process.name + ' / ' + (row.kind === 'thread' ? row.data.name + ' (tid ' + row.data.tid + ')' : 'counters');
  }

  function showArgs(argsId) {
    const text = meta.args[argsId] || '';
    if (!text) { detailsArgs.textContent = ''; return; }
    try {
      detailsArgs.textContent = 'args ' + JSON.stringify(JSON.parse(text), null, 2);
    } catch (e) {
      detailsArgs.textContent = 'args ' + text;
    }
  }

  function select(hit) {
    selection = hit;
    detailsTable.textContent = '';
    detailsArgs.textContent = '';
    detailsEmpty.hidden = !!hit;
    if (hit && hit.type === 'slice') {
      const i = hit.index;
      addDetail('name', strings[A.sliceName[i]]);
      addDetail('category', strings[A.sliceCat[i]]);
      addDetail('duration', formatTime(A.sliceDur[i]) + '  (' + (A.sliceDur[i] / 1e6).toFixed(6) + ' ms)');
      addDetail('start', formatTime(A.sliceStart[i]) + ' after the first event');
      addDetail('thread', threadLabel(hit.row));
      addDetail('kind', hit.lane < hit.row.data.syncLanes ? 'slice (depth ' + hit.lane + ')' : 'async span');
      if (path && path.onPath[i]) addDetail('critical path', 'on the path');
      showArgs(A.sliceArgs[i]);
    } else if (hit && hit.type === 'instant') {
      const i = hit.index;
      addDetail('marker', strings[A.instantName[i]]);
      addDetail('category', strings[A.instantCat[i]]);
      addDetail('time', formatTime(A.instantTs[i]) + ' after the first event');
      addDetail('scope', String.fromCharCode(A.instantScope[i]));
      addDetail('thread', threadLabel(hit.row));
      showArgs(A.instantArgs[i]);
    } else if (hit && hit.type === 'counter') {
      const i = hit.index;
      addDetail('counter', strings[hit.row.data.name]);
      addDetail('category', strings[hit.row.data.cat]);
      addDetail('value', groupDigits(A.counterValue[i]));
      addDetail('since', formatTime(A.counterTs[i]) + ' after the first event');
      addDetail('process', meta.processes[hit.row.data.process].name);
    }
    requestDraw();
  }

  // ---------------------------------------------------------------- search
  const searchEl = document.getElementById('search');
  const matchesEl = document.getElementById('matches');
  let searchTimer = 0;
  searchEl.addEventListener('input', () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(runSearch, 120);
  });

  function runSearch() {
    const query = searchEl.value.trim().toLowerCase();
    matchList = null;
    matchCursor = -1;
    if (!query) {
      matchName = null;
      matchesEl.textContent = '';
      requestDraw();
      return;
    }
    matchName = new Uint8Array(strings.length);
    for (let i = 0; i < strings.length; i++) {
      if (strings[i].toLowerCase().includes(query)) matchName[i] = 1;
    }
    let count = 0;
    const names = A.sliceName;
    for (let i = 0; i < names.length; i++) count += matchName[names[i]];
    matchesEl.textContent = groupDigits(count) + (count === 1 ? ' match' : ' matches');
    matchesEl.dataset.count = String(count);
    requestDraw();
  }

  function nextMatch(direction) {
    if (!matchName) return;
    if (!matchList) {
      const list = [];
      const names = A.sliceName;
      for (let i = 0; i < names.length; i++) if (matchName[names[i]]) list.push(i);
      list.sort((a, b) => A.sliceStart[a] - A.sliceStart[b]);
      matchList = list;
    }
    if (matchList.length === 0) return;
    matchCursor = (matchCursor + direction + matchList.length) % matchList.length;
    const i = matchList[matchCursor];
    const dur = Math.max(A.sliceDur[i], 1000);
    view = { t0: A.sliceStart[i] - dur * 2, t1: A.sliceStart[i] + dur * 3 };
    for (const row of rows) {
      if (row.kind !== 'thread') continue;
      for (let lane = 0; lane < row.data.lanes.length; lane++) {
        const [offset, count] = row.data.lanes[lane];
        if (i >= offset && i < offset + count) {
          scrollY = row.y + lane * LANE_HEIGHT - (height - AXIS_HEIGHT) / 3;
          clampScroll();
          select({ type: 'slice', index: i, row, lane });
          matchesEl.textContent = (matchCursor + 1) + ' of ' + groupDigits(matchList.length);
          return;
        }
      }
    }
  }

  // ---------------------------------------------------------------- critical path
  // `view --critical-path`: the path's operations get a red outline, and the whole path (its
  // operations and the waits between them) a red line along the top of its rows: solid over an
  // operation, dashed over a wait, vertical where it moves to another row.
  const PATH_COLOR = '#d40000';
  const PATH_KINDS = ['compute', 'waiting for a dependency', 'waiting for the caller', 'idle'];
  let path = null;  // typed arrays over the segments, and onPath over the slices
  let showPath = true;

  function buildPath() {
    const cp = meta.criticalPath;
    if (!cp) return;
    const n = cp.segments.length;
    path = { kind: new Uint8Array(n), start: new Float64Array(n), end: new Float64Array(n),
      row: new Int32Array(n), onPath: new Uint8Array(A.sliceStart.length) };
    let onPathCount = 0;
    cp.segments.forEach(([kind, start, end, row, slice], i) => {
      path.kind[i] = kind;
      path.start[i] = start;
      path.end[i] = end;
      path.row[i] = row;
      if (slice >= 0 && slice < path.onPath.length && !path.onPath[slice]) {
        path.onPath[slice] = 1;
        onPathCount++;
      }
    });
    const toggle = document.getElementById('show-path');
    document.getElementById('path-toggle').hidden = false;
    toggle.addEventListener('change', () => { showPath = toggle.checked; requestDraw(); });
    document.getElementById('path-panel').hidden = false;
    document.getElementById('path-title').textContent = 'Critical path' +
      (cp.step === null ? '' : ' of step ' + cp.step) + ': ' + formatTime(cp.lengthNs) + ' (' + cp.edges + ')';
    const kinds = document.getElementById('path-kinds');
    for (const [name, ns] of cp.kinds) {
      const tr = document.createElement('tr');
      for (const text of [name, formatTime(ns), (cp.lengthNs ? 100 * ns / cp.lengthNs : 0).toFixed(1) + ' %']) {
        const td = document.createElement('td');
        td.textContent = text;
        tr.append(td);
      }
      kinds.append(tr);
    }
    const shorten = document.getElementById('path-shorten');
    for (const [what, ns] of cp.shorten) {
      const li = document.createElement('li');
      li.textContent = what + ': ' + formatTime(ns);
      shorten.append(li);
    }
    statusEl.dataset.pathSegments = String(n);
    statusEl.dataset.pathSlices = String(onPathCount);
  }

  function drawPath() {
    if (!path || !showPath) return;
    const n = path.start.length;
    ctx.strokeStyle = PATH_COLOR;
    ctx.fillStyle = PATH_COLOR;
    ctx.lineWidth = 2;
    // Segments are contiguous and in time order, so their ends are sorted too.
    let i = lowerBound(path.end, 0, n, view.t0);
    let previousY = null;
    while (i < n && path.start[i] <= view.t1) {
      const row = rowByIndex.get(path.row[i]);
      if (!row) { i++; continue; }
      const y = yOf(row) + 2;
      const x0 = Math.max(xOf(path.start[i]), LABEL_WIDTH), x1 = Math.min(xOf(path.end[i]), width);
      if (previousY !== null && previousY !== y) {
        ctx.setLineDash([]);
        ctx.beginPath();
        ctx.moveTo(x0, previousY);
        ctx.lineTo(x0, y);
        ctx.stroke();
      }
      previousY = y;
      if (x1 - x0 < 1) {
        // Narrower than a pixel: one pixel for all the segments in this column.
        const px = Math.floor(x0);
        ctx.fillRect(px, y - 1, 1, 3);
        const next = lowerBound(path.start, i + 1, n, tOf(px + 1));
        i = next > i ? next : i + 1;
        continue;
      }
      ctx.setLineDash(path.kind[i] === 0 ? [] : [4, 3]);
      ctx.beginPath();
      ctx.moveTo(x0, y);
      ctx.lineTo(x1, y);
      ctx.stroke();
      i++;
    }
    ctx.setLineDash([]);
    ctx.lineWidth = 1;
  }

  // ---------------------------------------------------------------- diff table
  // `view BASE NEW`: what `nanomx-trace diff` prints, by name, largest change first.
  function buildDiff() {
    const d = meta.diff;
    if (!d) return;
    document.getElementById('diff-panel').hidden = false;
    document.getElementById('diff-title').textContent = 'Diff: NEW ' + d.new + ' against BASE ' + d.base;
    document.getElementById('diff-verdict').textContent = d.verdict;
    const head = document.querySelector('#diff-table thead');
    const body = document.querySelector('#diff-table tbody');
    const tr = document.createElement('tr');
    for (const label of ['Name', 'BASE count', 'BASE total (ms)', 'NEW count', 'NEW total (ms)', 'change (ms)', 'change']) {
      const th = document.createElement('th');
      th.textContent = label;
      tr.append(th);
    }
    head.append(tr);
    for (const [name, baseCount, baseNs, newCount, newNs] of d.rows) {
      const change = newNs - baseNs;
      const cells = [name, String(baseCount), (baseNs / 1e6).toFixed(4), String(newCount), (newNs / 1e6).toFixed(4),
        (change > 0 ? '+' : '') + (change / 1e6).toFixed(4),
        baseCount === 0 ? 'new' : newCount === 0 ? 'gone' : baseNs === 0 ? '' : (change > 0 ? '+' : '') + (100 * change / baseNs).toFixed(1) + ' %'];
      const r = document.createElement('tr');
      cells.forEach((text, k) => {
        const td = document.createElement('td');
        td.textContent = text;
        if (k >= 5 && change !== 0) td.className = change > 0 ? 'slower' : 'faster';
        r.append(td);
      });
      body.append(r);
    }
    if (meta.summarySource) document.getElementById('ops-title').textContent = 'Top operators of ' + meta.summarySource;
    statusEl.dataset.diffRows = String(d.rows.length);
  }

  // ---------------------------------------------------------------- memory per scope
  // `view --memory CSV`: the scope tree of `nanomx-trace memory`, with the strings it prints (the
  // page formats no size itself, so both show the same numbers). A row with children folds and
  // unfolds them on a click; the top two levels start unfolded.
  const MEMORY_INDENT_PX = 14;
  let memoryNodes = [];

  // "27792896" -> "27,792,896": the exact bytes, from the string the tool wrote.
  function groupDigitString(text) {
    return text.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  }

  function memoryCells(tr, row, first, perDevice) {
    // row: [name, requested, actual, allocations, reused, % actual, [per device], requested
    // bytes, actual bytes]
    const cells = [row[1], row[2], row[3], row[4], row[5]];
    if (perDevice) cells.push(...row[6]);
    for (let k = 0; k < cells.length; k++) {
      const td = document.createElement('td');
      td.textContent = cells[k];
      if (k === 0 && row[7] !== '') td.title = groupDigitString(row[7]) + ' bytes requested';
      if (k === 1) td.title = groupDigitString(row[8]) + ' bytes';
      tr.append(td);
    }
    tr.prepend(first);
  }

  function buildMemory() {
    const m = meta.memory;
    if (!m) return;
    document.getElementById('memory-panel').hidden = false;
    document.body.classList.add('with-memory');
    document.getElementById('memory-title').textContent = 'Memory per scope: ' +
      (m.files.length === 1 ? m.files[0] : m.files.length + ' files summed (' + m.files.join(', ') + ')');
    document.getElementById('memory-overview').textContent = m.overview;
    const perDevice = m.devices.length > 1;
    const head = document.querySelector('#memory-table thead');
    const headRow = document.createElement('tr');
    const labels = ['Scope', 'Requested', 'Actual', 'Allocs', 'Reused', '% actual'];
    if (perDevice) for (const device of m.devices) labels.push('gpu ' + device + ' actual');
    for (const label of labels) {
      const th = document.createElement('th');
      th.textContent = label;
      headRow.append(th);
    }
    head.append(headRow);
    // The rows come depth first with their depths; a stack of the open ancestors gives each its
    // parent (no recursion, whatever the nesting).
    memoryNodes = [];
    const roots = [];
    const stack = [];
    for (const row of m.rows) {
      const node = { depth: row[0], row: row.slice(1), children: [], open: row[0] < 2 };
      while (stack.length && stack[stack.length - 1].depth >= node.depth) stack.pop();
      (stack.length ? stack[stack.length - 1].children : roots).push(node);
      stack.push(node);
      memoryNodes.push(node);
    }
    const body = document.querySelector('#memory-table tbody');
    function render() {
      body.textContent = '';
      const pending = roots.slice().reverse();
      let shown = 0;
      while (pending.length) {
        const node = pending.pop();
        const tr = document.createElement('tr');
        const name = document.createElement('td');
        name.style.paddingLeft = (8 + (node.depth - 1) * MEMORY_INDENT_PX) + 'px';
        const twisty = document.createElement('span');
        twisty.className = 'twisty';
        twisty.textContent = node.children.length ? (node.open ? '\u25BE' : '\u25B8') : '';
        const label = document.createElement('span');
        label.className = 'scope';
        label.textContent = node.row[0] === '' ? '(empty name)' : node.row[0];
        name.append(twisty, label);
        memoryCells(tr, node.row, name, perDevice);
        if (node.children.length) {
          tr.className = 'folds';
          tr.addEventListener('click', () => { node.open = !node.open; render(); });
        }
        body.append(tr);
        shown++;
        if (node.open) for (let k = node.children.length - 1; k >= 0; k--) pending.push(node.children[k]);
      }
      statusEl.dataset.memoryShown = String(shown);
    }
    const foot = document.querySelector('#memory-table tfoot');
    for (const [row, className] of [[m.total, 'total'], [m.nvml, 'nvml']]) {
      if (!row) continue;
      const tr = document.createElement('tr');
      tr.className = className;
      const name = document.createElement('td');
      name.textContent = row[0];
      memoryCells(tr, row, name, perDevice);
      foot.append(tr);
    }
    const setAll = (open) => { for (const node of memoryNodes) node.open = open; render(); };
    document.getElementById('memory-expand').addEventListener('click', () => setAll(true));
    document.getElementById('memory-collapse').addEventListener('click', () => setAll(false));
    render();
    statusEl.dataset.memoryRows = String(memoryNodes.length);
  }

  // ---------------------------------------------------------------- operators table
  const opsCategory = document.getElementById('ops-category');
  const opsHead = document.querySelector('#ops-table thead');
  const opsBody = document.querySelector('#ops-table tbody');
  let opsSort = { column: -1, ascending: false };

  function buildOpsTable() {
    opsCategory.textContent = '';
    let preferred = 0;
    meta.summary.forEach((category, i) => {
      const option = document.createElement('option');
      option.value = String(i);
      option.textContent = category.name + ' (' + category.rows.length + ')';
      opsCategory.append(option);
      if (category.name === 'operator') preferred = i;
    });
    opsCategory.value = String(preferred);
    opsCategory.addEventListener('change', () => { opsSort = { column: -1, ascending: false }; renderOps(); });
    renderOps();
  }

  function renderOps() {
    opsHead.textContent = '';
    opsBody.textContent = '';
    const category = meta.summary[Number(opsCategory.value)];
    if (!category) return;
    const memory = category.memory;
    const columns = memory
      ? [['Name', 0], ['Total Count', 1], ['Min Use (kB)', 3], ['Max Use (kB)', 4], ['Avg Use (kB)', 5]]
      : [['Name', 0], ['Total Count', 1], ['Time (ms)', 2], ['Min Time (ms)', 3], ['Max Time (ms)', 4], ['Avg Time (ms)', 5]];
    const tr = document.createElement('tr');
    for (const [label, field] of columns) {
      const th = document.createElement('th');
      th.textContent = label;
      if (opsSort.column === field) th.className = opsSort.ascending ? 'sorted-asc' : 'sorted-desc';
      th.addEventListener('click', () => {
        opsSort = { column: field, ascending: opsSort.column === field ? !opsSort.ascending : field === 0 };
        renderOps();
      });
      tr.append(th);
    }
    opsHead.append(tr);
    // Default order: the summary's (MXNet's sort by total, descending).
    const ordered = category.rows.slice();
    if (opsSort.column >= 0) {
      const f = opsSort.column;
      const sign = opsSort.ascending ? 1 : -1;
      ordered.sort((a, b) => {
        const d = f === 0 ? (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0) : Number(a[f]) - Number(b[f]);
        return sign * d;
      });
    }
    for (const row of ordered) {
      const r = document.createElement('tr');
      for (const [, field] of columns) {
        const td = document.createElement('td');
        td.textContent = String(row[field]);
        r.append(td);
      }
      opsBody.append(r);
    }
  }

  // ---------------------------------------------------------------- start
  async function main() {
    const scriptStart = performance.now();
    try {
      ({ meta, arrays: A } = await decodeData());
    } catch (error) {
      fail('cannot decode the embedded trace: ' + error);
      return;
    }
    const decoded = performance.now();
    strings = meta.strings;
    document.title = meta.source + ' — nanomx trace';
    document.getElementById('title').textContent = meta.source;
    buildLayout();
    view = fullRange();
    resize();
    const laidOut = performance.now();
    draw();
    const threadRows = meta.rows.filter((r) => r.kind === 'thread').length;
    const firstRender = performance.now();
    statusEl.textContent = groupDigits(meta.events) + ' events · ' + meta.rows.length + ' rows (' +
      threadRows + ' threads, ' + (meta.rows.length - threadRows) + ' counters) · ' +
      groupDigits(A.sliceStart.length) + ' slices' +
      (meta.truncatedBytes ? ' · truncated file: ' + meta.truncatedBytes + ' bytes ignored' : '');
    statusEl.dataset.events = String(meta.events);
    statusEl.dataset.rows = String(meta.rows.length);
    statusEl.dataset.slices = String(A.sliceStart.length);
    statusEl.dataset.firstRenderMs = firstRender.toFixed(1);
    // Where the first render's time went, for the benchmark: before this script, decoding the
    // embedded data, layout, drawing.
    statusEl.dataset.phasesMs = [scriptStart, decoded - scriptStart, laidOut - decoded,
      firstRender - laidOut].map((t) => t.toFixed(1)).join(' ');
    buildOpsTable();
    buildPath();
    buildDiff();
    buildMemory();
    if (path) requestDraw();
    window.addEventListener('resize', () => { resize(); requestDraw(); });
    statusEl.dataset.ready = '1';
  }

  main();
})();
