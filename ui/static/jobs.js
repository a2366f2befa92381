// Jobs: filters (status, mode, worker, label k=v, reason, tenant,
// priority), search by id, cursor paging; each row links to its page.
// Filters the hub does not know yet are also applied to the page here,
// so the table never shows a row the filter excludes.
import { api, h, badge, when, span, ApiError, errorBox, fill } from './lib.js';

const STATUSES = ['', 'queued', 'scheduled', 'running', 'succeeded', 'failed', 'canceled'];
const FILTERS = ['mode', 'worker', 'label', 'reason', 'tenant', 'priority'];

function matches(j, f) {
  if (f.mode && j.mode !== f.mode) return false;
  if (f.worker && j.worker_id !== f.worker) return false;
  if (f.reason && j.reason !== f.reason) return false;
  if (f.tenant && j.tenant !== undefined && j.tenant !== f.tenant) return false;
  if (f.priority && String(j.priority) !== f.priority) return false;
  if (f.label) {
    const [k, v] = f.label.split('=');
    if (!j.labels || !(k in j.labels) || (v !== undefined && j.labels[k] !== v)) return false;
  }
  return true;
}

export async function render(main, params) {
  const f = { status: params.get('status') || '' };
  for (const k of FILTERS) f[k] = params.get(k) || '';
  const cursors = ['']; // cursors[i] opens page i
  let pageNo = 0;

  const status = h('select', { name: 'status', 'data-testid': 'filter-status' }, STATUSES.map((s) => h('option', { value: s, selected: s === f.status }, s || 'any status')));
  const inputs = Object.fromEntries(FILTERS.map((k) => [k, h('input', { name: k, value: f[k], size: k === 'label' ? 14 : 9, placeholder: k === 'label' ? 'key=value' : k, 'data-testid': 'filter-' + k })]));
  const search = h('input', { name: 'id', placeholder: 'job id', size: 22, 'data-testid': 'search-id' });
  const apply = () => {
    const q = new URLSearchParams();
    if (status.value) q.set('status', status.value);
    for (const k of FILTERS) if (inputs[k].value.trim()) q.set(k, inputs[k].value.trim());
    location.hash = '#/jobs' + (q.toString() ? '?' + q : '');
  };
  status.addEventListener('change', apply);
  for (const i of Object.values(inputs)) i.addEventListener('keydown', (e) => { if (e.key === 'Enter') apply(); });
  const msg = h('span', { class: 'muted' });
  search.addEventListener('keydown', async (e) => {
    if (e.key !== 'Enter' || !search.value.trim()) return;
    const id = search.value.trim();
    try { await api('/jobs/' + encodeURIComponent(id)); location.hash = '#/jobs/' + encodeURIComponent(id); }
    catch (err) { msg.textContent = err instanceof ApiError && err.status === 404 ? `no job ${id}` : err.message; }
  });
  const table = h('table', { 'data-testid': 'jobs-table' });
  const prev = h('button', { class: 'small', onclick: () => { if (pageNo > 0) { pageNo--; load(); } } }, '← Newer');
  const next = h('button', { class: 'small', onclick: () => { if (cursors[pageNo + 1]) { pageNo++; load(); } } }, 'Older →');
  const where = h('span', { class: 'muted' });
  fill(main, h('h1', {}, 'Jobs'),
    h('div', { class: 'filters' }, h('label', {}, 'Status'), status, FILTERS.map((k) => [h('label', {}, k), inputs[k]]),
      h('button', { class: 'small', onclick: apply }, 'Filter'), h('span', {}, ' '), search, msg),
    table, h('div', { class: 'pager' }, prev, next, where));

  async function load() {
    const q = new URLSearchParams({ limit: '50' });
    if (f.status) q.set('status', f.status);
    for (const k of FILTERS) if (f[k]) q.set(k, f[k]);
    if (cursors[pageNo]) q.set('cursor', cursors[pageNo]);
    let res;
    try { res = await api('/jobs?' + q); }
    catch (e) { fill(table, h('tr', {}, h('td', {}, errorBox(e)))); return; }
    cursors[pageNo + 1] = res.next_cursor || '';
    const rows = res.jobs.filter((j) => matches(j, f));
    fill(table, 
      h('tr', {}, ['id', 'mode', 'status', 'reason', 'worker', 'attempts', 'labels', 'created', 'duration'].map((c) => h('th', {}, c))),
      rows.map((j) => h('tr', { 'data-job': j.id },
        h('td', { class: 'mono' }, h('a', { href: '#/jobs/' + encodeURIComponent(j.id) }, j.id)),
        h('td', {}, j.mode),
        h('td', {}, badge(j.status)),
        h('td', {}, j.reason || ''),
        h('td', {}, j.worker_id ? h('a', { href: '#/jobs?worker=' + encodeURIComponent(j.worker_id) }, j.worker_id) : ''),
        h('td', { class: 'num' }, `${j.attempts}/${j.max_attempts}`),
        h('td', { class: 'chips' }, Object.entries(j.labels || {}).map(([k, v]) => h('span', {}, `${k}=${v}`))),
        h('td', {}, when(j.created_at)),
        h('td', {}, span(j.started_at, j.finished_at)))),
      rows.length ? null : h('tr', {}, h('td', { colspan: 9, class: 'muted' }, 'No jobs match.')));
    prev.disabled = pageNo === 0;
    next.disabled = !cursors[pageNo + 1];
    where.textContent = `page ${pageNo + 1} · ${rows.length} shown`;
  }
  await load();
  return { refresh: load };
}
