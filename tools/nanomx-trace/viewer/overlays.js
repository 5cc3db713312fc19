// nanomx-trace viewer: what is drawn over the rows: markers, flow arrows and the critical path.
'use strict';

(function (viewer) {
  const { LABEL_WIDTH, AXIS_HEIGHT, LANE_HEIGHT, state, ctx, lowerBound, firstEndingAfter, groupDigits,
    xOf, tOf, yOf } = viewer;

  function drawInstants() {
    const { A, view, rowByIndex, selection, height } = state;
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
      if (i < offset + count && state.A.sliceStart[i] <= t) best = lane;
    }
    return best;
  }

  function drawFlows() {
    const { A, view, rowByIndex, height } = state;
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

  // `view --critical-path` (critical_path.js reads the path): the path's operations get a red
  // outline (drawThread in draw.js), and the whole path (its operations and the waits between
  // them) a red line along the top of its rows: solid over an operation, dashed over a wait,
  // vertical where it moves to another row.
  const PATH_COLOR = '#d40000';

  function drawPath() {
    const { path, showPath, view, rowByIndex, width } = state;
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

  Object.assign(viewer, { drawInstants, drawFlows, PATH_COLOR, drawPath });
})(window.nanomxViewer);
