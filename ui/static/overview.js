// Overview: the fleet now (cards) and over the last hour (charts from
// GET /stats/history, one sample every 10 s, kept by the hub).
import { api, h, badge, fill } from './lib.js';
import { lineChart } from './charts.js';

export async function render(main) {
  const cards = h('div', { class: 'cards', 'data-testid': 'cards' });
  const charts = h('div', { class: 'charts' });
  const reasons = h('div');
  fill(main, h('h1', {}, 'Overview'), cards, charts, h('h2', {}, 'Failures by reason (last hour)'), reasons);
  async function refresh() {
    const [hist, ws, hs] = await Promise.all([
      api('/stats/history?workers=0').catch(() => ({ samples: [], interval_s: 10 })),
      api('/workers'), api('/hubs'),
    ]);
    const sm = hist.samples || [];
    const last = sm[sm.length - 1] || {};
    const perMin = 60 / (hist.interval_s || 10);
    const recent = sm.slice(-Math.round(perMin));
    const finishedLastMin = recent.reduce((a, s) => a + s.succeeded + s.failed + s.canceled, 0);
    const alive = ws.workers.filter((w) => w.alive);
    const lanes = alive.reduce((a, w) => a + (w.lanes || []).length, 0);
    const busy = last.lanes_busy ?? alive.reduce((a, w) => a + w.in_flight, 0);
    const card = (label, value, extra) => h('div', { class: 'card', 'data-testid': 'card-' + label.replace(/\W+/g, '-').toLowerCase() },
      h('div', { class: 'label' }, label), h('div', { class: 'big' }, String(value)), extra ? h('div', { class: 'label' }, extra) : null);
    fill(cards, 
      card('Queue depth', last.queued ?? '–'),
      card('Running', last.running ?? '–'),
      card('Finished / min', finishedLastMin, 'over the last minute'),
      card('Lanes busy / free', `${busy} / ${last.lanes_free ?? '–'}`, `${lanes} lanes on ${alive.length} alive workers`),
      card('Workers', `${alive.length} / ${ws.workers.length}`, 'alive / known'),
      card('Hubs', `${hs.hubs.filter((x) => x.alive).length} / ${hs.hubs.length}`, 'alive / listed'),
    );
    const t = sm.map((s) => Date.parse(s.t));
    const col = (k) => sm.map((s) => s[k] || 0);
    fill(charts, 
      lineChart('Queue depth', t, [{ name: 'queued', color: '#a16207', values: col('queued') }]),
      lineChart('Running', t, [{ name: 'running', color: '#1d4ed8', values: col('running') }]),
      lineChart('Finished per minute', t, [
        { name: 'succeeded', color: '#15803d', values: sm.map((s) => s.succeeded * perMin) },
        { name: 'failed', color: '#b91c1c', values: sm.map((s) => s.failed * perMin) },
        { name: 'canceled', color: '#6b7280', values: sm.map((s) => s.canceled * perMin) }]),
      lineChart('Lanes', t, [
        { name: 'busy', color: '#1d4ed8', values: col('lanes_busy') },
        { name: 'free', color: '#15803d', values: col('lanes_free') }]),
    );
    const byReason = {};
    for (const s of sm) for (const [r, n] of Object.entries(s.failed_by_reason || {})) byReason[r] = (byReason[r] || 0) + n;
    const rows = Object.entries(byReason).sort((a, b) => b[1] - a[1]);
    fill(reasons, rows.length
      ? h('table', {}, h('tr', {}, h('th', {}, 'reason'), h('th', { class: 'num' }, 'jobs'), h('th', {}, '')),
        rows.map(([r, n]) => h('tr', {}, h('td', {}, badge(r, 'failed')), h('td', { class: 'num' }, n),
          h('td', {}, h('a', { href: `#/jobs?status=failed&reason=${encodeURIComponent(r)}` }, 'see jobs')))))
      : h('p', { class: 'muted' }, sm.length ? 'No failures in the last hour.' : 'No samples yet (the hub samples every 10 s).'));
  }
  await refresh();
  return { refresh, interval: 5000 };
}
