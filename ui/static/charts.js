// Small SVG charts drawn with the DOM (no library, nothing inline for the
// CSP to refuse).

const NS = 'http://www.w3.org/2000/svg';

function s(tag, attrs) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  return el;
}

/**
 * lineChart draws series [{name, color, values:[number]}] over times
 * (ms), with the last value of each in the legend.
 */
export function lineChart(title, times, series, { stacked = false } = {}) {
  const W = 400, H = 120, P = 22;
  const svg = s('svg', { class: 'chart', viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', role: 'img', 'aria-label': title });
  let max = 1;
  for (const se of series) for (const v of se.values) max = Math.max(max, v);
  if (stacked) max = Math.max(1, ...times.map((_, i) => series.reduce((a, se) => a + (se.values[i] || 0), 0)));
  const t0 = times.length ? times[0] : 0, t1 = times.length ? times[times.length - 1] : 1;
  const x = (t) => P + (t1 === t0 ? W - 2 * P : ((t - t0) / (t1 - t0)) * (W - 2 * P));
  const y = (v) => H - P + 4 - (v / max) * (H - P - 8);
  svg.append(s('line', { x1: P, x2: W - P, y1: y(0), y2: y(0), stroke: '#d1d5db' }));
  const top = s('text', { x: 2, y: 12, 'font-size': 10, fill: '#6b7280' });
  top.textContent = String(Math.round(max));
  svg.append(top);
  const base = new Array(times.length).fill(0);
  for (const se of series) {
    const pts = times.map((t, i) => {
      const v = (se.values[i] || 0) + (stacked ? base[i] : 0);
      if (stacked) base[i] = v;
      return `${x(t).toFixed(1)},${y(v).toFixed(1)}`;
    });
    if (pts.length === 1) pts.push(pts[0].replace(/^[^,]+/, String(W - P)));
    svg.append(s('polyline', { points: pts.join(' '), fill: 'none', stroke: se.color, 'stroke-width': 1.8, 'vector-effect': 'non-scaling-stroke' }));
  }
  const box = document.createElement('div');
  box.className = 'card';
  const head = document.createElement('div');
  head.className = 'label';
  head.textContent = title + ' — ' + series.map((se) => `${se.name} ${fmt(se.values[se.values.length - 1])}`).join(', ');
  box.append(head, svg);
  if (times.length) {
    const foot = document.createElement('div');
    foot.className = 'label';
    foot.textContent = `last ${Math.max(1, Math.round((t1 - t0) / 60000))} min`;
    box.append(foot);
  }
  return box;
}

function fmt(v) { return v === undefined ? '–' : (Number.isInteger(v) ? String(v) : v.toFixed(1)); }

/** sparkline is a tiny line of values in 0..100 (a worker's CPU, say). */
export function sparkline(values, color = '#1d4ed8', title = '') {
  const W = 90, H = 22;
  const svg = s('svg', { class: 'spark', viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none' });
  if (title) { const t = s('title'); t.textContent = title; svg.append(t); }
  if (values.length) {
    const step = values.length > 1 ? W / (values.length - 1) : 0;
    const pts = values.map((v, i) => `${(i * step).toFixed(1)},${(H - 1 - (Math.min(100, v) / 100) * (H - 2)).toFixed(1)}`);
    if (pts.length === 1) pts.push(`${W},${pts[0].split(',')[1]}`);
    svg.append(s('polyline', { points: pts.join(' '), fill: 'none', stroke: color, 'stroke-width': 1.5 }));
  }
  return svg;
}
