// Opens a page made by `nanomx-trace view` in Debian's headless Chromium (driven by
// playwright-core) and checks what a user would see. Fails on any console error, page error,
// dialog or request that leaves the page.
//
// usage: node view_browser_test.mjs NANOMX_TRACE FIXTURE_DIR WORK_DIR
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import url from 'node:url';

const here = path.dirname(url.fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '../../tools/nanomx-trace/package.json'));
let chromium;
try {
  ({ chromium } = require('playwright-core'));
} catch (error) {
  console.error('playwright-core is not installed: run scripts/setup (scripts/setup.d/trace-viewer.sh)');
  process.exit(1);
}

const [tool, fixtureDir, workDir] = process.argv.slice(2);
if (!tool || !fixtureDir || !workDir) {
  console.error('usage: node view_browser_test.mjs NANOMX_TRACE FIXTURE_DIR WORK_DIR');
  process.exit(2);
}
fs.mkdirSync(workDir, { recursive: true });

const failures = [];
function check(condition, message) {
  if (!condition) failures.push(message);
  console.log((condition ? 'ok    ' : 'FAIL  ') + message);
}

// A minimal PNG reader (8-bit RGB/RGBA, non-interlaced: what Chromium writes) for the blank check.
function decodePng(buffer) {
  let offset = 8;
  let width = 0, height = 0, colorType = 0;
  const idat = [];
  while (offset < buffer.length) {
    const length = buffer.readUInt32BE(offset);
    const type = buffer.toString('ascii', offset + 4, offset + 8);
    const data = buffer.subarray(offset + 8, offset + 8 + length);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      if (data[8] !== 8 || data[12] !== 0) throw new Error('unsupported PNG layout');
      colorType = data[9];
    } else if (type === 'IDAT') {
      idat.push(data);
    }
    offset += 12 + length;
  }
  const bpp = colorType === 6 ? 4 : 3;
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const stride = width * bpp;
  const pixels = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    for (let x = 0; x < stride; x++) {
      const value = raw[y * (stride + 1) + 1 + x];
      const a = x >= bpp ? pixels[y * stride + x - bpp] : 0;
      const b = y > 0 ? pixels[(y - 1) * stride + x] : 0;
      const c = x >= bpp && y > 0 ? pixels[(y - 1) * stride + x - bpp] : 0;
      let predicted = 0;
      if (filter === 1) predicted = a;
      else if (filter === 2) predicted = b;
      else if (filter === 3) predicted = (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
        predicted = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      pixels[y * stride + x] = (value + predicted) & 255;
    }
  }
  return { width, height, bpp, pixels };
}

const XSS_NAME = '<img src=x onerror=alert(1)>';
const pagePath = path.join(workDir, 'view_browser_test.html');
execFileSync(tool, ['view', path.join(fixtureDir, 'nanomx.json'), '-o', pagePath], { stdio: 'inherit' });

const userDataDir = fs.mkdtempSync(path.join(workDir, 'chromium-profile-'));
const browser = await chromium.launchPersistentContext(userDataDir, {
  executablePath: '/usr/bin/chromium',
  headless: true,
  viewport: { width: 1280, height: 800 },
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const consoleErrors = [], dialogs = [], outside = [];
try {
  const page = browser.pages()[0] || await browser.newPage();
  page.on('console', (message) => { if (message.type() === 'error') consoleErrors.push(message.text()); });
  page.on('pageerror', (error) => consoleErrors.push('page error: ' + error.message));
  page.on('dialog', (dialog) => { dialogs.push(dialog.message()); dialog.dismiss(); });
  page.on('request', (request) => {
    const u = request.url();
    if (!u.startsWith('file:') && !u.startsWith('data:') && !u.startsWith('blob:')) outside.push(u);
  });

  await page.goto(url.pathToFileURL(pagePath).href);
  await page.waitForSelector('#status[data-ready="1"]', { timeout: 30000 });
  const status = await page.$eval('#status', (el) => ({ ...el.dataset, text: el.textContent }));
  console.log('status: ' + status.text);
  check(status.events === '21', 'page reports 21 events (got ' + status.events + ')');
  check(status.rows === '6', 'page reports 6 rows (got ' + status.rows + ')');
  check(status.slices === '6', 'page reports 6 slices (got ' + status.slices + ')');

  // The operators table shows the same numbers as `nanomx-trace summary`.
  const opsRows = await page.$$eval('#ops-table tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  check(JSON.stringify(opsRows[0]) === JSON.stringify(['_random_uniform', '1', '1234.5670', '1234.5670', '1234.5670', '1234.5670']),
    'operator table row 1 matches the summary: ' + JSON.stringify(opsRows[0]));
  check(JSON.stringify(opsRows[1]) === JSON.stringify(['dot', '2', '0.1000', '0.0480', '0.0520', '0.0500']),
    'operator table row 2 matches the summary: ' + JSON.stringify(opsRows[1]));
  // Sorting by a column header.
  await page.click('#ops-table th:nth-child(2)');
  const sortedFirst = await page.$eval('#ops-table tbody tr td', (td) => td.textContent);
  check(sortedFirst === 'dot', 'clicking "Total Count" sorts by count (first row ' + sortedFirst + ')');

  // A slice named like markup is shown as text and runs nothing.
  const eventOption = await page.$$eval('#ops-category option', (options) => options.find((o) => o.textContent.startsWith('event ')).value);
  await page.selectOption('#ops-category', eventOption);
  const xssCell = await page.$eval('#ops-table tbody tr td', (td) => td.textContent);
  check(xssCell === XSS_NAME, 'the markup-like name is shown as text in the table');
  await page.fill('#search', 'onerror');
  await page.waitForFunction(() => document.getElementById('matches').dataset.count !== undefined);
  await page.press('#search', 'Enter');
  const detailName = await page.$eval('#details-table tr td:nth-child(2)', (td) => td.textContent);
  check(detailName === XSS_NAME, 'search finds the slice and the details show its name as text');
  const imgCount = await page.$$eval('img', (imgs) => imgs.length);
  check(imgCount === 0, 'no <img> element was created (' + imgCount + ')');

  // Interaction: reset, zoom and pan with the keyboard, then click the long slice.
  await page.click('#timeline', { position: { x: 5, y: 5 } });
  for (const key of ['0', 'w', 'w', 's', 'd', 'a', '0']) await page.keyboard.press(key);
  await page.mouse.wheel(0, 200);
  await page.keyboard.press('0');
  await page.waitForTimeout(100);
  // Rows from the top: axis 22 px, "cpu/0" header 20 px, then the worker thread's first lane.
  await page.click('#timeline', { position: { x: 700, y: 22 + 20 + 9 } });
  const clicked = await page.$eval('#details-table', (table) => table.textContent);
  check(clicked.includes('_random_uniform') && clicked.includes('1.235 s'), 'a click on a slice shows its name and duration');

  const shot = await page.screenshot({ path: path.join(workDir, 'view_browser_test.png') });
  const image = decodePng(shot);
  const colors = new Set();
  let nonWhite = 0;
  for (let i = 0; i < image.pixels.length; i += image.bpp) {
    const r = image.pixels[i], g = image.pixels[i + 1], b = image.pixels[i + 2];
    if (r < 245 || g < 245 || b < 245) nonWhite++;
    colors.add((r << 16) | (g << 8) | b);
  }
  const share = nonWhite / (image.width * image.height);
  check(share > 0.03 && colors.size > 20, 'screenshot is not blank (' + (share * 100).toFixed(1) + '% non-white, ' + colors.size + ' colours)');

  await page.waitForTimeout(300);  // give a stray handler time to fire

  // The other fixtures' layouts (MXNet's 64-bit pids and tids, torch's string pid and flow
  // events, no events at all) load without an error and report their counts.
  const emptyTrace = path.join(workDir, 'empty_events.json');
  fs.writeFileSync(emptyTrace, '{"traceEvents":[]}');
  const others = [
    // MXNet: threads dot+sum on cpu/0 (2), the shadow tasks, the API calls, the frame, the
    // marker (1 each), and the counters "MXNet C API Calls" and "bytes": 8 rows.
    [path.join(fixtureDir, 'mxnet_pretty.json'), '33', '8'],
    // torch: threads 1 and 2 of "CPU functions", thread 1 of pid 7: 3 rows.
    [path.join(fixtureDir, 'torch_x.json'), '8', '3'],
    [emptyTrace, '0', '0'],
  ];
  for (const [trace, events, rowCount] of others) {
    const otherPage = path.join(workDir, path.basename(trace, '.json') + '.html');
    execFileSync(tool, ['view', trace, '-o', otherPage], { stdio: 'inherit' });
    await page.goto(url.pathToFileURL(otherPage).href);
    await page.waitForSelector('#status[data-ready="1"]', { timeout: 30000 });
    const data = await page.$eval('#status', (el) => ({ ...el.dataset }));
    check(data.events === events && data.rows === rowCount,
      path.basename(trace) + ': ' + data.events + ' events, ' + data.rows + ' rows (expected ' + events + ', ' + rowCount + ')');
    await page.keyboard.press('w');
    await page.mouse.click(700, 120);
  }

  // `view FILE --critical-path --step 0`: a chain A -> C -> D by dependency flows, with B on a
  // parallel branch that does not matter. The path's three operations are outlined in red.
  const chainTrace = path.join(workDir, 'critical_chain.json');
  const chainEvents = [
    { name: 'process_name', ph: 'M', pid: 0, tid: 0, args: { name: 'cpu/0' } },
    { name: 'thread_name', ph: 'M', pid: 1, tid: 1, args: { name: 'main' } },
    { name: 'ProfilerStep#0', cat: 'ProfilerStep', ph: 'X', ts: 0, dur: 100, pid: 1, tid: 1 },
  ];
  let flowId = 0;
  const op = (name, tid, push, start, end) => {
    flowId++;
    chainEvents.push({ name, cat: 'operator', ph: 's', ts: push, pid: 1, tid: 1, id: flowId });
    chainEvents.push({ name, cat: 'operator', ph: 'f', bp: 'e', ts: start, pid: 0, tid, id: flowId });
    chainEvents.push({ name, cat: 'operator', ph: 'X', ts: start, dur: end - start, pid: 0, tid });
  };
  const dependency = (fromTid, end, toTid, start) => {
    flowId++;
    chainEvents.push({ name: 'dependency', cat: 'dependency', ph: 's', ts: end, pid: 0, tid: fromTid, id: flowId });
    chainEvents.push({ name: 'dependency', cat: 'dependency', ph: 'f', bp: 'e', ts: start, pid: 0, tid: toTid, id: flowId });
  };
  op('A', 10, 1, 5, 30); op('B', 11, 2, 6, 15); op('C', 11, 3, 32, 60); op('D', 10, 4, 62, 90);
  dependency(10, 30, 11, 32); dependency(11, 60, 10, 62);
  fs.writeFileSync(chainTrace, JSON.stringify({ traceEvents: chainEvents }));
  const pathPage = path.join(workDir, 'critical_path.html');
  execFileSync(tool, ['view', chainTrace, '--critical-path', '--step', '0', '-o', pathPage], { stdio: 'inherit' });
  await page.goto(url.pathToFileURL(pathPage).href);
  await page.waitForSelector('#status[data-ready="1"]', { timeout: 30000 });
  const pathStatus = await page.$eval('#status', (el) => ({ ...el.dataset }));
  check(pathStatus.pathSlices === '3' && pathStatus.pathSegments === '7',
    'critical path: 3 operations, 7 segments highlighted (got ' + pathStatus.pathSlices + ', ' + pathStatus.pathSegments + ')');
  const pathTitle = await page.$eval('#path-title', (el) => el.textContent);
  check(pathTitle.startsWith('Critical path of step 0: 90'), 'the path panel names the step and length: ' + pathTitle);
  const toggleVisible = await page.$eval('#path-toggle', (el) => !el.hidden);
  check(toggleVisible, 'the critical-path toggle is shown');
  const redPixels = async () => {
    const png = decodePng(await page.screenshot({ path: path.join(workDir, 'critical_path.png') }));
    let red = 0;
    for (let i = 0; i < png.pixels.length; i += png.bpp) {
      if (png.pixels[i] > 180 && png.pixels[i + 1] < 40 && png.pixels[i + 2] < 40) red++;
    }
    return red;
  };
  const redOn = await redPixels();
  await page.click('#show-path');
  await page.waitForTimeout(100);
  const redOff = await redPixels();
  check(redOn > 200 && redOff < redOn / 10, 'the path is drawn in red, and the toggle hides it (' + redOn + ' -> ' + redOff + ' red pixels)');
  await page.click('#show-path');
  await page.keyboard.press('0');
  await page.waitForTimeout(100);
  // A click on A (thread 10, below the cpu/0 header) says it is on the path.
  await page.click('#timeline', { position: { x: 400, y: 22 + 20 + 9 } });
  const onPath = await page.$eval('#details-table', (table) => table.textContent);
  check(onPath.includes('critical pathon the path'), 'a click on a path operation says so: ' + onPath);
  const diffHidden = await page.$eval('#diff-panel', (el) => getComputedStyle(el).display === 'none');
  check(diffHidden, 'the diff panel is hidden on a one-trace page');
  const memoryHidden = await page.$eval('#memory-panel', (el) => getComputedStyle(el).display === 'none');
  check(memoryHidden, 'the memory panel is hidden without --memory');
  const pathDetail = await page.$$eval('#path-kinds tr', (trs) => trs.map((tr) => tr.textContent));
  check(pathDetail.length === 4 && pathDetail[0].startsWith('compute'), 'the path panel lists the four kinds: ' + JSON.stringify(pathDetail));

  // `view BASE NEW`: both traces on one timeline, with the diff table.
  const diffBase = path.join(workDir, 'diff_base.json'), diffNew = path.join(workDir, 'diff_new.json');
  const xTrace = (ops) => JSON.stringify({ traceEvents: ops.map(([name, ts, dur]) => ({ name, cat: 'operator', ph: 'X', ts, dur, pid: 0, tid: 1 })) });
  fs.writeFileSync(diffBase, xTrace([['dot', 100, 10000], ['dot', 20100, 10000], ['relu', 40100, 1000]]));
  fs.writeFileSync(diffNew, xTrace([['dot', 0, 25500], ['dot', 30000, 25500], ['softmax', 60000, 500]]));
  const diffPage = path.join(workDir, 'diff_view.html');
  execFileSync(tool, ['view', diffBase, diffNew, '-o', diffPage], { stdio: 'inherit' });
  await page.goto(url.pathToFileURL(diffPage).href);
  await page.waitForSelector('#status[data-ready="1"]', { timeout: 30000 });
  const diffStatus = await page.$eval('#status', (el) => ({ ...el.dataset }));
  check(diffStatus.rows === '2' && diffStatus.slices === '6' && diffStatus.diffRows === '3',
    'diff view: 2 rows (one per trace), 6 slices, 3 diff rows (got ' + diffStatus.rows + ', ' + diffStatus.slices + ', ' + diffStatus.diffRows + ')');
  const verdict = await page.$eval('#diff-verdict', (el) => el.textContent);
  check(verdict === 'NEW is 145.2 % slower: dot +31.0 ms, softmax +500 us', 'diff view verdict: ' + verdict);
  const diffRows = await page.$$eval('#diff-table tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  check(JSON.stringify(diffRows[0]) === JSON.stringify(['dot', '2', '20.0000', '2', '51.0000', '+31.0000', '+155.0 %']),
    'diff view row 1: ' + JSON.stringify(diffRows[0]));
  check(diffRows.length === 3 && diffRows[1][6] === 'gone' && diffRows[2][6] === 'new', 'diff view marks gone and new rows');
  const labels = await page.$eval('#ops-title', (el) => el.textContent);
  check(labels === 'Top operators of diff_new.json', 'the operators table is NEW\'s: ' + labels);
  // Each run starts at time 0: BASE's first slice (at 100 µs in its file) starts at 0 too.
  await page.click('#timeline', { position: { x: 300, y: 22 + 20 + 9 } });
  const baseClick = await page.$eval('#details-table', (table) => table.textContent);
  check(baseClick.includes('dot') && baseClick.includes('start0 ns after the first event'), 'BASE is drawn from time 0: ' + baseClick);

  // `view IN --memory CSV`: the "Memory per scope" panel shows the tree of `nanomx-trace memory`
  // with its strings (fixtures/memory_profile.expected.txt), folds on a click, and keeps names
  // with quotes and parentheses as text.
  const memoryPage = path.join(workDir, 'memory_view.html');
  execFileSync(tool, ['view', path.join(fixtureDir, 'nanomx.json'), '--memory', path.join(fixtureDir, 'memory_profile.csv'),
    '-o', memoryPage], { stdio: 'inherit' });
  await page.goto(url.pathToFileURL(memoryPage).href);
  await page.waitForSelector('#status[data-ready="1"]', { timeout: 30000 });
  const memoryRows = async () => page.$$eval('#memory-table tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  const memoryStatus = await page.$eval('#status', (el) => ({ ...el.dataset }));
  check(memoryStatus.memoryRows === '19' && memoryStatus.memoryShown === '11',
    'memory panel: 19 scopes, the top two levels (11 rows) shown at first (got ' + memoryStatus.memoryRows + ', ' + memoryStatus.memoryShown + ')');
  const memoryVisible = await page.$eval('#memory-panel', (el) => getComputedStyle(el).display !== 'none' && el.getBoundingClientRect().width > 100);
  check(memoryVisible, 'the memory panel is shown beside the other panels');
  await page.screenshot({ path: path.join(workDir, 'memory_view.png') });
  const memoryTitle = await page.$eval('#memory-title', (el) => el.textContent);
  check(memoryTitle === 'Memory per scope: memory_profile.csv', 'memory panel title: ' + memoryTitle);
  const memoryHead = await page.$$eval('#memory-table thead th', (ths) => ths.map((th) => th.textContent));
  check(JSON.stringify(memoryHead) === JSON.stringify(['Scope', 'Requested', 'Actual', 'Allocs', 'Reused', '% actual', 'gpu 0 actual', 'gpu 1 actual']),
    'memory table columns, one per device: ' + JSON.stringify(memoryHead));
  let rowsNow = await memoryRows();
  check(JSON.stringify(rowsNow[0]) === JSON.stringify(['\u25BEtensordot', '20.00 MiB', '20.00 MiB', '3', '1', '75.5 %', '16.00 MiB', '4.00 MiB']),
    'memory row 1 matches `nanomx-trace memory`: ' + JSON.stringify(rowsNow[0]));
  check(JSON.stringify(rowsNow[1]) === JSON.stringify(['\u25B8in_arg', '12.00 MiB', '12.00 MiB', '2', '0', '45.3 %', '8.00 MiB', '4.00 MiB']),
    'memory row 2, folded: ' + JSON.stringify(rowsNow[1]));
  const memoryFoot = await page.$$eval('#memory-table tfoot tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  check(JSON.stringify(memoryFoot) === JSON.stringify([
    ['total', '26.11 MiB', '26.51 MiB', '10', '4', '100.0 %', '21.50 MiB', '5.00 MiB'],
    ['not allocated by nanomx (NVML)', '-', '300.0 MiB', '-', '-', '-', '300.0 MiB', '-512 B']]),
  'memory total and NVML lines: ' + JSON.stringify(memoryFoot));
  const exactBytes = await page.$eval('#memory-table tbody tr td:nth-child(3)', (td) => td.title);
  check(exactBytes === '20,971,520 bytes', 'the actual size shows the exact bytes on hover: ' + exactBytes);
  await page.click('#memory-table tbody tr:nth-child(1)');  // fold tensordot
  rowsNow = await memoryRows();
  check(rowsNow.length === 9 && rowsNow[1][0] === '\u25BE<unk>', 'a click folds a scope: ' + rowsNow.length + ' rows, then ' + rowsNow[1][0]);
  await page.click('#memory-expand');
  rowsNow = await memoryRows();
  const byName = new Map(rowsNow.map((cells) => [cells[0].replace(/^[\u25B8\u25BE]/, ''), cells]));
  check(rowsNow.length === 19, 'expand all shows the 19 scopes (' + rowsNow.length + ')');
  const tempSpace = byName.get('temp_space (fully_connected-inl.h +316)');
  check(tempSpace && tempSpace[1] === '293.0 KiB' && tempSpace[2] === '512.0 KiB', 'a name with spaces and parentheses: ' + JSON.stringify(tempSpace));
  const quoted = byName.get('say "hi"');
  check(quoted && quoted[1] === '1000 B' && quoted[7] === '1.00 KiB', 'a name with quotes: ' + JSON.stringify(quoted));
  await page.click('#memory-collapse');
  rowsNow = await memoryRows();
  check(rowsNow.length === 4, 'collapse all leaves the 4 top-level scopes (' + rowsNow.length + ')');
} finally {
  await browser.close();
  fs.rmSync(userDataDir, { recursive: true, force: true });
}
check(consoleErrors.length === 0, 'no console errors: ' + JSON.stringify(consoleErrors));
check(dialogs.length === 0, 'no dialog opened: ' + JSON.stringify(dialogs));
check(outside.length === 0, 'no request left the page: ' + JSON.stringify(outside));

if (failures.length) {
  console.error(failures.length + ' check(s) failed');
  process.exit(1);
}
console.log('all checks passed');
