// Opens a gcspy HTML report in Debian's chromium (headless, through
// playwright-core from reports/web/node_modules; never a downloaded browser)
// and checks what a spec says it must show. Every check runs; each failure is
// printed as "FAIL: ..."; the exit status is 1 when any failed, 2 when the
// browser could not be driven at all, 77 (one line) when node is too old for
// playwright-core (node_check.mjs).
//
//   node tests/browser/check_report.mjs SPECS.json
//
// SPECS is one SPEC or an array of them, checked in one browser session:
// SPEC: {
//   page:      report.html (opened as file://, offline),
//   shots:     directory for screenshots (each section, and the whole page
//              unless fullPage is false),
//   sections:  [id, ...]: the sections to shoot (default: every one),
//   topShot:   true: also PREFIXtop.png, the first screen of the page,
//   prefix:    screenshot name prefix,
//   charts:    names of uPlot charts that must have drawn coloured pixels,
//   flame:     true: the flame graph must have frames,
//   maps:      [{name, layers}]: address maps that must have drawn cells,
//   devstate:  N: at least N device state diagrams with rectangles,
//   leaks:     [{function, class, memory, bytes, blocks, file, line}] rows the
//              leak table must hold (top frame function, file:line shown),
//   expand:    index into leaks: open that row; its stack must show file:line,
//   sort:      true: the table's bytes and top-frame columns must sort,
//   colour:    true: the maps' "allocation site" button must redraw them
//              (different pixels) and "age" bring the first picture back,
//   zoom:      a chart name: the wheel must zoom its time axis, shift+drag
//              pan it, a double click reset it,
//   escape:    strings that must show as text, with window.__pwned unset,
//   maxOpenMs: the page must be ready within this many ms,
//   processes: N: the picker must offer N processes, each drawing without
//              an error (checked last, after the other checks on the first)
//   leakBadge: {cls, value}: the leak badge's class and value; {blocks}:
//              its detail starts with that many blocks (what gcspy check counts)
//   siteRows:  true: the leak table has one row per site with definite or
//              indirect blocks, and only those two classes are ticked
//   chartRules: {bytes: {chart: [axis, ...]}}: every chart has axis titles;
//              the byte axes named tick at multiples of a power of two, each
//              label exactly its value in a binary unit (never 95M for
//              100,000,000); no two tick labels of any axis overlap (their
//              boxes measured in the axis's font); RSS is solid, in a colour
//              of its own, in the legend; the growth legend lists at most 8
//              suspects and says "+K more"; every nav link lands its section
//              below the sticky bar; byte columns of every table carry a
//              unit, and no table shows a raw 7+ digit byte count
//   views:     {peak: [function, ...], temporary: [...]}: the Peak and
//              Temporary sections' tables are the JSON's peak.sites and
//              temporary.sites (order, bytes, formatted), and hold these
//   findings:  [[substring, ...], ...]: the findings are the first thing of
//              the summary and within the first screen; findings holding
//              these substrings appear among them in this order (a
//              screenshot PREFIXtop.png of the page's top)
// }
// Always checked: no console error, no uncaught exception, no request for
// anything but the page itself (the page must need no network).
import './node_check.mjs'; // first: one line and exit 77 on a node too old for playwright-core
import { createRequire } from 'node:module';
import { mkdtempSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const { chromium } = require(join(here, '../../reports/web/node_modules/playwright-core'));

const specs = [].concat(JSON.parse(readFileSync(process.argv[2], 'utf8')));
const failures = [];
const fail = (msg) => { failures.push(msg); console.log('FAIL: ' + msg); };
const ok = (msg) => console.log('ok: ' + msg);
const check = (cond, msg) => (cond ? ok(msg) : fail(msg));

const profile = mkdtempSync(join(tmpdir(), 'gcspy-chromium-'));
let ctx;
try {
  ctx = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--disable-dev-shm-usage'],
    viewport: { width: 1400, height: 900 },
    deviceScaleFactor: 1,
  });
} catch (e) {
  console.log('cannot start chromium: ' + e.message.split('\n')[0]);
  rmSync(profile, { recursive: true, force: true });
  process.exit(2);
}

async function checkPage(spec) {
  console.log(`== ${spec.page}`);
  const pageUrl = pathToFileURL(resolve(spec.page)).href;
  const page = await ctx.newPage();
  const errors = [], requests = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push('console: ' + m.text()); });
  page.on('pageerror', (e) => errors.push('exception: ' + e.message));
  page.on('requestfailed', (r) => errors.push('request failed: ' + r.url()));
  page.on('request', (r) => { if (r.url() !== pageUrl && !r.url().startsWith('data:')) requests.push(r.url()); });

  const t0 = Date.now();
  await page.goto(pageUrl, { waitUntil: 'load', timeout: 120000 }); // a loaded machine can take long
  await page.waitForSelector('body[data-ready="1"]', { timeout: 60000 });
  // in-page time from navigation start to the last section drawn (what a
  // user waits for), and the whole round trip as the driver saw it
  const timing = await page.evaluate(() => ({ ready: window.gcspyReport.readyMs, start: GS.startMs, sections: window.gcspyReport.sectionMs,
    nav: performance.getEntriesByType('navigation')[0].toJSON() }));
  const readyMs = Math.round(timing.ready);
  console.log(`opened: ready ${readyMs} ms after navigation start (${Date.now() - t0} ms round trip); ` +
    `response end ${Math.round(timing.nav.responseEnd)} ms, scripts start ${Math.round(timing.start)} ms, DOM interactive ${Math.round(timing.nav.domInteractive)} ms; ` +
    'drawing (ms): ' + JSON.stringify(timing.sections));
  if (spec.maxOpenMs) check(readyMs <= spec.maxOpenMs, `ready within ${spec.maxOpenMs} ms (${readyMs} ms)`);

  // ---- charts drew ----
  const drawn = await page.evaluate(() => {
    // pixels of colour (not grey, white or clear): series, bars, points
    const coloured = (cv) => {
      const c = cv.getContext('2d');
      if (!cv.width || !cv.height) return 0;
      const d = c.getImageData(0, 0, cv.width, cv.height).data;
      let n = 0;
      for (let i = 0; i < d.length; i += 4) {
        const r = d[i], g = d[i + 1], b = d[i + 2];
        if (d[i + 3] > 0 && Math.max(r, g, b) - Math.min(r, g, b) > 40) n++;
      }
      return n;
    };
    const out = {};
    document.querySelectorAll('[data-chart]').forEach((el) => {
      const cv = el.querySelector('canvas');
      const svgRects = el.querySelectorAll('svg rect').length;
      out[el.dataset.chart] = { pixels: cv ? coloured(cv) : 0, rects: svgRects };
    });
    out.__maps = Array.from(document.querySelectorAll('.addrmap')).map((m) => ({
      name: m.dataset.map,
      layers: Array.from(m.querySelectorAll('.addrmap-layer')).map((l) => ({
        name: l.dataset.layer, pixels: coloured(l.querySelector('canvas')),
      })),
    }));
    out.__devstate = Array.from(document.querySelectorAll('.devstate')).map((d) => d.querySelectorAll('svg rect').length);
    return out;
  });
  for (const name of spec.charts || []) {
    const c = drawn[name];
    check(c && c.pixels > 30, `chart ${name} drew (${c ? c.pixels : 'no chart'} coloured pixels)`);
  }
  if (spec.flame) {
    const c = drawn.flame;
    check(c && c.rects >= 2, `flame graph drew (${c ? c.rects : 0} frames)`);
  }
  for (const m of spec.maps || []) {
    const got = drawn.__maps.find((x) => x.name === m.name);
    if (!got) { fail(`address map ${m.name} is missing (have ${drawn.__maps.map((x) => x.name).join(', ')})`); continue; }
    check(got.layers.length === m.layers, `address map ${m.name} has ${m.layers} layers (${got.layers.length})`);
    for (const l of got.layers) check(l.pixels > 50, `address map ${m.name} / ${l.name} drew cells (${l.pixels} pixels)`);
  }
  if (spec.devstate) {
    const n = drawn.__devstate.filter((r) => r > 0).length;
    check(n >= spec.devstate, `${spec.devstate} device state diagrams drew (${n})`);
  }

  // ---- the maps' colour toggle ----
  if (spec.colour) {
    const sig = () => page.$$eval('.addrmap-canvas', (cs) => cs.map((c) => {
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let h = 0;
      for (let i = 0; i < d.length; i += 4) h = (h * 31 + d[i] * 7 + d[i + 1] * 3 + d[i + 2]) | 0;
      return h;
    }).join(','));
    const age = await sig();
    await page.click('button[data-mode="site"]');
    const site = await sig();
    await page.click('button[data-mode="age"]');
    const back = await sig();
    check(site !== age && back === age, 'the maps redraw by allocation site and back by age');
    const keys = await page.$$eval('.legend .site-key', (k) => k.length);
    check(keys === 0, 'the age legend is back');
  }

  // ---- zoom and pan ----
  if (spec.zoom) {
    const scale = () => page.evaluate((n) => {
      const c = GS.charts.find((x) => x.name === n);
      return c ? [c.u.scales.x.min, c.u.scales.x.max] : null;
    }, spec.zoom);
    const full = await scale();
    const over = await page.$(`[data-chart="${spec.zoom}"] .u-over`);
    if (!full || !over) {
      fail(`chart ${spec.zoom} has no plot area to zoom`);
    } else {
      await over.scrollIntoViewIfNeeded();
      const box = await over.boundingBox();
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      await page.mouse.wheel(0, -300);
      await page.waitForTimeout(100);
      const z = await scale();
      check(z[1] - z[0] < (full[1] - full[0]) * 0.9, `wheel zooms ${spec.zoom} (${full} -> ${z})`);
      await page.keyboard.down('Shift');
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      await page.mouse.down();
      await page.mouse.move(box.x + box.width / 2 + 120, box.y + box.height / 2, { steps: 4 });
      await page.mouse.up();
      await page.keyboard.up('Shift');
      const pz = await scale();
      check(pz[0] < z[0] && Math.abs((pz[1] - pz[0]) - (z[1] - z[0])) < 1e-6 * (full[1] - full[0] + 1),
        `shift+drag pans ${spec.zoom} (${z} -> ${pz})`);
      await page.mouse.dblclick(box.x + box.width / 2, box.y + box.height / 2);
      await page.waitForTimeout(100);
      const r = await scale();
      check(Math.abs(r[0] - full[0]) < 1e-9 && Math.abs(r[1] - full[1]) < 1e-9, `double click resets ${spec.zoom} (${r})`);
    }
  }

  // ---- the leak table ----
  const readRows = () => page.$$eval('tr.leak-row', (rows) => rows.map((r) => ({
    index: Number(r.dataset.index),
    class: r.querySelector('td[data-key="class"] .cell').textContent,
    memory: r.querySelector('td[data-key="memory"] .cell').textContent,
    bytes: r.querySelector('td[data-key="bytes"]').dataset.value || r.querySelector('td[data-key="bytes"] .cell').textContent,
    blocks: r.querySelector('td[data-key="blocks"] .cell').textContent,
    frame: r.querySelector('td[data-key="frame"] .cell').textContent,
  })));
  const num = (s) => Number(s.replace(/[^0-9]/g, ''));
  const base = (p) => p.slice(p.lastIndexOf('/') + 1);
  let rows = await readRows();
  const findRow = (l) => rows.find((r) => r.class === l.class && r.frame.startsWith(l.function + ' ') && (!l.memory || r.memory === l.memory));
  for (const l of spec.leaks || []) {
    const r = findRow(l);
    if (!r) { fail(`leak table has no ${l.class} row for ${l.function} (rows: ${rows.map((x) => x.class + ' ' + x.frame).join('; ')})`); continue; }
    check(num(r.bytes) === l.bytes && num(r.blocks) === l.blocks,
      `leak ${l.function} (${l.class}): ${l.bytes} bytes in ${l.blocks} blocks (table: ${r.bytes} in ${r.blocks})`);
    if (l.file) check(r.frame.includes(`(${base(l.file)}:${l.line})`), `leak ${l.function} top frame at ${base(l.file)}:${l.line} (${r.frame})`);
  }
  if (spec.expand !== undefined && spec.leaks && spec.leaks[spec.expand]) {
    const l = spec.leaks[spec.expand], r = findRow(l);
    if (r) {
      const before = await page.$$eval(`tr.leak-stack[data-index="${r.index}"]`, (x) => x.length);
      await page.click(`tr.leak-row[data-index="${r.index}"] button.expand`);
      const text = await page.textContent(`tr.leak-stack[data-index="${r.index}"]`, { timeout: 5000 }).catch(() => null);
      check(before === 0 && text !== null, `expanding the ${l.function} row shows its stack`);
      if (text) {
        check(text.includes(`${l.file}:${l.line}`), `the expanded stack shows ${l.file}:${l.line}`);
        check((l.callers || []).every((c) => text.includes(c)), `the expanded stack shows its callers (${(l.callers || []).join(', ')})`);
      }
      await page.click(`tr.leak-row[data-index="${r.index}"] button.expand`);
      const after = await page.$$eval(`tr.leak-stack[data-index="${r.index}"]`, (x) => x.length);
      check(after === 0, 'clicking again closes the stack');
    }
  }
  if (spec.sort) {
    const sorted = (v, cmp) => v.every((x, i) => i === 0 || cmp(v[i - 1], x) <= 0);
    await page.click('th.sortable[data-key="bytes"]');
    rows = await readRows();
    check(rows.length > 1 && sorted(rows.map((r) => num(r.bytes)), (a, b) => a - b), 'sorting by bytes: ascending');
    check(await page.getAttribute('th.sortable[data-key="bytes"]', 'aria-sort') === 'ascending', 'bytes header says ascending');
    await page.click('th.sortable[data-key="bytes"]');
    rows = await readRows();
    check(sorted(rows.map((r) => num(r.bytes)), (a, b) => b - a), 'sorting by bytes again: descending');
    await page.click('th.sortable[data-key="frame"]');
    rows = await readRows();
    check(sorted(rows.map((r) => r.frame.toLowerCase()), (a, b) => (a < b ? -1 : a > b ? 1 : 0)), 'sorting by top frame: alphabetical');
    await page.click('th.sortable[data-key="bytes"]');
  }

  // ---- escaping: markup from the trace is text ----
  if (spec.escape) {
    const res = await page.evaluate((strs) => ({
      pwned: typeof window.__pwned,
      text: document.body.innerText,
      command: (document.querySelector('code.command') || {}).textContent || '',
      markers: Array.from(document.querySelectorAll('.marker-label')).map((e) => e.textContent),
      imgs: document.querySelectorAll('img').length,
      scripts: document.querySelectorAll('script').length,
      title: document.title,
      found: strs.map((s) => document.body.innerText.includes(s)),
    }), spec.escape);
    check(res.pwned === 'undefined', `no markup from the trace ran (window.__pwned is ${res.pwned})`);
    check(res.imgs === 0, `no element was made from trace markup (${res.imgs} img elements)`);
    check(res.scripts === 6, `the page's own 6 script elements only (${res.scripts})`);
    spec.escape.forEach((s, i) => check(res.found[i], `shown as text: ${s}`));
    check(spec.escape.every((s) => res.command.includes(s)), 'the command line shows the markup as text');
    check(spec.escape.every((s) => res.markers.includes(s)), 'the marker list shows the markup as text');
    check(spec.escape.every((s) => res.title.includes(s)), 'the title holds the markup as text');
  }

  // ---- a malformed trace says so above the summary ----
  if (spec.malformed) {
    const shown = await page.$$eval('#summary .malformed', (e) => e.map((x) => x.textContent));
    check(shown.length === 1 && shown[0].startsWith('Malformed trace: offset ') && shown[0].includes(spec.malformed),
      `the summary says the trace is malformed, naming "${spec.malformed}" (${shown.join('; ') || 'nothing shown'})`);
  }

  // ---- the leak badge: red "no leak scan" without a scan, neutral after
  // an exec, never a green "0 bytes" for either ----
  if (spec.leakBadge) {
    const b = await page.$eval('#summary .badge', (e) => ({ cls: e.className, value: e.querySelector('.badge-value').textContent,
      detail: (e.querySelector('.badge-detail') || {}).textContent || '' }));
    const want = spec.leakBadge;
    if (want.cls !== undefined) {
      check(b.cls === want.cls && b.value === want.value,
        `the leak badge is "${want.value}" (${want.cls}): got "${b.value}" (${b.cls})`);
    }
    if (want.blocks !== undefined) {
      check(b.detail.startsWith(`${want.blocks} blocks;`),
        `the leak badge counts the gate's ${want.blocks} blocks: got "${b.detail}"`);
    }
  }

  // ---- one row per allocation site; definite and indirect ticked at first ----
  if (spec.siteRows) {
    const res = await page.evaluate(() => {
      const p = window.gcspyReport.data.processes[0];
      const want = p.sites.filter((s) => s.classes.definite.blocks || s.classes.indirect.blocks).length;
      const ticked = [...document.querySelectorAll('#leaks input[data-class]')].filter((c) => c.checked).map((c) => c.dataset.class);
      return { rows: document.querySelectorAll('#leaks tr.leak-row').length, want, ticked };
    });
    check(res.rows === res.want, `the leak table has one row per site with definite or indirect blocks (${res.rows} rows, ${res.want} sites)`);
    check(res.ticked.join(',') === 'definite,indirect', `definite and indirect ticked at first (${res.ticked.join(',')})`);
  }

  // ---- the findings first: the top of the page, on the first screen ----
  if (spec.findings) {
    const res = await page.evaluate(() => {
      window.scrollTo(0, 0);
      const box = document.querySelector('#summary .body > .findings');
      const first = document.querySelector('#summary .body').firstElementChild;
      const r = box ? box.getBoundingClientRect() : null;
      return { first: !!box && first === box, bottom: r ? r.bottom : -1, vh: window.innerHeight,
        items: box ? [...box.querySelectorAll('ol > li.finding')].map((e) => e.textContent) : [] };
    });
    check(res.first, 'the findings are the first thing of the summary');
    check(res.bottom > 0 && res.bottom <= res.vh, `the findings fit the first screen (bottom ${res.bottom} of ${res.vh})`);
    // in this order among the findings (others, such as growth, may rank between)
    let at = 0;
    spec.findings.forEach((want) => {
      while (at < res.items.length && !want.every((x) => res.items[at].includes(x))) at++;
      check(at < res.items.length, `a finding holds ${want.join(' | ')}, in order (${res.items.join(' / ')})`);
      at++;
    });
    if (spec.shots) {
      mkdirSync(spec.shots, { recursive: true });
      await page.screenshot({ path: join(spec.shots, `${spec.prefix || ''}top.png`) });
    }
  }

  // ---- the charts' rules (issue 17) ----
  if (spec.chartRules) {
    const res = await page.evaluate((rules) => {
      const out = { titles: [], ticks: [], overlap: [], info: [] };
      const unit = { '': 1, K: 2 ** 10, M: 2 ** 20, G: 2 ** 30, T: 2 ** 40, P: 2 ** 50 };
      const ctx = document.createElement('canvas').getContext('2d');
      for (const c of GS.charts) {
        const u = c.u;
        u.axes.forEach((a, i) => { if (!a.label) out.titles.push(`${c.name} axis ${i}`); });
        for (const i of (rules.bytes || {})[c.name] || []) {
          const a = u.axes[i], sp = a._splits || [], vals = a._values || [];
          out.info.push(`${c.name}: ${vals.join(' ')}`);
          if (sp.length < 2) out.ticks.push(`${c.name} axis ${i}: ${sp.length} ticks`);
          sp.forEach((v, k) => {
            const m = /^(-?[0-9.]+)([KMGTP]?)$/.exec(String(vals[k]));
            if (!m || Number(m[1]) * unit[m[2]] !== v) out.ticks.push(`${c.name}: tick ${v} labelled ${vals[k]}`);
            if (k) {
              const d = v - sp[k - 1];
              if (!(d > 0 && Math.log2(d) === Math.round(Math.log2(d)))) out.ticks.push(`${c.name}: step ${d} is not a power of two`);
            }
          });
        }
        u.axes.forEach((a, i) => {
          if (a.show === false || !a._splits) return;
          const horiz = a.side === 0 || a.side === 2 || a.side === undefined && i === 0;
          ctx.font = a.font[0];
          const boxes = a._splits.map((v, k) => {
            const pos = u.valToPos(v, a.scale || (i === 0 ? 'x' : 'y'));
            const text = String(a._values[k] ?? '');
            const w = horiz ? ctx.measureText(text).width : 12;
            return text ? [pos - w / 2, pos + w / 2, text] : null;
          }).filter(Boolean).sort((x, y) => x[0] - y[0]);
          for (let k = 1; k < boxes.length; k++) {
            if (boxes[k][0] < boxes[k - 1][1] + 1) out.overlap.push(`${c.name} axis ${i}: "${boxes[k - 1][2]}" and "${boxes[k][2]}"`);
          }
        });
      }
      // RSS: solid, its own colour, in the legend
      const mem = GS.charts.find((c) => c.name === 'memory');
      if (mem) {
        const idx = mem.u.series.findIndex((x) => x.label === 'RSS');
        const rs = mem.u.series[idx];
        const legend = [...mem.box.querySelectorAll('.u-legend tr.u-series')].find((tr) => tr.textContent.includes('RSS'));
        const marker = legend && legend.querySelector('.u-marker');
        out.rss = rs ? { dash: rs.dash || null, stroke: typeof rs.stroke === 'function' ? rs.stroke(mem.u, idx) : rs.stroke,
          others: mem.u.series.filter((x, k) => k && k !== idx).map((x) => (typeof x.stroke === 'function' ? x.stroke(mem.u, 0) : x.stroke)),
          legend: !!legend, border: marker ? getComputedStyle(marker).borderStyle : null } : null;
      }
      // growth legend
      const g = GS.charts.find((c) => c.name === 'growth');
      const p = window.gcspyReport.data.processes[0];
      if (g) {
        out.growth = { entries: g.box.querySelectorAll('.u-legend tr.u-series').length - 1, suspects: p.growth.suspects.length,
          more: (document.querySelector('#growth .legend-more') || {}).textContent || '' };
      }
      // tables: byte columns carry a unit; no raw 7+ digit byte count
      out.raw = [];
      document.querySelectorAll('table.grid').forEach((t) => {
        const heads = [...t.querySelectorAll('thead th')].map((h) => h.textContent);
        t.querySelectorAll('tbody tr').forEach((tr) => [...tr.children].forEach((td, k) => {
          const text = td.querySelector('.cell') ? td.querySelector('.cell').textContent : td.textContent;
          if (/bytes/i.test(heads[k] || '') && text.trim() && text !== '–' && !/[0-9] ?(bytes?|KiB|MiB|GiB|TiB|PiB)\b/.test(text)) out.raw.push(`${heads[k]}: ${text}`);
          if (/([0-9]{1,3}(,[0-9]{3}){2,}|[0-9]{7,}) ?bytes/.test(text)) out.raw.push(text);
        }));
      });
      return out;
    }, spec.chartRules);
    console.log('byte ticks: ' + res.info.join(' | '));
    check(res.titles.length === 0, `every chart's axes have titles${res.titles.length ? ': missing ' + res.titles.join(', ') : ''}`);
    check(res.ticks.length === 0, `byte axes tick at powers of two, labelled exactly${res.ticks.length ? ': ' + res.ticks.slice(0, 6).join('; ') : ''}`);
    check(res.overlap.length === 0, `no two tick labels overlap${res.overlap.length ? ': ' + res.overlap.slice(0, 6).join('; ') : ''}`);
    const r = res.rss;
    check(r && !r.dash && r.stroke && r.stroke.toLowerCase() !== '#7b3294' && !r.others.includes(r.stroke) && r.legend && r.border === 'solid',
      `RSS is solid, its own colour, in the legend (${JSON.stringify(r)})`);
    if (res.growth) {
      const gr = res.growth, want = Math.min(8, gr.suspects);
      check(gr.entries === want, `the growth legend lists ${want} suspects (${gr.entries} entries, ${gr.suspects} suspects)`);
      check(gr.suspects > 8 ? gr.more.startsWith(`+${gr.suspects - 8} more`) : gr.more === '', `the growth legend's "+K more" line ("${gr.more}")`);
    }
    check(res.raw.length === 0, `tables show bytes with units, no raw byte counts${res.raw.length ? ': ' + res.raw.slice(0, 5).join('; ') : ''}`);
    // nav links land their section below the sticky bar
    const links = await page.$$eval('header nav a', (as) => as.map((a) => a.getAttribute('href')));
    const under = [];
    for (const href of links) {
      await page.evaluate(() => window.scrollTo(0, 0));
      await page.click(`header nav a[href="${href}"]`);
      await page.waitForTimeout(150);
      const pos = await page.evaluate((h) => {
        const bar = document.getElementById('top').getBoundingClientRect();
        const sec = document.querySelector(h).getBoundingClientRect();
        const head = document.querySelector(h + ' h2').getBoundingClientRect();
        return { bar: bar.bottom, top: sec.top, head: head.top, scrolled: window.scrollY };
      }, href);
      if (pos.top < pos.bar - 0.5 || pos.head < pos.bar) under.push(`${href}: section at ${pos.top}, heading at ${pos.head}, bar to ${pos.bar}`);
    }
    check(links.length >= 6 && under.length === 0, `each of ${links.length} nav links lands its section below the sticky bar${under.length ? ': ' + under.join('; ') : ''}`);
    await page.evaluate(() => window.scrollTo(0, 0));
  }

  // ---- the peak and temporary views ----
  if (spec.views) {
    const res = await page.evaluate(() => {
      const p = window.gcspyReport.data.processes[0];
      const rows = (sel) => [...document.querySelectorAll(sel + ' tbody tr.site-row')].map((tr) => ({
        stack: Number(tr.dataset.stack), site: tr.children[0].textContent,
        cells: [...tr.children].slice(2).map((td) => ({ v: Number(td.dataset.value), text: td.textContent })) }));
      return { peak: p.peak, temporary: p.temporary, peakRows: rows('#peak'), tempRows: rows('#temporary'),
        fmt: (p.peak.sites || []).map((s) => GS.fmtBytes(s.bytes)) };
    });
    const pk = res.peak, tm = res.temporary;
    check(pk && pk.sites && res.peakRows.length === pk.sites.length && pk.sites.every((s, i) => {
      const r = res.peakRows[i];
      return r.stack === s.stack_id && r.cells[0].v === s.bytes && r.cells[0].text === res.fmt[i] && r.cells[1].v === s.blocks &&
        r.cells[2].v === s.end_bytes && r.site.startsWith(s.site.label);
    }), `the Peak table is the JSON's peak.sites (${res.peakRows.length} rows, ${pk && pk.sites ? pk.sites.length : 'no'} sites)`);
    check(tm && res.tempRows.length === tm.sites.length && tm.sites.every((s, i) => {
      const r = res.tempRows[i];
      return r.stack === s.stack_id && r.cells[0].v === s.allocs && r.cells[1].v === s.of_allocs && r.cells[2].v === s.bytes;
    }), `the Temporary table is the JSON's temporary.sites (${res.tempRows.length} rows)`);
    for (const fn of spec.views.peak || []) check(res.peakRows.some((r) => r.site.startsWith(fn + ' ')), `the Peak table lists ${fn}`);
    for (const fn of spec.views.temporary || []) check(res.tempRows.some((r) => r.site.startsWith(fn + ' ')), `the Temporary table lists ${fn}`);
  }

  // ---- screenshots ----
  if (spec.shots) {
    mkdirSync(spec.shots, { recursive: true });
    const pre = spec.prefix || '';
    if (spec.topShot) {
      await page.evaluate(() => window.scrollTo(0, 0));
      await page.screenshot({ path: join(spec.shots, `${pre}top.png`) });
    }
    // the sticky header would sit in the middle of the section shots
    await page.evaluate(() => { document.getElementById('top').style.position = 'static'; });
    for (const id of spec.sections || ['summary', 'memory', 'fragmentation', 'leaks', 'peak', 'temporary', 'growth', 'pauses']) {
      const el = await page.$('#' + id);
      if (el) await el.screenshot({ path: join(spec.shots, `${pre}${id}.png`) });
    }
    if (spec.fullPage !== false) await page.screenshot({ path: join(spec.shots, `${pre}page.png`), fullPage: true });
    ok(`screenshots in ${spec.shots}`);
  }

  if (spec.processes) {
    const n = await page.$$eval('#proc option', (o) => o.length);
    check(n === spec.processes, `the process picker offers ${spec.processes} processes (${n})`);
    // one set of numbers: each process's leak badge says what its row in
    // the processes table says
    const sameAsRow = async (i) => {
      const got = await page.evaluate((k) => ({
        badge: document.querySelector('#summary .badge .badge-value').textContent,
        row: document.querySelectorAll('#summary table.processes tbody tr')[k].children[1].textContent }), i);
      check(got.badge === got.row, `process ${i + 1}: the leak badge (${got.badge}) is its row's leaked (${got.row})`);
    };
    await sameAsRow(0);
    for (let i = 1; i < n; i++) {
      await page.selectOption('#proc', String(i));
      await page.waitForSelector('body[data-ready="1"]', { timeout: 30000 });
      const shown = await page.$$eval('#summary .body .error', (e) => e.map((x) => x.textContent));
      check(shown.length === 0, `process ${i + 1} draws (${shown.join('; ') || 'no error shown'})`);
      await sameAsRow(i);
    }
    await page.selectOption('#proc', '0');
    await page.waitForSelector('body[data-ready="1"]', { timeout: 30000 });
  }

  check(errors.length === 0, 'no console error, exception or failed request' + (errors.length ? ': ' + errors.join(' | ') : ''));
  check(requests.length === 0, 'no request beyond the page itself' + (requests.length ? ': ' + requests.join(' ') : ''));
  await page.close();
}

try {
  for (const spec of specs) await checkPage(spec);
} catch (e) {
  fail('the browser session failed: ' + e.message.split('\n')[0]);
} finally {
  await ctx.close();
  rmSync(profile, { recursive: true, force: true });
}
console.log(failures.length ? `${failures.length} checks failed` : 'all checks passed');
process.exit(failures.length ? 1 : 0);
