// nanomx-trace viewer: the search box. Typing fades the slices whose names do not match; Enter
// and shift+Enter (interaction.js) step through the matches in time order.
'use strict';

(function (viewer) {
  const { AXIS_HEIGHT, LANE_HEIGHT, state, groupDigits, clampScroll, requestDraw, select } = viewer;

  const searchEl = document.getElementById('search');
  const matchesEl = document.getElementById('matches');
  let matchList = null;   // matching slice indices in time order
  let matchCursor = -1;
  let searchTimer = 0;
  searchEl.addEventListener('input', () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(runSearch, 120);
  });

  function runSearch() {
    const { A, strings } = state;
    const query = searchEl.value.trim().toLowerCase();
    matchList = null;
    matchCursor = -1;
    if (!query) {
      state.matchName = null;
      matchesEl.textContent = '';
      requestDraw();
      return;
    }
    const matchName = new Uint8Array(strings.length);
    for (let i = 0; i < strings.length; i++) {
      if (strings[i].toLowerCase().includes(query)) matchName[i] = 1;
    }
    state.matchName = matchName;
    let count = 0;
    const names = A.sliceName;
    for (let i = 0; i < names.length; i++) count += matchName[names[i]];
    matchesEl.textContent = groupDigits(count) + (count === 1 ? ' match' : ' matches');
    matchesEl.dataset.count = String(count);
    requestDraw();
  }

  function nextMatch(direction) {
    const { A, matchName } = state;
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
    state.view = { t0: A.sliceStart[i] - dur * 2, t1: A.sliceStart[i] + dur * 3 };
    for (const row of state.rows) {
      if (row.kind !== 'thread') continue;
      for (let lane = 0; lane < row.data.lanes.length; lane++) {
        const [offset, count] = row.data.lanes[lane];
        if (i >= offset && i < offset + count) {
          state.scrollY = row.y + lane * LANE_HEIGHT - (state.height - AXIS_HEIGHT) / 3;
          clampScroll();
          select({ type: 'slice', index: i, row, lane });
          matchesEl.textContent = (matchCursor + 1) + ' of ' + groupDigits(matchList.length);
          return;
        }
      }
    }
  }

  Object.assign(viewer, { searchEl, nextMatch });
})(window.nanomxViewer);
