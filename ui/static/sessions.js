// Sessions: the open sessions, and one session's page with its live view
// ("take control" forwards mouse and keys) and a close button.
import { api, h, badge, when, flash, errorBox, fill } from './lib.js';
import { liveView } from './live.js';

export async function render(main, params, id) {
  return id ? one(main, id) : list(main);
}

async function list(main) {
  const table = h('table', { 'data-testid': 'sessions-table' });
  fill(main, h('h1', {}, 'Sessions'), table);
  async function refresh() {
    const res = await api('/sessions');
    const ss = res.sessions || [];
    fill(table, 
      h('tr', {}, ['session', 'status', 'worker', 'lane', 'labels', 'opened', 'last used', ''].map((c) => h('th', {}, c))),
      ss.map((s) => h('tr', { 'data-session': s.id },
        h('td', { class: 'mono' }, h('a', { href: '#/sessions/' + encodeURIComponent(s.id) }, s.id)),
        h('td', {}, badge(s.status || s.state || '?')),
        h('td', {}, s.worker_id || ''), h('td', { class: 'mono' }, s.lane || ''),
        h('td', { class: 'chips' }, Object.entries(s.labels || {}).map(([k, v]) => h('span', {}, `${k}=${v}`))),
        h('td', {}, when(s.created_at)), h('td', {}, when(s.last_used)),
        h('td', {}, h('button', { class: 'small danger', onclick: () => close(s.id, refresh) }, 'Close')))),
      ss.length ? null : h('tr', {}, h('td', { colspan: 8, class: 'muted' }, 'No open sessions.')));
  }
  await refresh();
  return { refresh };
}

async function close(id, then) {
  if (!confirm(`Close session ${id}? Its lane is freed.`)) return;
  try { await api('/sessions/' + encodeURIComponent(id), { method: 'DELETE', body: {} }); flash('session closed'); await then(); }
  catch (e) { flash(e.message); }
}

async function one(main, id) {
  const info = h('div');
  const live = liveView('sessions', id, { control: true });
  fill(main, info, live.el);
  async function refresh() {
    try {
      const s = await api('/sessions/' + encodeURIComponent(id));
      fill(info, 
        h('h1', {}, 'Session ', h('span', { class: 'mono' }, s.id), ' ', badge(s.status || s.state || '?')),
        h('div', { class: 'toolbar' }, h('button', { class: 'danger', onclick: () => close(id, () => { location.hash = '#/sessions'; }) }, 'Close session'),
          h('a', { href: '#/sessions' }, '← all sessions')),
        h('p', { class: 'muted' }, `worker ${s.worker_id || '—'} · lane ${s.lane || '—'} · opened `, when(s.created_at), ' · last used ', when(s.last_used)));
    } catch (e) { fill(info, errorBox(e)); }
  }
  await refresh();
  return { refresh, close: () => live.close() };
}
