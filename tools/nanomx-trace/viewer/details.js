// nanomx-trace viewer: the selection and the "Selection" panel that describes it.
'use strict';

(function (viewer) {
  const { state, groupDigits, formatTime, requestDraw } = viewer;

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
    const process = state.meta.processes[row.data.process];
    return process.name + ' / ' + (row.kind === 'thread' ? row.data.name + ' (tid ' + row.data.tid + ')' : 'counters');
  }

  function showArgs(argsId) {
    const text = state.meta.args[argsId] || '';
    if (!text) { detailsArgs.textContent = ''; return; }
    try {
      detailsArgs.textContent = 'args ' + JSON.stringify(JSON.parse(text), null, 2);
    } catch (e) {
      detailsArgs.textContent = 'args ' + text;
    }
  }

  // hit: what hitTest (interaction.js) returns, or null to clear the selection.
  function select(hit) {
    const { meta, A, strings, path } = state;
    state.selection = hit;
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

  viewer.select = select;
})(window.nanomxViewer);
