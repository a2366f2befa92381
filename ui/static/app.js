// The console's router: the URL fragment names the page (#/jobs,
// #/jobs/ID, …); each page module renders into <main> and may return
// {refresh, close}; refresh runs every few seconds while the page shows.
import { h, errorBox, token, fill } from './lib.js';
import * as overview from './overview.js';
import * as jobs from './jobs.js';
import * as job from './job.js';
import * as workers from './workers.js';
import * as hubs from './hubs.js';
import * as sessions from './sessions.js';

const REFRESH_MS = 3000;
let current = null, timer = null, generation = 0;

function route() {
  const [path, query] = (location.hash.replace(/^#/, '') || '/overview').split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  const params = new URLSearchParams(query || '');
  switch (parts[0]) {
    case 'jobs': return parts[1] ? { page: 'jobs', mod: job, args: [parts[1], params] } : { page: 'jobs', mod: jobs, args: [params] };
    case 'workers': return { page: 'workers', mod: workers, args: [params] };
    case 'hubs': return { page: 'hubs', mod: hubs, args: [params] };
    case 'sessions': return parts[1] ? { page: 'sessions', mod: sessions, args: [params, parts[1]] } : { page: 'sessions', mod: sessions, args: [params] };
    default: return { page: 'overview', mod: overview, args: [params] };
  }
}

async function show() {
  const gen = ++generation;
  clearInterval(timer);
  if (current && current.close) current.close();
  current = null;
  const r = route();
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.dataset.page === r.page);
  const main = document.getElementById('main');
  fill(main, h('p', { class: 'muted' }, 'Loading…'));
  try {
    const page = (await r.mod.render(main, ...r.args)) || {};
    if (gen !== generation) { if (page.close) page.close(); return; }
    current = page;
    main.dataset.ready = r.page; // tests and timing wait on this
    if (page.refresh) {
      timer = setInterval(async () => {
        try { await page.refresh(); document.getElementById('conn').textContent = 'updated ' + new Date().toLocaleTimeString(); }
        catch (e) { document.getElementById('conn').textContent = 'refresh failed: ' + e.message; }
      }, page.interval || REFRESH_MS);
    }
  } catch (e) {
    if (gen === generation) fill(main, errorBox(e));
  }
}

document.getElementById('forget').hidden = !token();
document.getElementById('forget').addEventListener('click', () => { sessionStorage.clear(); location.reload(); });
window.addEventListener('hashchange', show);
show();
