// Shared helpers: the API client (token kept in sessionStorage, asked once
// on a 401), DOM building and human-readable formatting.

const TOKEN_KEY = 'paprika.token';

export function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }

let asking = null; // one prompt for all the requests that got a 401

function askToken(message) {
  if (asking) return asking;
  asking = new Promise((resolve) => {
    const box = document.getElementById('tokenbox');
    const input = document.getElementById('tokeninput');
    const err = document.getElementById('tokenerr');
    err.textContent = message || '';
    box.hidden = false;
    input.value = '';
    input.focus();
    const done = () => {
      if (!input.value) return;
      sessionStorage.setItem(TOKEN_KEY, input.value.trim());
      box.hidden = true;
      document.getElementById('tokenok').onclick = null;
      input.onkeydown = null;
      document.getElementById('forget').hidden = false;
      asking = null;
      resolve();
    };
    document.getElementById('tokenok').onclick = done;
    input.onkeydown = (e) => { if (e.key === 'Enter') done(); };
  });
  return asking;
}

/** ApiError carries the hub's error shape {"error":{"code","message"}}. */
export class ApiError extends Error {
  constructor(status, code, message) { super(message); this.status = status; this.code = code; }
}

/** api calls the hub's JSON API; a 401 asks for the token and retries. */
export async function api(path, { method = 'GET', body, raw = false } = {}) {
  for (let tries = 0; ; tries++) {
    const headers = {};
    const t = token();
    if (t) headers.Authorization = 'Bearer ' + t;
    let payload;
    if (body !== undefined) { headers['Content-Type'] = 'application/json'; payload = JSON.stringify(body); }
    const r = await fetch(path, { method, headers, body: payload, cache: 'no-store' });
    if (r.status === 401 && tries < 5) {
      if (t) sessionStorage.removeItem(TOKEN_KEY);
      await askToken(t ? 'That token was refused.' : '');
      continue;
    }
    if (!r.ok) {
      let code = 'http_' + r.status, msg = r.statusText;
      try { const e = (await r.json()).error; if (e) { code = e.code; msg = e.message; } } catch { /* not JSON */ }
      throw new ApiError(r.status, code, msg);
    }
    if (raw) return r;
    if (r.status === 204) return null;
    return r.json();
  }
}

/** withToken adds ?token= for the routes a browser cannot send headers to. */
export function withToken(url) {
  const t = token();
  if (!t) return url;
  return url + (url.includes('?') ? '&' : '?') + 'token=' + encodeURIComponent(t);
}

export function wsURL(path) {
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return withToken(proto + '//' + location.host + path);
}

/** h builds an element: h('td', {class: 'x', onclick: f}, 'text', child). */
export function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const k of kids.flat(Infinity)) {
    if (k === undefined || k === null || k === false) continue;
    el.append(k instanceof Node ? k : String(k));
  }
  return el;
}

export function badge(v, cls) { return h('span', { class: 'badge ' + (cls || v) }, v); }

const isZero = (t) => !t || t.startsWith('0001-');

/** ago is "12 s ago" / "in 5 s" for an ISO time; "" for none. */
export function ago(iso, now = Date.now()) {
  if (isZero(iso)) return '';
  const d = (now - Date.parse(iso)) / 1000;
  return d >= 0 ? dur(d) + ' ago' : 'in ' + dur(-d);
}

/** dur is a duration in seconds as "850 ms", "12 s", "3 min 4 s", "2 h 5 min". */
export function dur(s) {
  if (s === undefined || s === null || isNaN(s)) return '';
  if (s < 1) return Math.round(s * 1000) + ' ms';
  if (s < 60) return (s < 10 ? s.toFixed(1) : Math.round(s)) + ' s';
  if (s < 3600) return Math.floor(s / 60) + ' min ' + Math.round(s % 60) + ' s';
  if (s < 86400) return Math.floor(s / 3600) + ' h ' + Math.round((s % 3600) / 60) + ' min';
  return Math.floor(s / 86400) + ' d ' + Math.round((s % 86400) / 3600) + ' h';
}

/** span is the duration between two ISO times (the second defaults to now). */
export function span(from, to) {
  if (isZero(from)) return '';
  const end = isZero(to) ? Date.now() : Date.parse(to);
  return dur((end - Date.parse(from)) / 1000);
}

/** when is a relative time with the absolute one as its tooltip. */
export function when(iso) {
  if (isZero(iso)) return h('span', { class: 'muted' }, '—');
  return h('time', { datetime: iso, title: new Date(iso).toLocaleString() }, ago(iso));
}

export function pct(v) {
  const n = Number(v) || 0;
  return h('span', { title: n.toFixed(1) + ' %' },
    h('span', { class: 'bar' }, barFill(n)), ' ', Math.round(n) + '%');
}

function barFill(n) {
  const i = h('i', { class: n >= 90 ? 'hot' : '' });
  i.style.width = Math.min(100, Math.max(0, n)) + '%'; // CSSOM: allowed by the CSP
  return i;
}

/** laneIndex reads "chromium://w1/lane/2" (or "2") as 2. */
export function laneIndex(lane) {
  if (lane === undefined || lane === null || lane === '') return null;
  const m = String(lane).match(/(\d+)$/);
  return m ? Number(m[1]) : null;
}

export function flash(msg) {
  let el = document.getElementById('flash');
  if (!el) { el = h('div', { id: 'flash' }); document.body.append(el); }
  el.textContent = msg;
  el.hidden = false;
  clearTimeout(flash.t);
  flash.t = setTimeout(() => { el.hidden = true; }, 4000);
}

export function errorBox(e) {
  return h('p', { class: 'bad' }, e instanceof ApiError ? `${e.code}: ${e.message}` : String(e && e.message || e));
}

export const FINAL = ['succeeded', 'failed', 'canceled'];
export const CHROMIUM_MODES = ['fetch', 'macro'];

/** fill replaces el's children with kids, flattening arrays and dropping
 * null, false and undefined (what replaceChildren would print). */
export function fill(el, ...kids) {
  el.replaceChildren(...kids.flat(Infinity).filter((k) => k !== undefined && k !== null && k !== false)
    .map((k) => (k instanceof Node ? k : String(k))));
  return el;
}
