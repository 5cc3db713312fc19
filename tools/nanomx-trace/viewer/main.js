// nanomx-trace viewer: the entry point, the last script of the page: decodes the embedded
// trace, lays it out, draws the first frame and fills the panels.
'use strict';

(function (viewer) {
  const { state, statusEl, fail, groupDigits, decodeData, buildLayout, fullRange, resize, draw,
    requestDraw, buildOpsTable, buildPath, buildDiff, buildMemory } = viewer;

  async function main() {
    const scriptStart = performance.now();
    let meta, A;
    try {
      ({ meta, arrays: A } = await decodeData());
    } catch (error) {
      fail('cannot decode the embedded trace: ' + error);
      return;
    }
    const decoded = performance.now();
    state.meta = meta;
    state.A = A;
    state.strings = meta.strings;
    document.title = meta.source + ' — nanomx trace';
    document.getElementById('title').textContent = meta.source;
    buildLayout();
    state.view = fullRange();
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
    // Where the first render's time went, for the benchmark: before main() (the page and its
    // scripts loading), decoding the embedded data, layout, drawing.
    statusEl.dataset.phasesMs = [scriptStart, decoded - scriptStart, laidOut - decoded,
      firstRender - laidOut].map((t) => t.toFixed(1)).join(' ');
    buildOpsTable();
    buildPath();
    buildDiff();
    buildMemory();
    if (state.path) requestDraw();
    window.addEventListener('resize', () => { resize(); requestDraw(); });
    statusEl.dataset.ready = '1';
  }

  main();
})(window.nanomxViewer);
