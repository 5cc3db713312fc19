// nanomx-trace viewer: `view --critical-path`: the path from the embedded data (overlays.js
// draws it, drawThread outlines its operations), its toggle and the "Critical path" panel.
'use strict';

(function (viewer) {
  const { state, statusEl, formatTime, requestDraw } = viewer;

  // The segment kinds, by their number in the data (PathKind in critical_path.h).
  const PATH_KINDS = ['compute', 'waiting for a dependency', 'waiting for the caller', 'idle'];

  function buildPath() {
    const { meta, A } = state;
    const cp = meta.criticalPath;
    if (!cp) return;
    const n = cp.segments.length;
    const path = { kind: new Uint8Array(n), start: new Float64Array(n), end: new Float64Array(n),
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
    state.path = path;
    const toggle = document.getElementById('show-path');
    document.getElementById('path-toggle').hidden = false;
    toggle.addEventListener('change', () => { state.showPath = toggle.checked; requestDraw(); });
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

  viewer.buildPath = buildPath;
})(window.nanomxViewer);
