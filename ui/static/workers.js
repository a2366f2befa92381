// Workers: each with its lanes and what each runs (job or session, since
// when), CPU/memory/disk with sparklines of recent heartbeats (the hub's
// ring, GET /stats/history), and drain / standby / activate.
import { api, h, badge, when, pct, ago, laneIndex, flash, fill } from './lib.js';
import { sparkline } from './charts.js';

export async function render(main) {
  const table = h('table', { 'data-testid': 'workers-table' });
  fill(main, h('h1', {}, 'Workers'), table);

  async function refresh() {
    const [ws, running, sess, hist] = await Promise.all([
      api('/workers'),
      api('/jobs?status=running&limit=1000').catch(() => ({ jobs: [] })),
      api('/sessions?limit=1000').catch(() => api('/sessions').catch(() => ({ sessions: [] }))),
      api('/stats/history').catch(() => ({ workers: {} })),
    ]);
    // What runs on each lane: running jobs and open sessions name their
    // worker and lane.
    const onLane = new Map();
    for (const j of running.jobs || []) onLane.set(`${j.worker_id}/${laneIndex(j.lane)}`, { kind: 'job', id: j.id, since: j.started_at, href: '#/jobs/' + encodeURIComponent(j.id) });
    for (const s of sess.sessions || []) onLane.set(`${s.worker_id}/${laneIndex(s.lane)}`, { kind: 'session', id: s.id, since: s.created_at, href: '#/sessions/' + encodeURIComponent(s.id) });
    const rings = hist.workers || {};
    fill(table, 
      h('tr', {}, ['worker', 'state', 'status', 'hub', 'slots', 'lanes', 'CPU', 'memory', 'disk', 'last heartbeat', ''].map((c) => h('th', {}, c))),
      ws.workers.map((w) => {
        const ring = rings[w.id] || [];
        const spark = (k, color) => sparkline(ring.map((b) => b[k]), color, `${k}: ${ring.length} heartbeats`);
        const lanes = (w.lanes || []).map((l) => {
          const what = onLane.get(`${w.id}/${l.lane}`);
          return h('span', { class: 'lane', 'data-lane': l.lane }, `#${l.lane} `, badge(l.state || '?'),
            what ? [' ', h('a', { href: what.href, class: 'mono' }, `${what.kind} ${what.id}`), ' ', h('span', { class: 'muted' }, what.since ? 'since ' + ago(what.since) : '')] : '');
        });
        const patch = (status) => async () => {
          try { await api('/workers/' + encodeURIComponent(w.id), { method: 'PATCH', body: { status } }); flash(`${w.id}: ${status}`); await refresh(); }
          catch (e) { flash(`${w.id}: ${e.message}`); }
        };
        return h('tr', { class: w.alive ? '' : 'dead', 'data-worker': w.id },
          h('td', { class: 'mono' }, w.id, w.version ? h('div', { class: 'muted' }, w.version) : ''),
          h('td', {}, badge(w.alive ? 'alive' : 'dead')),
          h('td', { 'data-testid': 'worker-status' }, badge(w.status)),
          h('td', { class: 'mono' }, w.hub || ''),
          h('td', { class: 'num' }, `${w.in_flight}/${w.max_concurrent}`),
          h('td', {}, h('div', { class: 'lanes' }, lanes.length ? lanes : h('span', { class: 'muted' }, 'no lanes'))),
          h('td', {}, pct(w.cpu_pct), ' ', spark('cpu_pct', '#1d4ed8')),
          h('td', {}, pct(w.mem_pct), ' ', spark('mem_pct', '#7c3aed')),
          h('td', {}, pct(w.disk_pct), ' ', spark('disk_pct', '#a16207')),
          h('td', {}, when(w.last_seen)),
          h('td', {},
            h('button', { class: 'small', 'data-action': 'drain', disabled: w.status === 'drain', onclick: patch('drain') }, 'Drain'), ' ',
            h('button', { class: 'small', 'data-action': 'standby', disabled: w.status === 'standby', onclick: patch('standby') }, 'Standby'), ' ',
            h('button', { class: 'small', 'data-action': 'active', disabled: w.status === 'active', onclick: patch('active') }, 'Activate')));
      }),
      ws.workers.length ? null : h('tr', {}, h('td', { colspan: 11, class: 'muted' }, 'No workers known.')));
  }
  await refresh();
  return { refresh };
}
