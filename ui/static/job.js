// Job page: what was asked (params, labels), what happened (attempt
// timeline, the log followed live over SSE with attempt markers, result,
// assets), what can be done (cancel, run again), and the lane's live
// view while a chromium job runs, or its recording afterwards.
import { api, h, badge, when, span, withToken, errorBox, flash, ApiError, FINAL, CHROMIUM_MODES, fill } from './lib.js';
import { liveView, replay } from './live.js';

const RECORDING = 'recording.ndjson';

/** attempts is the timeline: attempts_log when the hub keeps one, else
 * the job's own fields (its current attempt only). */
export function attempts(j) {
  if (Array.isArray(j.attempts_log) && j.attempts_log.length) return j.attempts_log;
  if (!j.attempts && j.status === 'queued') return [];
  return [{ attempt: j.attempts || 1, worker_id: j.worker_id, lane: j.lane, queued_at: j.created_at,
    started_at: j.started_at, finished_at: j.finished_at, status: j.status, reason: j.reason, error: j.error }];
}

export async function render(main, id) {
  let j = await api('/jobs/' + encodeURIComponent(id));
  const head = h('div');
  const timeline = h('ol', { class: 'timeline', 'data-testid': 'timeline' });
  const logBox = h('pre', { class: 'log', 'data-testid': 'log' });
  const logState = h('span', { class: 'muted' });
  const result = h('div');
  const assets = h('div', { class: 'assets', 'data-testid': 'assets' });
  const livePanel = h('div');
  const params = h('pre', {}, JSON.stringify(j.params ?? {}, null, 2));
  const labels = h('div', { class: 'chips' });
  fill(main, head,
    h('div', { class: 'grid2' },
      h('div', {}, h('h2', {}, 'Log ', logState), logBox, livePanel),
      h('div', {}, h('h2', {}, 'Attempts'), timeline, h('h2', {}, 'Params'), params, h('h2', {}, 'Labels'), labels,
        h('h2', {}, 'Result'), result, h('h2', {}, 'Assets'), assets)));

  // The log: SSE with ?token= (EventSource sends no headers). The hub
  // ends it with "event: done"; a dropped stream resumes by Last-Event-ID.
  let es = null, lastAttempt = 0;
  const marker = (a) => {
    const m = h('span', { class: 'marker' }, `── attempt ${a.attempt}${a.worker_id ? ' on ' + a.worker_id : ''}${a.lane ? ' (' + a.lane + ')' : ''} ──\n`);
    logBox.append(m);
  };
  const follow = () => {
    es = new EventSource(withToken(`/jobs/${encodeURIComponent(id)}/logs?follow=1`));
    logState.textContent = 'following';
    es.onmessage = (ev) => {
      const stick = logBox.scrollTop + logBox.clientHeight >= logBox.scrollHeight - 4;
      logBox.append(ev.data + '\n');
      if (stick) logBox.scrollTop = logBox.scrollHeight;
    };
    es.addEventListener('done', () => { logState.textContent = 'complete'; es.close(); });
    es.onerror = () => { if (es.readyState === EventSource.CLOSED) logState.textContent = 'disconnected'; };
  };

  let live = null, rec = null;
  const assetViews = new Map(); // name -> element, built once (images fetched once)

  function draw() {
    const final = FINAL.includes(j.status);
    const cancel = h('button', { class: 'danger', 'data-testid': 'cancel', disabled: final, onclick: doCancel }, 'Cancel');
    const again = h('button', { 'data-testid': 'run-again', disabled: !final, onclick: runAgain }, 'Run again');
    fill(head, 
      h('h1', {}, 'Job ', h('span', { class: 'mono' }, j.id), ' ', badge(j.status)),
      h('div', { class: 'toolbar' }, cancel, again, h('a', { href: '#/jobs' }, '← all jobs')),
      h('dl', { class: 'kv' },
        h('dt', {}, 'mode'), h('dd', {}, j.mode),
        h('dt', {}, 'reason'), h('dd', {}, j.reason ? badge(j.reason, 'failed') : '—', j.error ? h('span', { class: 'bad' }, ' ' + j.error) : ''),
        h('dt', {}, 'worker / lane'), h('dd', {}, j.worker_id || '—', j.lane ? ' · ' + j.lane : ''),
        h('dt', {}, 'created'), h('dd', {}, when(j.created_at)),
        j.run_at ? [h('dt', {}, 'next attempt'), h('dd', {}, when(j.run_at))] : null,
        h('dt', {}, 'started'), h('dd', {}, when(j.started_at)),
        h('dt', {}, 'finished'), h('dd', {}, when(j.finished_at)),
        h('dt', {}, 'duration'), h('dd', {}, span(j.started_at, j.finished_at) || '—'),
        h('dt', {}, 'attempts'), h('dd', {}, `${j.attempts} of ${j.max_attempts}`),
        j.waiting_for ? [h('dt', {}, 'waiting for'), h('dd', { class: 'bad' }, j.waiting_for)] : null));
    fill(labels, ...(Object.entries(j.labels || {}).map(([k, v]) => h('span', {}, `${k}=${v}`))));
    if (!labels.childNodes.length) labels.append(h('span', { class: 'muted' }, 'none'));
    const as = attempts(j);
    fill(timeline, ...(as.length ? as.map((a) => h('li', { class: a.status || '' },
      h('strong', {}, `Attempt ${a.attempt}`), ' ', a.status ? badge(a.status) : '', a.reason ? [' ', badge(a.reason, 'failed')] : '',
      h('div', { class: 'muted' }, `worker ${a.worker_id || '—'} · lane ${a.lane || '—'}${a.hub ? ' · hub ' + a.hub : ''}`),
      h('div', {}, 'queued ', when(a.queued_at), ' · started ', when(a.started_at), ' · finished ', when(a.finished_at),
        a.started_at ? ` · ran ${span(a.started_at, a.finished_at)}` : ''),
      a.error ? h('div', { class: 'bad' }, a.error) : null)) : [h('li', { class: 'muted' }, 'not started yet')]));
    const newest = as[as.length - 1];
    if (newest && newest.attempt > lastAttempt && newest.started_at && !newest.started_at.startsWith('0001')) {
      lastAttempt = newest.attempt;
      marker(newest);
    }
    fill(result, j.result !== undefined && j.result !== null ? h('pre', { 'data-testid': 'result' }, JSON.stringify(j.result, null, 2)) : h('span', { class: 'muted' }, final ? 'none' : 'not yet'));
    drawAssets();
    const liveable = j.status === 'running' && CHROMIUM_MODES.includes(j.mode);
    if (liveable && !live) { live = liveView('jobs', j.id); fill(livePanel, h('h2', {}, 'Live view'), live.el); }
    if (!liveable && live) { live.close(); live = null; fill(livePanel, ); }
    if ((j.assets || []).includes(RECORDING) && !rec && !live) { rec = replay(j.id, RECORDING); fill(livePanel, h('h2', {}, 'Replay'), rec.el); }
  }

  function drawAssets() {
    const names = j.assets || [];
    if (!names.length) { fill(assets, h('span', { class: 'muted' }, 'none')); assetViews.clear(); return; }
    for (const n of names) if (!assetViews.has(n)) assetViews.set(n, assetView(n));
    fill(assets, ...names.map((n) => assetViews.get(n)));
  }

  function assetView(name) {
    const path = `/jobs/${encodeURIComponent(id)}/assets/${name.split('/').map(encodeURIComponent).join('/')}`;
    // Fetched with the token, shown from a blob: URL: an <img> or a link
    // cannot send the Authorization header.
    const dl = h('a', { href: '#', onclick: async (e) => {
      e.preventDefault();
      try {
        const r = await api(path, { raw: true });
        const url = URL.createObjectURL(await r.blob());
        const a = h('a', { href: url, download: name.split('/').pop() });
        document.body.append(a); a.click(); a.remove();
        setTimeout(() => URL.revokeObjectURL(url), 10000);
      } catch (err) { flash(err.message); }
    } }, 'download');
    const box = h('div', {}, h('span', { class: 'mono' }, name), ' ', dl);
    if (/\.(png|jpe?g|gif|webp)$/i.test(name)) {
      const img = h('img', { alt: name, 'data-testid': 'asset-image' });
      box.append(img);
      api(path, { raw: true }).then(async (r) => { img.src = URL.createObjectURL(await r.blob()); }).catch((e) => box.append(errorBox(e)));
    }
    return box;
  }

  async function doCancel() {
    try { j = await api(`/jobs/${encodeURIComponent(id)}/cancel`, { method: 'POST', body: {} }); draw(); flash('cancel asked'); }
    catch (e) { flash(e.message); }
  }

  async function runAgain() {
    try {
      // A failed job: POST /jobs/{id}/retry where the hub has it (the
      // same job, queued again). Otherwise, or when the hub has no retry
      // route, the same request submitted as a new job (params as the
      // hub shows them).
      let n;
      try {
        if (j.status !== 'failed') throw new ApiError(409, 'not_failed', 'not failed');
        n = await api(`/jobs/${encodeURIComponent(id)}/retry`, { method: 'POST', body: {} });
      } catch (e) {
        const noRetry = e instanceof ApiError && ((e.status === 404 && e.code === 'no_route') || e.status === 409);
        if (!noRetry) throw e;
        n = await api('/jobs', { method: 'POST', body: { mode: j.mode, params: j.params, labels: j.labels, timeout_s: j.timeout_s, max_attempts: j.max_attempts, priority: j.priority } });
      }
      location.hash = '#/jobs/' + encodeURIComponent(n.id);
      if (n.id === j.id) { j = n; draw(); }
    } catch (e) { flash(e.message); }
  }

  draw();
  follow();
  return {
    interval: 2000,
    async refresh() {
      if (FINAL.includes(j.status) && logState.textContent === 'complete') return;
      j = await api('/jobs/' + encodeURIComponent(id));
      draw();
    },
    close() { if (es) es.close(); if (live) live.close(); if (rec) rec.close(); },
  };
}
