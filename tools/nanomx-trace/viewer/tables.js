// nanomx-trace viewer: the "Top operators" table (the aggregate table of `nanomx-trace summary`,
// one category at a time, sortable by any column) and, for `view BASE NEW`, the "Diff" table.
'use strict';

(function (viewer) {
  const { state, statusEl } = viewer;

  // ---------------------------------------------------------------- operators table
  const opsCategory = document.getElementById('ops-category');
  const opsHead = document.querySelector('#ops-table thead');
  const opsBody = document.querySelector('#ops-table tbody');
  let opsSort = { column: -1, ascending: false };

  function buildOpsTable() {
    opsCategory.textContent = '';
    let preferred = 0;
    state.meta.summary.forEach((category, i) => {
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
    const category = state.meta.summary[Number(opsCategory.value)];
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

  // ---------------------------------------------------------------- diff table
  // `view BASE NEW`: what `nanomx-trace diff` prints, by name, largest change first.
  function buildDiff() {
    const meta = state.meta;
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

  Object.assign(viewer, { buildOpsTable, buildDiff });
})(window.nanomxViewer);
