// Opens a page made by `nanomx-trace view` in Debian's headless Chromium and prints, as JSON, the
// page's own first-render time (performance.now() when the first frame of the timeline is drawn,
// counted from navigation start: HTML parse, data decode and the draw), the wall time until the
// page reported ready, and the draw times of frames while zooming and panning.
// usage: node first_render.mjs PAGE.html [RUNS]
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import url from 'node:url';

const here = path.dirname(url.fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '../../tools/nanomx-trace/package.json'));
const { chromium } = require('playwright-core');

const [page, runsText] = process.argv.slice(2);
const runs = Number(runsText || 3);
const results = [];
for (let i = 0; i < runs; i++) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'nanomx-render-'));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium', headless: true, viewport: { width: 1600, height: 900 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const tab = browser.pages()[0] || await browser.newPage();
    const errors = [];
    tab.on('pageerror', (e) => errors.push(e.message));
    tab.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    const start = Date.now();
    await tab.goto(url.pathToFileURL(path.resolve(page)).href, { timeout: 60000 });
    await tab.waitForSelector('#status[data-ready="1"]', { timeout: 60000 });
    const wall = Date.now() - start;
    const data = await tab.$eval('#status', (el) => ({ ...el.dataset }));
    // Smoothness: the draw time of frames while zooming in from the whole trace to a few µs
    // and panning, one key press per frame.
    await tab.mouse.move(800, 200);
    const frames = [];
    for (const key of [...Array(24).fill('w'), ...Array(6).fill('d'), ...Array(24).fill('s')]) {
      await tab.keyboard.press(key);
      await tab.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => resolve())));
      frames.push(Number(await tab.$eval('#status', (el) => el.dataset.lastDrawMs)));
    }
    if (errors.length) throw new Error('page errors: ' + errors.join('; '));
    frames.sort((a, b) => a - b);
    results.push({ firstRenderMs: Number(data.firstRenderMs), readyWallMs: wall, events: Number(data.events), rows: Number(data.rows),
      drawMedianMs: frames[frames.length >> 1], drawMaxMs: frames[frames.length - 1] });
  } finally {
    await browser.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
}
console.log(JSON.stringify(results));
