// Hubs: alive and recently dead (a dead hub stays listed until its
// registry entry expires, cluster.hub_ttl), uptime, workers held.
import { api, h, badge, when, span, fill } from './lib.js';

export async function render(main) {
  const table = h('table', { 'data-testid': 'hubs-table' });
  fill(main, h('h1', {}, 'Hubs'), table,
    h('p', { class: 'muted' }, 'A hub that stops beating turns dead here at once and stays listed until its entry expires (cluster.hub_ttl).'));
  async function refresh() {
    const [hs, ws] = await Promise.all([api('/hubs'), api('/workers').catch(() => ({ workers: [] }))]);
    const held = {};
    for (const w of ws.workers) if (w.alive && w.hub) held[w.hub] = (held[w.hub] || 0) + 1;
    const rows = [...hs.hubs].sort((a, b) => (b.alive - a.alive) || a.id.localeCompare(b.id));
    fill(table, 
      h('tr', {}, ['hub', 'state', 'address', 'uptime', 'last beat', 'workers', ''].map((c) => h('th', {}, c))),
      rows.map((x) => h('tr', { class: x.alive ? '' : 'dead', 'data-hub': x.id },
        h('td', { class: 'mono' }, x.id),
        h('td', { 'data-testid': 'hub-state' }, badge(x.alive ? 'alive' : 'dead')),
        h('td', { class: 'mono' }, x.address),
        h('td', {}, x.alive ? span(x.started_at) : h('span', { class: 'muted' }, 'was up ' + span(x.started_at, x.last_seen))),
        h('td', {}, when(x.last_seen)),
        h('td', { class: 'num' }, String(held[x.id] || 0)),
        h('td', {}, x.local ? badge('this hub', 'active') : ''))));
  }
  await refresh();
  return { refresh };
}
