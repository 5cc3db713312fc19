// nanomx-trace viewer: `view --memory CSV`: the "Memory per scope" panel, the scope tree of
// `nanomx-trace memory` with the strings it prints (the page formats no size itself, so both
// show the same numbers). A row with children folds and unfolds them on a click; the top two
// levels start unfolded.
'use strict';

(function (viewer) {
  const { state, statusEl } = viewer;

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
    const m = state.meta.memory;
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

  viewer.buildMemory = buildMemory;
})(window.nanomxViewer);
