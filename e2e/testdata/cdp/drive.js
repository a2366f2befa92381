// Drives a Paprika session's lane through a hub with a real CDP client, as
// a user's script would: load a page, type, click, read text, take a
// screenshot, read a cookie. Run by e2e/cdp_clients_test.go:
//
//   node drive.js puppeteer  <browserWSEndpoint> <pageURL>
//   node drive.js playwright <endpointURL>       <pageURL>
//
// With PAPRIKA_INTERCEPT=1 the Puppeteer client intercepts its page's
// requests itself (page.setRequestInterception: its own Fetch domain,
// auth challenges included) and continues each; "intercepted" counts them.
//
// Prints one JSON line with what it saw; exits 1 on any failure.
'use strict';

async function withPuppeteer(endpoint, pageURL) {
  const puppeteer = require('puppeteer-core');
  const browser = await puppeteer.connect({ browserWSEndpoint: endpoint, protocolTimeout: 30000 });
  try {
    const version = await browser.version();
    const page = await browser.newPage();
    let intercepted = 0;
    if (process.env.PAPRIKA_INTERCEPT === '1') {
      await page.setRequestInterception(true);
      page.on('request', (req) => { intercepted++; req.continue(); });
    }
    const res = await page.goto(pageURL);
    if (!res.ok()) throw new Error(`${pageURL}: HTTP ${res.status()}`);
    await page.type('#name', 'paprika');
    await page.click('#go');
    await page.waitForFunction(() => document.querySelector('#out').textContent !== '');
    const text = await page.$eval('#out', (e) => e.textContent);
    const png = Buffer.from(await page.screenshot({ type: 'png' }));
    const cookies = await browser.cookies();
    await page.close();
    return { version, text, png: png.subarray(0, 8).toString('hex'), pngBytes: png.length, cookies, intercepted };
  } finally {
    await browser.disconnect();
  }
}

async function withPlaywright(endpoint, pageURL) {
  const { chromium } = require('playwright-core');
  const browser = await chromium.connectOverCDP(endpoint, { timeout: 30000 });
  try {
    const version = browser.version();
    const context = browser.contexts()[0];
    const page = await context.newPage();
    await page.goto(pageURL);
    await page.locator('#name').pressSequentially('paprika');
    await page.locator('#go').click();
    await page.waitForFunction(() => document.querySelector('#out').textContent !== '');
    const text = await page.locator('#out').textContent();
    const png = await page.screenshot({ type: 'png' });
    const cookies = await context.cookies(pageURL);
    await page.close();
    return { version, text, png: png.subarray(0, 8).toString('hex'), pngBytes: png.length, cookies };
  } finally {
    await browser.close();
  }
}

async function main() {
  const [client, endpoint, pageURL] = process.argv.slice(2);
  const run = { puppeteer: withPuppeteer, playwright: withPlaywright }[client];
  if (!run || !endpoint || !pageURL) {
    throw new Error('usage: node drive.js puppeteer|playwright <endpoint> <pageURL>');
  }
  const out = await run(endpoint, pageURL);
  out.cookies = out.cookies.map((c) => ({ name: c.name, value: c.value }));
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().then(() => process.exit(0), (err) => {
  process.stderr.write(String(err && err.stack || err) + '\n');
  process.exit(1);
});
