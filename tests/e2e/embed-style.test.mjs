// <bitlens-view> as a hub would ship it (issue 27): the host page's CSS changes nothing inside the
// element but what the host sets on purpose (the documented custom properties), nothing inside
// overlaps at any font size or width, the themes have readable text, and a server that drops the
// connection gives an error that says what is known (network failure, or network failure or CORS),
// after retries, with a Retry that works once the server recovers. Three origins on 127.0.0.1 as
// in embed.test.mjs: the data (range-server.mjs), the embed's files (dist/embed/), the host page
// (web/examples/host.html; each test swaps its stylesheet for its own).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startServer } from './serve.mjs';
import { startRangeServer } from './range-server.mjs';
import { launch } from './browser.mjs';
import { ROOT, SHOTS, WEIGHTS, collectErrors, inspect, tempDir } from './fixtures.mjs';

const DIST = path.join(ROOT, process.env.DIST ?? 'dist');
const EMBED = path.join(DIST, 'embed');
const EXAMPLES = path.join(ROOT, 'web/examples');
const SMALL = 'minilm-bf16.safetensors'; // 45 MB

/** A page's stylesheet at its most hostile: everything it may set on every element, important. */
const HOSTILE = `* { font-size: 31px !important; color: red !important; line-height: 3 !important;
  font-family: "Comic Sans MS", cursive !important; font-weight: 900 !important; font-style: italic !important;
  letter-spacing: 0.3em !important; word-spacing: 1em !important; text-transform: uppercase !important;
  text-indent: 2em !important; text-align: right !important; white-space: pre !important;
  direction: rtl !important; cursor: wait !important; list-style: square inside !important;
  font-variant: small-caps !important; text-shadow: 2px 2px 0 lime !important; visibility: visible !important; }`;
/** A realistic hub page: a serif 18 px text on a dark background. */
const REALISTIC = `html { font: 18px/1.7 Georgia, "Times New Roman", serif; color: #e8e6e3; background: #111418; }
  body { margin: 0 auto; max-width: 1100px; } main, header { padding: 12px; }
  bitlens-view { height: 620px; border: 1px solid #333; }`;

const s = { data: null, embed: null, host: null, app: null, context: null, dir: null };

before(async () => {
  assert.ok(fs.existsSync(path.join(EMBED, 'bitlens-embed.js')), `${EMBED} has no embed: run scripts/build-web.sh`);
  s.dir = tempDir();
  fs.symlinkSync(path.join(WEIGHTS, SMALL), path.join(s.dir, SMALL));
  s.data = await startRangeServer(s.dir);
  s.embed = await startServer(EMBED, 0, { isolate: false, cors: true });
  s.host = await startServer(EXAMPLES, 0, { isolate: false });
  s.app = await startServer(DIST, 0, { isolate: false });
  s.context = await launch();
  fs.mkdirSync(SHOTS, { recursive: true });
});

after(async () => {
  await s.context?.close();
  for (const server of [s.data, s.embed, s.host, s.app]) server?.close();
  if (s.dir) fs.rmSync(s.dir, { recursive: true, force: true });
});

/**
 * Opens the example host page with `css` instead of its own stylesheet, the element showing the
 * data server's `files` (`data`: another data server) with `attrs`; resolves once the table shows.
 */
async function openHost(css, attrs = {}, { data = s.data, files = [SMALL], width = 1280, wait = true } = {}) {
  const page = await s.context.newPage();
  collectErrors(page);
  await page.setViewportSize({ width, height: 900 });
  const q = new URLSearchParams({ embed: `http://127.0.0.1:${s.embed.address().port}/bitlens-embed.js` });
  for (const f of files) q.append('src', `${data.url}${f}`);
  for (const [k, v] of Object.entries(attrs)) q.set(k, v);
  await page.goto(`http://127.0.0.1:${s.host.address().port}/host.html?${q}`);
  await page.evaluate((css) => {
    document.getElementById('host-css').disabled = true;
    const style = document.createElement('style');
    style.id = 'test-css';
    style.textContent = css;
    document.head.append(style);
  }, css);
  await page.waitForFunction(() => document.querySelector('#view')?.shadowRoot?.querySelector('.bitlens-root > *'));
  if (wait) await page.waitForSelector('#view #tensor-table tbody tr');
  return page;
}

/** Sets the element's attributes and waits for the view asked for. */
async function show(page, attrs, selector) {
  await page.evaluate((attrs) => {
    const view = document.getElementById('view');
    for (const [k, v] of Object.entries(attrs)) view.setAttribute(k, v);
  }, attrs);
  await page.waitForSelector(`#view ${selector}`);
  await page.waitForTimeout(200);
}

/** Waits for the whole model's statistics (a settled view: its charts and numbers all there). */
async function settled(page) {
  for (let i = 0; i < 1200; i++) {
    const done = await page.evaluate(async () => {
      const view = document.getElementById('view');
      const r = await view.inspect();
      const all = r.files.length > 0 && r.files[0].tensors.every((t) => t.byte_entropy !== undefined);
      return all && !view.shadowRoot.querySelector('.pending');
    });
    if (done) {
      await page.waitForTimeout(300);
      return;
    }
    await page.waitForTimeout(100);
  }
  throw new Error('the statistics never arrived');
}

/**
 * The visible text boxes inside the element's shadow root that intersect, as "a | b" pairs: each
 * text node's line boxes (`Range.getClientRects`), clipped by every scrolling or clipping box
 * around it, compared with every other element's. SVG text is left out: charts lay out their
 * labels in the view box's units, which scale with the chart, not with the font.
 */
function overlaps(page) {
  return page.evaluate(() => {
    const root = document.getElementById('view').shadowRoot;
    const clip = (r, el) => {
      let box = { l: r.left, t: r.top, r: r.right, b: r.bottom };
      for (let e = el; e; e = e.parentElement ?? e.getRootNode().host) {
        const cs = getComputedStyle(e);
        if (cs.overflowX !== 'visible' || cs.overflowY !== 'visible') {
          const c = e.getBoundingClientRect();
          box = { l: Math.max(box.l, c.left), t: Math.max(box.t, c.top), r: Math.min(box.r, c.right), b: Math.min(box.b, c.bottom) };
        }
      }
      return box.r - box.l > 0.5 && box.b - box.t > 0.5 ? box : null;
    };
    const boxes = [];
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const el = n.parentElement;
      if (!n.data.trim() || el.closest('svg, option, select, style')) continue;
      const cs = getComputedStyle(el);
      if (cs.visibility !== 'visible' || Number(cs.opacity) === 0) continue;
      const range = document.createRange();
      range.selectNodeContents(n);
      for (const r of range.getClientRects()) {
        const b = clip(r, el);
        if (b) boxes.push({ el, b, text: n.data.trim().slice(0, 40) });
      }
    }
    const hits = [];
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const [p, q] = [boxes[i], boxes[j]];
        if (p.el === q.el) continue;
        const w = Math.min(p.b.r, q.b.r) - Math.max(p.b.l, q.b.l);
        const h = Math.min(p.b.b, q.b.b) - Math.max(p.b.t, q.b.t);
        if (w > 1 && h > 1) hits.push(`${p.text} | ${q.text}`);
      }
    }
    return { boxes: boxes.length, hits };
  });
}

/** The computed style of the first element inside the view matching each selector. */
function styles(page, selectors, props) {
  return page.evaluate(([selectors, props]) => {
    const root = document.getElementById('view').shadowRoot;
    const out = {};
    for (const sel of selectors) {
      const el = root.querySelector(sel);
      if (!el) continue;
      const cs = getComputedStyle(el);
      out[sel] = Object.fromEntries(props.map((p) => [p, cs.getPropertyValue(p)]));
    }
    return out;
  }, [selectors, props]);
}

/**
 * The lowest contrast of a visible text inside the view against the background it is drawn on
 * (the nearest opaque background around it; SVG text by its fill), with that text.
 */
function lowestContrast(page) {
  return page.evaluate(() => {
    const root = document.getElementById('view').shadowRoot;
    const rgba = (c) => {
      const m = /rgba?\(([^)]+)\)/.exec(c);
      if (!m) return null;
      const [r, g, b, a = 1] = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
      return { r, g, b, a };
    };
    const lum = ({ r, g, b }) => {
      const f = (v) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const background = (el) => {
      for (let e = el; e; e = e.parentElement ?? e.getRootNode().host) {
        const c = rgba(getComputedStyle(e).backgroundColor);
        if (c && c.a > 0.5) return c;
      }
      return { r: 255, g: 255, b: 255 };
    };
    let worst = { ratio: Infinity, text: '' };
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const el = n.parentElement;
      if (!n.data.trim() || el.closest('option, select, style, button:disabled')) continue;
      if (el.getClientRects().length === 0) continue;
      const cs = getComputedStyle(el);
      const fg = rgba(el.closest('svg') ? cs.fill : cs.color);
      if (!fg) continue;
      const [a, b] = [lum(fg), lum(background(el))];
      const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
      if (ratio < worst.ratio) worst = { ratio, text: `${n.data.trim().slice(0, 40)} (${cs.color} / ${cs.fill})` };
    }
    return worst;
  });
}

test('hostile host CSS changes nothing inside the element; the documented custom properties do', async () => {
  const plain = await openHost('');
  await settled(plain);
  const probeSel = ['.bitlens-root', '.app', '.tab', '.tab.current', 'th', 'td.name', '.progress-text', '#tensor-filter'];
  const props = ['font-family', 'font-size', 'font-style', 'font-weight', 'color', 'line-height', 'letter-spacing',
    'word-spacing', 'text-transform', 'text-indent', 'text-align', 'direction', 'white-space', 'cursor',
    'font-variant-caps', 'text-shadow', 'list-style-type'];
  const own = await styles(plain, probeSel, props);
  assert.equal(own['.bitlens-root']['font-size'], '14px', 'the element default font size');
  assert.equal(own['.tab']['font-size'], '14px');
  await plain.close();

  const page = await openHost(HOSTILE);
  await settled(page);
  // The page's rules reach its own elements (the rule is on), and the element itself (it is `*`).
  const hostText = await page.evaluate(() => getComputedStyle(document.querySelector('h1')).fontSize);
  assert.equal(hostText, '31px');
  assert.equal(await page.evaluate(() => getComputedStyle(document.getElementById('view')).color), 'rgb(255, 0, 0)');
  // Nothing of it inside.
  assert.deepEqual(await styles(page, probeSel, props), own);
  const { boxes, hits } = await overlaps(page);
  assert.ok(boxes > 20, `only ${boxes} text boxes found`);
  assert.deepEqual(hits, []);
  // The screenshot without `direction: rtl`: headless Chromium captures an RTL page that is wider
  // than its viewport (this one: its `white-space: pre` text) as a blank image.
  await page.evaluate(() => {
    const css = document.getElementById('test-css');
    css.textContent = css.textContent.replace('direction: rtl !important;', '');
  });
  await page.locator('#view').screenshot({ path: path.join(SHOTS, 'embed-style-hostile.png') });

  // What the host sets on purpose.
  await page.evaluate(() => {
    const v = document.getElementById('view');
    v.style.setProperty('--bitlens-font-size', '18px');
    v.style.setProperty('--bitlens-font', 'Georgia, serif');
    v.style.setProperty('--bitlens-foreground', 'rgb(20, 30, 90)');
    v.style.setProperty('--bitlens-background', 'rgb(250, 240, 220)');
    v.style.setProperty('--bitlens-accent', 'rgb(160, 20, 90)');
  });
  await page.waitForTimeout(200);
  const set = await styles(page, ['.bitlens-root', '.app', '.tab'], ['font-size', 'font-family', 'color', 'background-color']);
  assert.equal(set['.bitlens-root']['font-size'], '18px');
  assert.equal(set['.tab']['font-size'], '18px');
  assert.match(set['.bitlens-root']['font-family'], /Georgia/);
  assert.equal(set['.app'].color, 'rgb(20, 30, 90)');
  assert.equal(set['.app']['background-color'], 'rgb(250, 240, 220)');
  await show(page, { view: 'detail', tensor: 'embeddings.word_embeddings.weight' }, '.chart');
  const accent = await styles(page, ['.chart .hover'], ['color']);
  assert.equal(accent['.chart .hover'].color, 'rgb(160, 20, 90)');
  // The regions a page may style on purpose, by their part names.
  await page.addStyleTag({ content: `bitlens-view::part(tabs) { border-bottom-color: rgb(1, 2, 3); }
    bitlens-view::part(panel) { border-left-color: rgb(4, 5, 6); } bitlens-view::part(status) { outline: 1px solid rgb(7, 8, 9); }
    bitlens-view::part(chart) { border-top: 1px solid rgb(10, 11, 12); }` });
  const parts = await styles(page, ['.tabs', '.panel', '.progress', '.chart'], ['border-bottom-color', 'border-left-color', 'outline-color', 'border-top-color']);
  assert.equal(parts['.tabs']['border-bottom-color'], 'rgb(1, 2, 3)');
  assert.equal(parts['.panel']['border-left-color'], 'rgb(4, 5, 6)');
  assert.equal(parts['.progress']['outline-color'], 'rgb(7, 8, 9)');
  assert.equal(parts['.chart']['border-top-color'], 'rgb(10, 11, 12)');
  assert.deepEqual((await overlaps(page)).hits, []);
  await page.close();
});

test('nothing overlaps from 12 to 32 px, at 360 / 768 / 1280 px wide, on a realistic dark serif host page', async () => {
  const page = await openHost(REALISTIC, { theme: 'dark' });
  await settled(page);
  const views = [
    ['table', '#tensor-table'],
    ['summary', '.summary'],
    ['detail', '.detail .chart'],
    ['codecs', '.codecs'],
  ];
  for (const width of [360, 768, 1280]) {
    await page.setViewportSize({ width, height: 900 });
    for (const size of ['12px', '14px', '32px']) {
      await page.evaluate((size) => document.getElementById('view').style.setProperty('--bitlens-font-size', size), size);
      for (const [view, sel] of views) {
        await show(page, { view }, sel);
        const { boxes, hits } = await overlaps(page);
        assert.ok(boxes > 3, `${view} at ${width} px, ${size}: ${boxes} text boxes`);
        assert.deepEqual(hits, [], `${view} at ${width} px wide, font ${size}`);
        if (size === '14px' && (view === 'table' || view === 'detail')) {
          await page.locator('#view').screenshot({ path: path.join(SHOTS, `embed-style-${view}-${width}.png`) });
        }
      }
    }
  }
  await page.close();
});

test('a narrow element: tabs wrap, the table scrolls sideways keeping the names, long names end in … with the whole name in the title', async () => {
  const page = await openHost('', { view: 'table' }, { width: 360 });
  const layout = await page.evaluate(async () => {
    const root = document.getElementById('view').shadowRoot;
    const scroll = root.querySelector('.table-scroll');
    const tabs = [...root.querySelectorAll('.tab')].map((t) => t.getBoundingClientRect());
    const tabsBox = root.querySelector('.tabs').getBoundingClientRect();
    const cell = [...root.querySelectorAll('#tensor-table td.name')].find((td) => td.scrollWidth > td.clientWidth);
    scroll.scrollLeft = 400;
    await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    const name = root.querySelector('#tensor-table tbody td.name').getBoundingClientRect();
    const box = scroll.getBoundingClientRect();
    return {
      tabsInside: tabs.every((t) => t.right <= tabsBox.right + 0.5 && t.left >= tabsBox.left - 0.5),
      tabRows: new Set(tabs.map((t) => Math.round(t.top))).size,
      scrolls: scroll.scrollWidth > scroll.clientWidth,
      scrolled: scroll.scrollLeft,
      nameLeft: name.left - box.left,
      cut: cell ? { title: cell.title, text: cell.textContent, overflow: getComputedStyle(cell).textOverflow } : null,
    };
  });
  assert.ok(layout.tabsInside, 'every tab inside the element');
  assert.ok(layout.tabRows >= 2, 'the tabs wrap onto a second row');
  assert.ok(layout.scrolls && layout.scrolled > 0, 'the table scrolls sideways');
  assert.ok(Math.abs(layout.nameLeft) <= 2, `the name column stays at the left edge (${layout.nameLeft} px)`);
  assert.ok(layout.cut, 'some name is cut at this width');
  assert.equal(layout.cut.overflow, 'ellipsis');
  assert.equal(layout.cut.title, layout.cut.text);
  // Detail shows the whole name.
  await show(page, { view: 'detail', tensor: layout.cut.text }, '#detail-name');
  const detail = await page.evaluate(() => {
    const h = document.getElementById('view').shadowRoot.getElementById('detail-name');
    return { text: h.textContent, fits: h.scrollWidth <= h.clientWidth + 1 };
  });
  assert.equal(detail.text, layout.cut.text);
  assert.ok(detail.fits, 'the whole name wraps inside the detail');
  await page.close();
});

test('theme: dark has light text on dark backgrounds, auto follows the system, and every text has contrast >= 4.5', async () => {
  const page = await openHost('', { view: 'detail', tensor: 'embeddings.word_embeddings.weight' }, { wait: false });
  await page.waitForSelector('#view .detail .chart');
  await settled(page);
  const lum = (c) => {
    const [r, g, b] = /rgba?\(([^)]+)\)/.exec(c)[1].split(/[ ,]+/).map(Number);
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
  };
  const look = () => styles(page, ['.app', '.panel', '.tab.current', '.chart svg text'], ['color', 'background-color', 'fill']);
  const light = await look();
  assert.ok(lum(light['.app'].color) < 0.3 && lum(light['.panel']['background-color']) > 0.9, JSON.stringify(light));
  const checks = {};
  for (const theme of ['light', 'dark']) {
    await show(page, { theme }, `.bitlens-root[data-theme=${theme}]`);
    for (const [view, sel] of [['detail', '.detail .chart'], ['table', '#tensor-table'], ['summary', '.summary']]) {
      await show(page, { view }, sel);
      checks[`${theme} ${view}`] = await lowestContrast(page);
    }
    await page.locator('#view').screenshot({ path: path.join(SHOTS, `embed-style-theme-${theme}.png`) });
  }
  for (const [what, c] of Object.entries(checks)) assert.ok(c.ratio >= 4.5, `${what}: ${c.ratio.toFixed(2)} for ${c.text}`);
  await show(page, { theme: 'dark', view: 'detail' }, '.detail .chart');
  const dark = await look();
  assert.ok(lum(dark['.app'].color) > 0.8, `dark text colour ${dark['.app'].color}`);
  assert.ok(lum(dark['.app']['background-color']) < 0.15 && lum(dark['.panel']['background-color']) < 0.15, JSON.stringify(dark));
  assert.ok(lum(dark['.chart svg text'].fill) > 0.6, `chart text ${dark['.chart svg text'].fill}`);
  // auto: the system's theme.
  await show(page, { theme: 'auto' }, '.bitlens-root[data-theme=auto]');
  await page.emulateMedia({ colorScheme: 'dark' });
  assert.ok(lum((await look())['.panel']['background-color']) < 0.15, 'auto follows a dark system');
  await page.emulateMedia({ colorScheme: 'light' });
  assert.ok(lum((await look())['.panel']['background-color']) > 0.9, 'auto follows a light system');
  await page.close();
});

test('the app page follows the system theme', async () => {
  const page = await s.context.newPage();
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.goto(`http://127.0.0.1:${s.app.address().port}/`);
  await page.waitForSelector('.app .top');
  const look = await page.evaluate(() => {
    const cs = (sel) => getComputedStyle(document.querySelector(sel));
    return { fg: cs('.app').color, bg: cs('.app').backgroundColor, tagline: cs('.tagline').color, title: document.title };
  });
  assert.equal(look.bg, 'rgb(20, 24, 29)');
  assert.equal(look.fg, 'rgb(227, 231, 236)');
  assert.match(look.title, /model checkpoints/);
  const tagline = await page.textContent('.tagline');
  assert.match(tagline, /GGUF/);
  assert.match(tagline, /PyTorch/);
  await page.screenshot({ path: path.join(SHOTS, 'app-dark.png') });
  await page.close();
});

/** Polls `inspect()` until tensor `name` has its statistics; returns that tensor's entry. */
async function tensorStats(page, name) {
  for (let i = 0; i < 1200; i++) {
    const t = await page.evaluate(async (name) => {
      const r = await document.getElementById('view').inspect();
      return r.files[0]?.tensors.find((t) => t.name === name && t.byte_entropy !== undefined) ?? null;
    }, name);
    if (t) return t;
    await page.waitForTimeout(100);
  }
  throw new Error(`no statistics for ${name}`);
}

/** Waits for a `bitlens-error` the host page logged; returns its detail. */
async function errorEvent(page) {
  await page.waitForFunction(() => window.bitlensEvents.some((e) => e.type === 'bitlens-error'), null, { timeout: 60_000 });
  return page.evaluate(() => window.bitlensEvents.find((e) => e.type === 'bitlens-error').detail);
}

test('a connection dropped mid-body is retried, then reported as such with the URL, and Retry works once the server recovers', async () => {
  const dir = tempDir();
  fs.symlinkSync(path.join(WEIGHTS, SMALL), path.join(dir, SMALL));
  const data = await startRangeServer(dir, { drop: 2 });
  const url = `${data.url}${SMALL}`;
  try {
    // Two dropped answers per request path: the retries get through.
    let page = await openHost('', { 'auto-stats': '0' }, { data });
    const dropped = data.requests.filter((r) => r.path === `/${SMALL}` && r.dropped).length;
    assert.equal(dropped, 2, 'the first two answers were cut');
    // The statistics workers' windows too: the first two cut mid-body, retried, and the tensor's
    // statistics are the CLI's.
    data.reset();
    data.faults.drop = 2;
    const name = 'embeddings.word_embeddings.weight';
    await page.evaluate((name) => document.getElementById('view').setAttribute('tensor', name), name);
    const got = await tensorStats(page, name);
    const want = inspect(path.join(WEIGHTS, SMALL)).files[0].tensors.find((t) => t.name === name);
    assert.deepEqual(got, want);
    assert.equal(data.requests.filter((r) => r.dropped).length, 2, 'two windows were cut');
    assert.deepEqual(await page.evaluate(() => window.bitlensEvents.filter((e) => e.type === 'bitlens-error')), []);
    data.faults.drop = 0;
    await page.close();

    // Always cut: an error that names the URL and says the connection broke, after three tries.
    data.reset();
    data.faults.drop = 1000;
    page = await openHost('', {}, { data, wait: false });
    const e = await errorEvent(page);
    assert.equal(e.url, url);
    assert.match(e.message, /connection broke/);
    assert.match(e.message, /after the server had answered/);
    assert.match(e.message, /after 3 tries/);
    assert.doesNotMatch(e.message, /CORS headers/);
    assert.equal(data.requests.filter((r) => r.dropped).length, 3);
    const line = await page.locator('#view .error').textContent();
    assert.ok(line.includes(url), `the error line names the URL: ${line}`);
    await page.locator('#view').screenshot({ path: path.join(SHOTS, 'embed-style-dropped.png') });
    // The server recovers: Retry loads the file.
    data.faults.drop = 0;
    await page.locator('#view .error .retry').click();
    await page.waitForSelector('#view #tensor-table tbody tr');
    assert.equal(await page.locator('#view .error').count(), 0);
    await page.close();

    // No answer at all: a network failure or a refusal by CORS, and the page says it cannot tell.
    data.reset();
    data.faults.dropHead = 1000;
    page = await openHost('', {}, { data, wait: false });
    const none = await errorEvent(page);
    assert.equal(none.url, url);
    assert.match(none.message, /network failure/);
    assert.match(none.message, /CORS/);
    assert.match(none.message, /does not say which/);
    assert.match(none.message, /after 3 tries/);
    await page.locator('#view').screenshot({ path: path.join(SHOTS, 'embed-style-no-answer.png') });
    data.faults.dropHead = 0;
    await page.locator('#view .error .retry').click();
    await page.waitForSelector('#view #tensor-table tbody tr');
    await page.close();
  } finally {
    data.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
