// The live view: frames of a lane's screencast over the hub's WebSocket
// (GET /jobs/{id}/live, GET /sessions/{id}/live), acknowledged after each
// is drawn so a slow viewer gets fewer frames, never a backlog; and the
// replay of a job's recording.ndjson.
import { h, wsURL, api } from './lib.js';

/**
 * liveView returns {el, close}. kind is "jobs" or "sessions"; control
 * (sessions only) offers "take control": mouse and keys go to the lane.
 */
export function liveView(kind, id, { control = false } = {}) {
  const img = h('img', { alt: 'live view', tabindex: 0, 'data-testid': 'live-frame' });
  const state = h('span', { class: 'badge waiting', 'data-testid': 'live-state' }, 'connecting');
  const info = h('span', { class: 'muted' });
  let ws = null, controlling = false, frames = 0, closed = false, w = 0, hgt = 0;
  const toggle = control ? h('button', { class: 'small', onclick: () => { controlling = !controlling; toggle.textContent = controlling ? 'Release control' : 'Take control'; connect(); } }, 'Take control') : null;
  const el = h('div', { class: 'live', 'data-testid': 'live' }, h('div', {}, 'Live view ', state, ' ', info, ' ', toggle), img);

  function setState(s, reason) {
    state.textContent = s + (reason ? ': ' + reason : '');
    state.className = 'badge ' + s;
  }

  function connect() {
    if (ws) { ws.onclose = null; ws.close(); }
    img.classList.toggle('control', controlling);
    ws = new WebSocket(wsURL(`/${kind}/${encodeURIComponent(id)}/live${controlling ? '?control=1' : ''}`));
    let opened = false;
    ws.onopen = () => { opened = true; setState('waiting'); };
    ws.onmessage = (ev) => {
      let m;
      try { m = JSON.parse(ev.data); } catch { return; }
      if (m.type === 'status') setState(m.state, m.reason);
      if (m.type === 'frame') {
        const seq = m.seq;
        w = m.width; hgt = m.height;
        img.onload = () => {
          frames++;
          info.textContent = `${w}×${hgt} · frame ${frames}`;
          img.dataset.frames = String(frames);
          if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: 'ack', seq }));
        };
        img.src = `data:image/${m.format || 'jpeg'};base64,${m.data}`;
        if (state.textContent === 'waiting' || state.textContent === 'connecting') setState('live');
      }
    };
    ws.onclose = () => {
      if (closed) return;
      if (!opened) setState('ended', 'no live view here (the hub has no live relay, or the lane is gone)');
      else if (!state.classList.contains('ended')) setState('ended', 'connection closed');
    };
  }

  function send(m) { if (controlling && ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(m)); }
  function point(e) {
    const r = img.getBoundingClientRect();
    return { x: Math.round((e.clientX - r.left) * (w || r.width) / r.width), y: Math.round((e.clientY - r.top) * (hgt || r.height) / r.height) };
  }
  const mods = (e) => (e.altKey ? 1 : 0) | (e.ctrlKey ? 2 : 0) | (e.metaKey ? 4 : 0) | (e.shiftKey ? 8 : 0);
  const buttons = ['left', 'middle', 'right'];
  if (control) {
    img.addEventListener('mousedown', (e) => { if (!controlling) return; e.preventDefault(); img.focus(); send({ type: 'mouse', event: { type: 'mousePressed', ...point(e), button: buttons[e.button] || 'left', clickCount: e.detail || 1, modifiers: mods(e) } }); });
    img.addEventListener('mouseup', (e) => { if (!controlling) return; send({ type: 'mouse', event: { type: 'mouseReleased', ...point(e), button: buttons[e.button] || 'left', clickCount: e.detail || 1, modifiers: mods(e) } }); });
    let last = 0;
    img.addEventListener('mousemove', (e) => { if (!controlling || Date.now() - last < 50) return; last = Date.now(); send({ type: 'mouse', event: { type: 'mouseMoved', ...point(e), modifiers: mods(e) } }); });
    img.addEventListener('wheel', (e) => { if (!controlling) return; e.preventDefault(); send({ type: 'mouse', event: { type: 'mouseWheel', ...point(e), deltaX: e.deltaX, deltaY: e.deltaY } }); }, { passive: false });
    img.addEventListener('contextmenu', (e) => { if (controlling) e.preventDefault(); });
    img.addEventListener('keydown', (e) => {
      if (!controlling) return;
      e.preventDefault();
      const ev = { type: e.key.length === 1 ? 'keyDown' : 'rawKeyDown', key: e.key, code: e.code, modifiers: mods(e), windowsVirtualKeyCode: e.keyCode };
      if (e.key.length === 1) ev.text = e.key;
      if (e.key === 'Enter') { ev.type = 'keyDown'; ev.text = '\r'; }
      send({ type: 'key', event: ev });
    });
    img.addEventListener('keyup', (e) => { if (!controlling) return; e.preventDefault(); send({ type: 'key', event: { type: 'keyUp', key: e.key, code: e.code, modifiers: mods(e), windowsVirtualKeyCode: e.keyCode } }); });
  }
  connect();
  return { el, close() { closed = true; if (ws) ws.close(); } };
}

/** replay plays a job's recording.ndjson ({t, w, h, data} per line). */
export function replay(jobId, name = 'recording.ndjson') {
  const img = h('img', { alt: 'recording', 'data-testid': 'replay-frame' });
  const pos = h('input', { type: 'range', min: 0, max: 0, value: 0 });
  const label = h('span', { class: 'muted' }, 'loading…');
  let frames = [], timer = null, i = 0;
  const show = (k) => {
    i = k; pos.value = String(k);
    const f = frames[k];
    if (!f) return;
    img.src = 'data:image/jpeg;base64,' + f.data;
    label.textContent = `frame ${k + 1}/${frames.length} · ${((f.t - frames[0].t) / 1000).toFixed(1)} s · ${f.w}×${f.h}`;
  };
  const stop = () => { clearTimeout(timer); timer = null; play.textContent = 'Play'; };
  const step = () => {
    if (i + 1 >= frames.length) { stop(); return; }
    const wait = Math.min(2000, Math.max(10, frames[i + 1].t - frames[i].t));
    timer = setTimeout(() => { show(i + 1); step(); }, wait);
  };
  const play = h('button', { class: 'small', onclick: () => { if (timer) { stop(); return; } if (i + 1 >= frames.length) show(0); play.textContent = 'Pause'; step(); } }, 'Play');
  pos.addEventListener('input', () => { stop(); show(Number(pos.value)); });
  const el = h('div', { class: 'live' }, h('div', {}, 'Recording ', play, ' ', pos, ' ', label), img);
  (async () => {
    try {
      const r = await api(`/jobs/${encodeURIComponent(jobId)}/assets/${encodeURIComponent(name)}`, { raw: true });
      const text = await r.text();
      frames = text.split('\n').filter(Boolean).map((l) => { try { return JSON.parse(l); } catch { return null; } }).filter((f) => f && f.data);
      pos.max = String(Math.max(0, frames.length - 1));
      if (frames.length) show(0); else label.textContent = 'no frames';
    } catch (e) { label.textContent = 'cannot load: ' + e.message; }
  })();
  return { el, close: stop };
}
