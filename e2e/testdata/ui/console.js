// Browser checks of the operator console (e2e/ui_test.go runs one
// scenario per process): node console.js <scenario> <hubURL> [args...].
// Env: PAPRIKA_UI_SHOTS (screenshot folder), PAPRIKA_UI_TOKEN (API token
// the scenario types or sends), PAPRIKA_UI_LOADS (timing: loads per page).
// Prints one JSON line {"ok":true,...} on success; exits 1 with the
// reason otherwise. Playwright comes from ../cdp/node_modules (pinned,
// scripts/cdp-clients.sh); the browser is Debian's Chromium.
'use strict';
const path = require('path');
const fs = require('fs');
const readline = require('readline');
const { chromium } = require(path.join(__dirname, '..', 'cdp', 'node_modules', 'playwright-core'));

const [scenario, hub, ...args] = process.argv.slice(2);
const shots = process.env.PAPRIKA_UI_SHOTS || path.join(__dirname, '..', '..', 'artifacts', 'ui');
const token = process.env.PAPRIKA_UI_TOKEN || '';

function fail(msg) { throw new Error(msg); }

async function apiCall(method, p, body) {
  const headers = { 'Content-Type': 'application/json' };
  if (token) headers.Authorization = 'Bearer ' + token;
  const r = await fetch(hub + p, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  if (!r.ok) fail(`${method} ${p}: ${r.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

async function shot(page, name) {
  fs.mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });
}

// openPage logs in once through sessionStorage when a token is set, the
// way an operator's tab keeps it after the prompt.
let lastPage = null; // screenshot on failure

async function openPage(browser, hash) {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  if (token && scenario !== 'token') await ctx.addInitScript((t) => sessionStorage.setItem('paprika.token', t), token);
  const page = await ctx.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error' && !/WebSocket|404|Failed to load resource/.test(m.text())) errors.push(m.text()); });
  page.errors = errors;
  lastPage = page;
  await page.goto(hub + '/ui/' + hash);
  return page;
}

function line() {
  return new Promise((resolve) => {
    const rl = readline.createInterface({ input: process.stdin });
    rl.once('line', (l) => { rl.close(); process.stdin.destroy(); resolve(l); });
  });
}

const scenarios = {
  // Jobs submitted through the API appear in the Jobs table, and the
  // status filter keeps only its own.
  async jobs(browser) {
    const page = await openPage(browser, '#/jobs');
    await page.waitForSelector('main[data-ready="jobs"]');
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await apiCall('POST', '/jobs', { mode: 'noop', params: { lines: 1 }, labels: { suite: 'ui' } })).id);
    for (const id of ids) await page.waitForSelector(`tr[data-job="${id}"]`, { timeout: 15000 });
    await shot(page, 'jobs');
    await page.click(`tr[data-job="${ids[0]}"] a`);
    await page.waitForSelector('main[data-ready="jobs"] [data-testid="timeline"]');
    if (!(await page.textContent('h1')).includes(ids[0])) fail('the row link did not open the job page');
    await page.goto(hub + '/ui/#/jobs?status=queued');
    await page.waitForSelector('main[data-ready="jobs"]');
    const statuses = await page.$$eval('tr[data-job] td:nth-child(3)', (tds) => tds.map((t) => t.textContent));
    if (statuses.some((s) => s !== 'queued')) fail('status filter shows ' + statuses.join(','));
    if (page.errors.length) fail('page errors: ' + page.errors.join('; '));
    return { ids };
  },

  // A job page shows its log lines as they are written (SSE), before the
  // job ends, then the result.
  async log(browser) {
    const j = await apiCall('POST', '/jobs', { mode: 'noop', params: { lines: 12, interval_ms: 400 } });
    const page = await openPage(browser, '#/jobs/' + j.id);
    await page.waitForSelector('[data-testid="log"]');
    const count = () => page.$eval('[data-testid="log"]', (el) => el.textContent.split('\n').filter((l) => l && !l.startsWith('──')).length);
    const seen = [];
    const deadline = Date.now() + 30000;
    while (Date.now() < deadline) {
      const n = await count();
      if (!seen.length || seen[seen.length - 1] !== n) seen.push(n);
      if (n >= 12) break;
      await page.waitForTimeout(150);
    }
    const growing = seen.filter((n) => n > 0 && n < 12).length;
    if (growing < 2) fail(`log lines did not arrive one by one: counts seen ${seen.join(',')}`);
    await page.waitForFunction(() => document.querySelector('h1 .badge')?.textContent === 'succeeded', null, { timeout: 20000 });
    await page.waitForSelector('[data-testid="result"]');
    await shot(page, 'job-log');
    // Run again: a new job of the same request (POST /jobs/{id}/retry
    // where the hub has it), whose page opens.
    await page.click('[data-testid="run-again"]');
    // A new job (its page opens), or, with a hub whose retry runs the
    // same job again, this one back in the queue.
    await page.waitForFunction((id) => !location.hash.endsWith(id) || document.querySelector('h1 .badge')?.textContent !== 'succeeded', j.id, { timeout: 15000 });
    const again = decodeURIComponent(await page.evaluate(() => location.hash.split('/').pop()));
    const aj = await apiCall('GET', '/jobs/' + again);
    if (aj.mode !== 'noop' || aj.params.lines !== 12) fail('run again submitted ' + JSON.stringify(aj));
    if (again === j.id && aj.status === 'succeeded' && aj.attempts < 2) fail('run again did not run the job again');
    if (page.errors.length) fail('page errors: ' + page.errors.join('; '));
    return { counts: seen, job: j.id, again };
  },

  // The live view of a running chromium job shows frames that change.
  async live(browser, jobId) {
    const page = await openPage(browser, '#/jobs/' + jobId);
    await page.waitForSelector('[data-testid="live-frame"]', { timeout: 20000 });
    const srcs = new Set();
    const deadline = Date.now() + 30000;
    while (Date.now() < deadline && srcs.size < 3) {
      const src = await page.$eval('[data-testid="live-frame"]', (i) => i.getAttribute('src') || '');
      if (src.startsWith('data:image/')) srcs.add(src);
      await page.waitForTimeout(200);
    }
    await shot(page, 'job-live');
    if (srcs.size < 2) fail(`live view showed ${srcs.size} distinct frames; state: ${await page.textContent('[data-testid="live-state"]')}`);
    return { frames: srcs.size };
  },

  // A session in the list, its page, and (when the hub has the live
  // relay: live === '1') its live view taking control: a click on the
  // frame reaches the page's button. Then "Close session" closes it.
  async session(browser, sessionId, live) {
    const page = await openPage(browser, '#/sessions');
    page.on('dialog', (d) => d.accept());
    await page.waitForSelector(`tr[data-session="${sessionId}"]`, { timeout: 15000 });
    await shot(page, 'sessions');
    await page.click(`tr[data-session="${sessionId}"] a`);
    await page.waitForSelector('main[data-ready="sessions"] h1');
    let clicked = false;
    if (live === '1') {
      await page.waitForFunction(() => Number(document.querySelector('[data-testid="live-frame"]')?.dataset.frames || 0) >= 1, null, { timeout: 30000 });
      await page.click('text=Take control');
      await page.waitForFunction(() => document.querySelector('[data-testid="live-frame"]').classList.contains('control'));
      await page.waitForTimeout(500); // the control socket replaces the view-only one
      // The button fills the lane's page: a click anywhere on the frame hits it.
      const img = await page.$('[data-testid="live-frame"]');
      const deadline = Date.now() + 20000;
      while (Date.now() < deadline && !clicked) {
        await img.click({ position: { x: 40, y: 40 } });
        await page.waitForTimeout(700);
        const r = await apiCall('POST', `/sessions/${sessionId}/commands`, { op: 'text', selector: '#b' });
        clicked = JSON.stringify(r.result).includes('clicked');
      }
      await shot(page, 'session-live');
      if (!clicked) fail('a click in control mode did not reach the lane');
    }
    await page.click('text=Close session');
    await page.waitForFunction(() => location.hash === '#/sessions', null, { timeout: 15000 });
    return { clicked };
  },

  // Drain pressed on the Workers page.
  async drain(browser, workerId) {
    const page = await openPage(browser, '#/workers');
    const btn = `tr[data-worker="${workerId}"] button[data-action="drain"]`;
    await page.waitForSelector(btn, { timeout: 15000 });
    await page.waitForSelector(`tr[data-worker="${workerId}"] svg.spark`);
    await page.click(btn);
    await page.waitForFunction((id) => document.querySelector(`tr[data-worker="${id}"] [data-testid="worker-status"]`)?.textContent === 'drain', workerId, { timeout: 15000 });
    await shot(page, 'workers');
    return { worker: workerId };
  },

  // A hub shown alive turns dead after the test kills it (stdin "go").
  async hubdead(browser, hubId) {
    const page = await openPage(browser, '#/hubs');
    const cell = `tr[data-hub="${hubId}"] [data-testid="hub-state"]`;
    await page.waitForFunction((c) => document.querySelector(c)?.textContent === 'alive', cell, { timeout: 20000 });
    await shot(page, 'hubs-alive');
    console.log('ready');
    await line();
    await page.waitForFunction((c) => document.querySelector(c)?.textContent === 'dead', cell, { timeout: 60000 });
    if (!(await page.$eval(`tr[data-hub="${hubId}"]`, (tr) => tr.classList.contains('dead')))) fail('dead hub row is not highlighted');
    await shot(page, 'hubs-dead');
    return { hub: hubId };
  },

  // A hub with an API token: the console asks once, then keeps it for
  // the tab (a reload does not ask again).
  async token(browser) {
    const page = await openPage(browser, '#/overview');
    await page.waitForSelector('#tokenbox:not([hidden])', { timeout: 15000 });
    await shot(page, 'token-prompt');
    await page.fill('#tokeninput', 'wrong-token');
    await page.click('#tokenok');
    await page.waitForFunction(() => document.getElementById('tokenerr').textContent.includes('refused'), null, { timeout: 15000 });
    await page.fill('#tokeninput', token);
    await page.click('#tokenok');
    await page.waitForSelector('main[data-ready="overview"]', { timeout: 15000 });
    await page.reload();
    await page.waitForSelector('main[data-ready="overview"]', { timeout: 15000 });
    if (await page.isVisible('#tokenbox')) fail('the token was asked again after a reload');
    await shot(page, 'overview');
    return {};
  },

  // First render of Overview and Jobs, median of PAPRIKA_UI_LOADS loads.
  async timing(browser) {
    const loads = Number(process.env.PAPRIKA_UI_LOADS || 7);
    const out = {};
    for (const [name, hash, sel] of [['overview', '#/overview', '[data-testid="card-queue-depth"]'], ['jobs', '#/jobs', '[data-testid="jobs-table"] tr']]) {
      const ms = [];
      const page = await openPage(browser, '#/hubs');
      await page.waitForSelector('main[data-ready="hubs"]');
      for (let i = 0; i < loads; i++) {
        await page.goto('about:blank');
        const t0 = Date.now(); // a fresh document each load, same tab
        await page.goto(hub + '/ui/' + hash);
        await page.waitForSelector(`main[data-ready="${name}"] ${sel}`);
        ms.push(Date.now() - t0);
      }
      ms.sort((a, b) => a - b);
      out[name] = { median_ms: ms[Math.floor(ms.length / 2)], all_ms: ms };
      await page.context().close();
    }
    return out;
  },
};

(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.PAPRIKA_CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
  });
  try {
    const fn = scenarios[scenario];
    if (!fn) fail('unknown scenario ' + scenario);
    const res = await fn(browser, ...args);
    console.log(JSON.stringify({ ok: true, ...res }));
  } catch (e) {
    if (lastPage) await shot(lastPage, `failed-${scenario}`).catch(() => {});
    if (lastPage && lastPage.errors.length) console.error('page errors: ' + lastPage.errors.join('; '));
    throw e;
  } finally {
    await browser.close();
  }
})().then(() => process.exit(0)).catch((e) => { console.error(e && e.stack || String(e)); process.exit(1); });
